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
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
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
	report.ReadinessGrace = 0 // the confirmed gap counts at the first reading after it
	orders := start(t, h, "orders", harness.Options{Settings: report}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: report, Consumes: eventTypes[:1],
		Suppress: func(e store.EventCopy) bool { return e.StreamVersion == 2 }}, nil)
	var events []store.NewEvent
	for i := range 5 {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "m", StreamVersion: int64(i + 1),
			EventType: eventTypes[0], Payload: []byte("{}")})
	}
	if _, err := store.EventsAppend(context.Background(), orders.Pool, events); err != nil {
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
		"streamseal_inbox_events_suppressed_total 1", "streamseal_unhealed_buckets 0", "streamseal_checkpoints_received_total",
		`streamseal_repairs_requested_total{origin="orders",source="checkpoint"} 1`} {
		if !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, body)
		}
	}
}

// metricValue reads one series of a service's registry: a counter's or gauge's value, or a
// histogram's sample count; 0 when the series does not exist yet (a labelled series appears at
// its first event).
func metricValue(t *testing.T, s *harness.Service, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := s.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			default:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

type wantMetric struct {
	service *harness.Service
	name    string
	labels  map[string]string
	want    float64
}

func requireMetrics(t *testing.T, when string, wants []wantMetric) {
	t.Helper()
	for _, w := range wants {
		if got := metricValue(t, w.service, w.name, w.labels); got != w.want {
			t.Errorf("%s: %s %s%v = %v, want %v", when, w.service.Name, w.name, w.labels, got, w.want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// The audit's instruments move with the audit's work (durations and flow families): a consumer
// lost 3 events of 2 streams after receipt (all of s2, one of s3); the first audit, capped at two stream pages, finds
// one deficit and repairs it; the second, uncapped, heals it and repairs the other; the third
// matches at type level and heals the last. Each step moves exactly its instruments.
func TestMetrics_AuditInstrumentsMoveWithTheWork(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := auditSettings()
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes[:1]}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1]}, nil)
	services := []*harness.Service{orders, billing}
	ctx := context.Background()
	appendSixAndWait(t, orders, billing)
	if metricValue(t, orders, "streamseal_stamper_lag_seconds", nil) < 1 || metricValue(t, orders, "streamseal_relay_lag_seconds", nil) < 1 {
		t.Fatal("orders stamped and relayed 6 events but the lag histograms hold no sample")
	}
	if _, err := billing.Pool.Exec(ctx, "delete from streamseal.events where stream_id = 's2' or (stream_id = 's3' and stream_version = 2)"); err != nil {
		t.Fatal(err)
	}
	origin := map[string]string{"origin": "orders"}
	deficit := map[string]string{"origin": "orders", "event_type": eventTypes[0], "reason": "deficit"}
	fromAudit := map[string]string{"origin": "orders", "source": "audit"}

	// One stream per page, two pages: s1 (equal) and s2 (deficit); s3 waits for the next audit.
	billing.Auditor.Limits.MaxPages = 2
	if _, err := billing.Auditor.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	// The origin times its answers and builds after their last message left: wait for both.
	waitFor(t, "s2 repaired, the origin's work timed", services, func() bool {
		return countFrom(t, billing.Pool, "orders") == 5 &&
			metricValue(t, orders, "streamseal_redelivery_build_duration_seconds", nil) == 1 &&
			metricValue(t, orders, "streamseal_manifest_answer_duration_seconds", map[string]string{"level": "streams"}) == 2
	})
	requireMetrics(t, "after the capped audit", []wantMetric{
		{billing, "streamseal_manifests_requested_total", origin, 5}, // the folds, one split of the tenant key space, one listing of the differing range, two stream pages
		{billing, "streamseal_drill_downs_requested_total", origin, 1},
		{billing, "streamseal_manifest_pages_followed_total", origin, 2},
		{billing, "streamseal_manifest_pages_capped_total", origin, 1},
		{billing, "streamseal_divergences_detected_total", deficit, 1},
		{billing, "streamseal_repairs_requested_total", fromAudit, 1},
		{billing, "streamseal_manifest_compare_duration_seconds", map[string]string{"level": "folds"}, 1},
		{billing, "streamseal_manifest_compare_duration_seconds", map[string]string{"level": "streams"}, 2},
		{billing, "streamseal_bucket_heal_seconds", nil, 0},
		{orders, "streamseal_manifest_answer_duration_seconds", map[string]string{"level": "folds", "windowed": "false"}, 1},
		{orders, "streamseal_manifest_answer_duration_seconds", map[string]string{"level": "streams"}, 2},
		{orders, "streamseal_redelivery_build_duration_seconds", nil, 1},
	})

	// Uncapped: s2 now equal (its ledger row heals), s3 a deficit, repaired.
	billing.Auditor.Limits.MaxPages = 0 // the default
	if _, err := billing.Auditor.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "s3 repaired, the build timed", services, func() bool {
		return countFrom(t, billing.Pool, "orders") == 6 && metricValue(t, orders, "streamseal_redelivery_build_duration_seconds", nil) == 2
	})
	requireMetrics(t, "after the second audit", []wantMetric{
		{billing, "streamseal_manifest_pages_capped_total", origin, 1},
		{billing, "streamseal_divergences_detected_total", deficit, 2},
		{billing, "streamseal_repairs_requested_total", fromAudit, 2},
		{billing, "streamseal_bucket_heal_seconds", nil, 1},
		{orders, "streamseal_redelivery_build_duration_seconds", nil, 2},
	})

	// Whole window equal at type level: the last ledger row heals, no drill-down, no request.
	if _, err := billing.Auditor.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	drills := metricValue(t, billing, "streamseal_drill_downs_requested_total", origin)
	requireMetrics(t, "after the matching audit", []wantMetric{
		{billing, "streamseal_drill_downs_requested_total", origin, drills},
		{billing, "streamseal_divergences_detected_total", deficit, 2},
		{billing, "streamseal_repairs_requested_total", fromAudit, 2},
		{billing, "streamseal_bucket_heal_seconds", nil, 2},
	})
	if drills != 2 {
		t.Fatalf("drill-downs = %v, want 2 (the matching audit stays at type level)", drills)
	}

	// The compare gate: an answer nobody asked for is declined and counted against its origin.
	env, err := wire.NewEnvelope(wire.KindManifestAnswer, "orders", "billing", wire.ManifestAnswer{RequestID: "unsolicited", Origin: "orders", Chunk: 1, Chunks: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := billing.Auditor.Accept(env); err != nil {
		t.Fatal(err)
	}
	requireMetrics(t, "after an unsolicited chunk", []wantMetric{{billing, "streamseal_compares_declined_total", origin, 1}})
}

// Readiness degrades on an exhausted bucket and recovers when it heals: a consumer with a budget
// of one attempt spends it on its first audit's request (the bucket is exhausted from that
// request on, healed or not), /readyz says so after the maintenance cycle's reading; the repair
// and an operator's repair store the events, the next audit heals the bucket, and /readyz is
// ready again.
func TestMetrics_ReadinessDegradesOnAnExhaustedBucketAndRecoversWhenItHeals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := auditSettings()
	settings.RepairMode = config.AutoRepairCapped
	settings.MaxRepairAttemptsPerBucket = 1
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes[:1]}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1]}, nil)
	ctx := context.Background()
	appendSixAndWait(t, orders, billing)
	if _, err := billing.Pool.Exec(ctx, "delete from streamseal.events where stream_version = 1"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(billing.Metrics.Handler())
	defer srv.Close()
	readiness := func() string {
		if err := billing.Metrics.Refresh(ctx); err != nil { // what the maintenance cycle does
			t.Fatal(err)
		}
		code, body := get(t, srv.URL+"/readyz")
		if code != 200 {
			t.Fatalf("/readyz = %d %q with the database and NATS up", code, body)
		}
		return body
	}
	if body := readiness(); !strings.Contains(body, "ready") || strings.Contains(body, "degraded") {
		t.Fatalf("before the audit /readyz = %q, want ready", body)
	}
	if _, err := billing.Auditor.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if body := readiness(); !strings.Contains(body, "degraded: 3 buckets spent their repair budget") {
		t.Fatalf("after the budget was spent /readyz = %q", body)
	}
	// The convergence gauges of the same reading: the backlog and its age.
	if got := metricValue(t, billing, "streamseal_repair_exhausted_buckets", nil); got != 3 {
		t.Fatalf("repair_exhausted_buckets = %v, want 3", got)
	}
	if got := metricValue(t, billing, "streamseal_unhealed_buckets", nil); got != 3 {
		t.Fatalf("unhealed_buckets = %v, want 3", got)
	}
	if got := metricValue(t, billing, "streamseal_oldest_unhealed_age_seconds", nil); got <= 0 {
		t.Fatalf("oldest_unhealed_age_seconds = %v with 3 buckets unhealed; want their age", got)
	}

	from, to := int64(0), int64(1)<<40
	op := &redelivery.Operator{Pool: billing.Pool, NC: billing.NC, Service: "billing", Out: io.Discard}
	opCtx, cancel := context.WithTimeout(ctx, failsafe)
	defer cancel()
	if _, err := op.Run(opCtx, "orders", wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: []string{"acme"},
		Types: eventTypes[:1], FromSeq: &from, ToSeq: &to, MaxEvents: 1000}); err != nil {
		t.Fatal(err)
	}
	if _, err := billing.Auditor.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if body := readiness(); !strings.Contains(body, "ready") || strings.Contains(body, "degraded") {
		t.Fatalf("after the operator's repair and a matching audit /readyz = %q, want ready", body)
	}
	if got := metricValue(t, billing, "streamseal_repair_exhausted_buckets", nil); got != 0 {
		t.Fatalf("repair_exhausted_buckets = %v after the heal, want 0", got)
	}
	if got := metricValue(t, billing, "streamseal_oldest_unhealed_age_seconds", nil); got != 0 {
		t.Fatalf("oldest_unhealed_age_seconds = %v with nothing unhealed, want 0", got)
	}
	// The matching audit certified the whole window [0, 7): the seal gauge of orders says so.
	if got := metricValue(t, billing, "streamseal_sealed_through", map[string]string{"origin_service_id": "orders"}); got != 7 {
		t.Fatalf("sealed_through{orders} = %v, want 7", got)
	}
}
