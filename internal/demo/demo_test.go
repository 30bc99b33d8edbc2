package demo_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/demo"
	"github.com/streamseal/streamseal/internal/scratchdb"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// The main job, end to end (invariants 1, 3, 4): the demo's loss is detected, named, repaired,
// audited, and the run ends with a converged verdict; with --keep it then serves each service's
// metrics (billing's show the gaps it detected) until cancelled, and returns the verdict.
func TestDemo_EndsConvergedAndKeepsServingMetrics(t *testing.T) {
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
	out := &watchedOutput{changed: make(chan struct{}, 1)}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- demo.Run(runCtx, server, out, demo.Options{Keep: true, MetricsAddr: "127.0.0.1:0", Secured: true})
	}()

	billingMetrics := regexp.MustCompile(`metrics: billing on (http://\S+/metrics)`)
	var url string
	deadline := time.After(2 * time.Minute) // failsafe only
	for url == "" {
		select {
		case err := <-done:
			t.Fatalf("demo ended before serving metrics: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("no metrics line within the failsafe:\n%s", out.String())
		case <-out.changed:
			if m := billingMetrics.FindStringSubmatch(out.String()); m != nil {
				url = m[1]
			}
		}
	}
	for _, want := range []string{"with authorization and TLS on", "GAP CONFIRMED", "repair requested", "re-delivered", "converged", "rows byte-equal", "seal of orders advanced", "VERDICT converged"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if gaps := regexp.MustCompile(`(?m)^streamseal_gaps_detected_total (\d+)`).FindStringSubmatch(string(body)); gaps == nil || gaps[1] == "0" {
		t.Fatalf("billing's /metrics does not count the gaps it named:\n%s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the kept demo returned %v after Ctrl-C; want its converged verdict (nil)", err)
	}
}

// watchedOutput is the demo's output, safe for its goroutines, signalling each write.
type watchedOutput struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func (w *watchedOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return w.buf.Write(p)
}

func (w *watchedOutput) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// A bad metrics address for --keep is refused before anything starts (no cluster, no services).
func TestDemo_KeepRefusesABadMetricsAddressUpFront(t *testing.T) {
	for _, addr := range []string{"nonsense", "127.0.0.1:port", "127.0.0.1:65534"} {
		err := demo.Run(context.Background(), nil, io.Discard, demo.Options{Keep: true, MetricsAddr: addr})
		if err == nil || !strings.Contains(err.Error(), "metrics address") {
			t.Fatalf("--metrics-addr %q: %v; want a refusal naming the metrics address", addr, err)
		}
	}
}
