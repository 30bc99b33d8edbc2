package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/feedhttp"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/pgcluster"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Invariant 15 for scripts: `streamseal tail` prints the feed as JSON lines, the batch's last
// line carrying the token; --resume with it continues after it; a malformed token exits 1
// naming --resume, never a silent fresh start.
func TestTailPrintsJSONLinesAndRefusesABadResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster, err := pgcluster.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	url := cluster.URL("postgres")
	if r := streamseal(t, nil, "migrate", "--database-url", url); r.code != 0 {
		t.Fatalf("migrate: %d %s", r.code, r.stderr)
	}
	pool, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := store.ServiceNameSet(ctx, pool, "billing"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsIngest(ctx, pool, []store.EventCopy{{EventID: uuid.New(), Origin: "orders", OriginSeq: 1, TypeSeq: 1,
		Tenant: "acme", StreamID: "s", StreamVersion: 1, EventType: "order.placed", Payload: []byte(`{"total":10}`)}}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(binary, "tail", "--database-url", url, "--types", "order.placed")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			lines <- s.Text()
		}
	}()
	var e feedhttp.Event
	line := testrun.Receive(t, "tail's first line", lines)
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	if e.Origin != "orders" || e.OriginSeq != 1 || string(e.Payload) != `{"total":10}` || e.Token == "" {
		t.Fatalf("line %q: want orders' event 1 with its JSON payload and the batch token", line)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tail after an interrupt: %v, want exit 0", err)
	}

	r := streamseal(t, nil, "tail", "--database-url", url, "--resume", "garbage!")
	if r.code != 1 || !strings.Contains(r.stderr, "--resume") || !strings.Contains(r.stderr, "bad request") || r.stdout != "" {
		t.Fatalf("tail --resume garbage!: exit %d, stdout %q, stderr %q; want exit 1 naming --resume, nothing printed", r.code, r.stdout, r.stderr)
	}
}
