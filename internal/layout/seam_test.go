package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sqlCalls are the pgx methods that run SQL text.
var sqlCalls = map[string]bool{"Query": true, "QueryRow": true, "Exec": true, "SendBatch": true, "CopyFrom": true, "Prepare": true}

// sqlText matches a string literal that reads as a SQL statement or a call of a streamseal
// function.
var sqlText = regexp.MustCompile(`(?is)^\s*(` +
	`select\s.*\b(from|streamseal\.)|insert\s+into\s|update\s+\S+\s+set\s|delete\s+from\s|with\s+\w+\s+as\s*\(|` +
	`listen\s+\w+\s*$|notify\s+\w+|create\s+(table|index|function|role)\s|alter\s+table\s|drop\s+(table|function)\s|` +
	`(grant|revoke)\s+\w+\s+on\s)|streamseal\.[a-z_]+\(`)

// doorExempt are the product directories allowed to hold SQL: the door itself, and migrate,
// which hands tern and River their migrations.
var doorExempt = map[string]bool{"controlplane/store": true, "controlplane/migrate": true}

// TestStoreIsTheOneDoor: every statement the product runs is a named function in
// controlplane/store ("SQL owns the rules, store is the only door"). No other product package
// (controlplane/..., cmd/...) calls Query, QueryRow, Exec, SendBatch, CopyFrom or Prepare, or
// holds a string literal that reads as SQL. Tests and tooling under internal/ may.
func TestStoreIsTheOneDoor(t *testing.T) {
	root := moduleRoot(t)
	var checked int
	for _, top := range []string{"controlplane", "cmd", "feed"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if d.IsDir() {
				if doorExempt[filepath.ToSlash(rel)] {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			checked++
			for _, problem := range sqlOutsideTheDoor(t, path) {
				t.Errorf("%s: %s", rel, problem)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d product files: the walk is broken", checked)
	}
}

// sqlOutsideTheDoor lists the SQL calls and SQL text in one Go file, with their lines.
func sqlOutsideTheDoor(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	var problems []string
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sqlCalls[sel.Sel.Name] {
				problems = append(problems, fset.Position(n.Pos()).String()+": calls "+sel.Sel.Name+": put the statement in controlplane/store")
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			text, err := strconv.Unquote(n.Value)
			if err == nil && sqlText.MatchString(text) {
				problems = append(problems, fset.Position(n.Pos()).String()+": SQL text "+strconv.Quote(firstLine(text))+": put it in controlplane/store")
			}
		}
		return true
	})
	return problems
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// moduleRoot is the directory holding go.mod (tests run in their package's directory).
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
