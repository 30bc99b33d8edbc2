package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Readiness is a probe of the real dependencies: with the database unreachable (nothing listens
// on its port) and the NATS connection closed, /readyz answers 503 naming both, while /healthz
// (the process is up) stays 200.
func TestReadyz_Answers503NamingEachUnreachableDependency(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/nothing?connect_timeout=2&sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	nats, err := wire.StartEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer nats.Shutdown()
	nc, err := wire.Connect(nats.URL(), "billing", wire.Security{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(metrics.New(pool, nc, metrics.Sources{}).Handler())
	defer srv.Close()

	code, body := get(t, srv.URL+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "database unreachable") || strings.Contains(body, "NATS") {
		t.Fatalf("/readyz with the database down = %d %q; want 503 naming the database only", code, body)
	}
	nc.Close()
	code, body = get(t, srv.URL+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "database unreachable") || !strings.Contains(body, "NATS disconnected") {
		t.Fatalf("/readyz with both down = %d %q; want 503 naming both", code, body)
	}
	if code, body := get(t, srv.URL+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d %q; the process is up", code, body)
	}
}

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

// The dashboard (docker/grafana-dashboard.json) reads only metrics the exporter registers: every
// streamseal_ name in its queries (histogram suffixes stripped) is a family of a fresh exporter
// whose labelled instruments each recorded once. A renamed metric turns this red before a user's
// panel goes blank.
func TestDashboard_QueriesOnlyRegisteredMetrics(t *testing.T) {
	registered := everyRegisteredMetric(t)
	dashboard, err := os.ReadFile("../../docker/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	used := regexp.MustCompile(`streamseal_[a-z_]+`).FindAllString(string(dashboard), -1)
	if len(used) < 20 {
		t.Fatalf("the dashboard names only %d metrics", len(used))
	}
	for _, name := range used {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
		if !registered[base] {
			t.Errorf("the dashboard queries %s, which the exporter does not register", name)
		}
	}
	for name := range registered {
		if !strings.Contains(string(dashboard), name) {
			t.Errorf("metric %s is registered but no dashboard panel shows it", name)
		}
	}
}

// The README's metrics reference names every registered metric (without the namespace).
func TestReadme_MetricsReferenceNamesEveryMetric(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range everyRegisteredMetric(t) {
		if !strings.Contains(string(readme), "`"+strings.TrimPrefix(name, "streamseal_")+"`") {
			t.Errorf("README's metrics reference does not name %s", name)
		}
	}
}

// everyRegisteredMetric returns the family names of a fresh exporter after every labelled
// instrument recorded once (an unlabelled-by-use vector is not gathered).
func everyRegisteredMetric(t *testing.T) map[string]bool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/nothing")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	one := func() int64 { return 1 }
	e := metrics.New(pool, nil, metrics.Sources{InboxStored: one, InboxSuppressed: one, InboxRejected: one,
		CheckpointsPublished: one, CheckpointsReceived: one, GapsDetected: one,
		RedeliveryRequestsReceived: one, RedeliveryRefused: one, RedeliveryEventsShipped: one,
		ManifestsAnswered: one, ManifestChunksSent: one, SeamDropped: func() map[string]int64 { return map[string]int64{"malformed": 1} }})
	e.SetBacklog(metrics.Backlog{SealedThrough: map[string]int64{"orders": 7}, Silent: map[string]bool{"orders": true}})
	m := e.Instruments
	m.ManifestAnswered("types", false, time.Millisecond)
	m.ManifestCompared("types", time.Millisecond)
	m.RedeliveryBuilt(time.Millisecond)
	m.BucketHealed(1)
	m.Stamped(time.Millisecond)
	m.Relayed(time.Millisecond)
	m.Divergence("orders", "order.placed", "deficit")
	m.RepairRequested("audit", "orders")
	m.CompareDeclined("orders")
	m.ManifestRequested("orders", true)
	m.DrillDown("orders")
	m.PagesCapped("orders")
	m.Verified(1, map[string]int64{"drift": 1})
	m.Quarantined("relay")
	m.DeadMessage("inbox", "permanent")
	families, err := e.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, f := range families {
		registered[f.GetName()] = true
	}
	return registered
}
