// Package layout holds tests of the module's shape: rules about which package may hold what,
// checked on the source tree so a change that breaks them fails `make test`.
package layout

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/streamseal/streamseal"

// goPackage is the part of `go list -json` these tests read.
type goPackage struct {
	ImportPath string
	Deps       []string
}

// listPackages runs `go list -deps=false -json` over patterns.
func listPackages(t *testing.T, patterns ...string) []goPackage {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-json"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", patterns, err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestProductImportsNoTooling: the product packages (controlplane/...) never depend on the
// tooling under internal/ (demo, bench, harness, throwaway clusters), so what `streamseal run`
// ships is only what it needs. The binary itself (cmd/streamseal) dispatches to the demo and
// the benchmarks and is allowed to.
func TestProductImportsNoTooling(t *testing.T) {
	pkgs := listPackages(t, module+"/controlplane/...")
	if len(pkgs) == 0 {
		t.Fatal("go list found no product package")
	}
	for _, p := range pkgs {
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"/internal/") {
				t.Errorf("product package %s depends on tooling %s", p.ImportPath, dep)
			}
		}
	}
}
