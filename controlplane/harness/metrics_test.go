package harness_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/harness"
	"github.com/streamseal/streamseal/controlplane/store"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Metrics and health read what the control plane did: checkpoints and gaps count up, the
// backlog gauges follow the maintenance cycle's reading, and readiness says "degraded" with the
// reason while a confirmed gap is unrepaired.
func TestMetrics_ReportTheWorkAndReadinessDegradesOnAnUnrepairedGap(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	report := fast(config.ReportOnly, 10)
	orders := start(t, h, "orders", harness.Options{Settings: report}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: report, Consumes: eventTypes[:1],
		Suppress: func(e store.EventCopy) bool { return e.StreamVersion == 2 }}, nil)
	var events []store.NewEvent
	for i := range 5 {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "m", StreamVersion: int64(i + 1),
			EventType: eventTypes[0], Payload: []byte("{}")})
	}
	if _, err := store.Append(context.Background(), orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the gap confirmed", []*harness.Service{orders, billing}, func() bool { return len(gapReports(t, billing)) == 1 })
	if err := billing.Metrics.Refresh(context.Background()); err != nil { // what the maintenance cycle does
		t.Fatal(err)
	}
	srv := httptest.NewServer(billing.Metrics.Handler())
	defer srv.Close()

	if code, body := get(t, srv.URL+"/healthz"); code != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != 200 || !strings.Contains(body, "degraded: 1 lanes hold confirmed, unrepaired gaps") {
		t.Fatalf("/readyz = %d %q", code, body)
	}
	_, body := get(t, srv.URL+"/metrics")
	for _, want := range []string{"streamseal_gaps_detected_total 1", "streamseal_lanes_with_confirmed_gaps 1",
		"streamseal_inbox_events_suppressed_total 1", "streamseal_unhealed_buckets 0", "streamseal_checkpoints_received_total"} {
		if !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, body)
		}
	}
}
