package demo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/streamseal/streamseal/controlplane/demo"
	"github.com/streamseal/streamseal/controlplane/scratchdb"
	"github.com/streamseal/streamseal/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// The main job, end to end (invariants 1, 3, 4): the demo's loss is detected, named, repaired,
// audited, and the run ends with a converged verdict.
func TestDemo_EndsConverged(t *testing.T) {
	ctx := context.Background()
	srv, err := dbtest.StartServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	server, err := scratchdb.Open(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	var out bytes.Buffer
	if err := demo.Run(ctx, server, &out); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{"GAP CONFIRMED", "repair requested", "re-delivered", "converged", "rows byte-equal", "seal of orders advanced", "VERDICT converged"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
