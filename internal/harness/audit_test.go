package harness_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/jobs"
	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/harness"
	"github.com/streamseal/streamseal/internal/testrun"
)

func auditSettings() config.Config {
	c := fast(config.AutoRepairCapped, 10)
	c.SettleWindow = time.Millisecond // the test's buckets are fresh; nothing is in flight
	c.MaxDigestsPerManifest = 1       // one stream per page: the audit must follow the cursor
	return c
}

// appendSixAndWait appends 6 events of one type over streams s1..s3 (versions 1 and 2) at orders
// and waits until billing stored them all, knows orders, and its lane floor passed them.
func appendSixAndWait(t *testing.T, orders, billing *harness.Service) {
	t.Helper()
	ctx := context.Background()
	var events []store.NewEvent
	for i := range 6 {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: []string{"s1", "s2", "s3"}[i%3],
			StreamVersion: int64(i/3 + 1), EventType: eventTypes[0], Payload: []byte("{}")})
	}
	if _, err := store.EventsAppend(ctx, orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "billing stored all 6 and knows orders", []*harness.Service{orders, billing}, func() bool {
		var known int
		_ = billing.Pool.QueryRow(ctx, "select count(*) from streamseal.known_origins").Scan(&known)
		return countFrom(t, billing.Pool, "orders") == 6 && known == 1 && laneFloor(t, billing, "orders", "acme", eventTypes[0]) == 6
	})
}

func sealOf(t *testing.T, s *harness.Service, origin string) int64 {
	t.Helper()
	var sealed int64
	if err := s.Pool.QueryRow(context.Background(), "select coalesce((select sealed_through from streamseal.seals where origin = $1), 0)", origin).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	return sealed
}

// Invariants 1, 4 and 8 through the deep audit: the consumer lost 3 of 6 events after receiving
// them (a bad restore: no checkpoint can see it). The audit asks a type-level manifest, drills
// down page by page (one stream per page), repairs the deficits, and converges; the next round
// sends no request and no drill-down, and the seal advances over the whole window.
func TestAudit_ConvergesAndTheNextRoundSeals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := auditSettings()
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes[:1]}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1]}, nil)
	services := []*harness.Service{orders, billing}
	appendSixAndWait(t, orders, billing)
	// Loss after receipt: all of s2 and one event of s3.
	if _, err := billing.Pool.Exec(context.Background(), "delete from streamseal.events where stream_id = 's2' or (stream_id = 's3' and stream_version = 2)"); err != nil {
		t.Fatal(err)
	}

	var progress []audit.Progress
	billing.Auditor.OnProgress = func(p audit.Progress) { progress = append(progress, p) }
	findings, err := billing.Auditor.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	billing.Auditor.OnProgress = nil
	// Progress (what `audit` prints): one report per page, covering the origin's 6 events.
	if last := progress[len(progress)-1]; len(progress) < 3 || last.Done != 6 || last.Total != 6 || last.Pages != len(progress) {
		t.Fatalf("drill-down progress %+v; want a report per page (3 streams, one per page) ending at 6/6", progress)
	}
	if len(findings) != 1 || len(findings[0].Divergent) != 2 || findings[0].Requests != 1 || findings[0].Sealed {
		t.Fatalf("first round = %+v; want 2 deficit buckets (s2, s3), 1 batched request, no seal", findings)
	}
	for _, b := range findings[0].Divergent {
		if b.Reason != "deficit" {
			t.Fatalf("bucket %+v is not a deficit", b)
		}
	}
	waitFor(t, "billing converged", services, func() bool { return countFrom(t, billing.Pool, "orders") == 6 })

	answeredBefore, _ := orders.Manifest.Counts()
	receivedBefore, _, _ := orders.Redelivery.Counts()
	findings, err = billing.Auditor.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	answeredAfter, _ := orders.Manifest.Counts()
	receivedAfter, _, _ := orders.Redelivery.Counts()
	if len(findings[0].Divergent) != 0 || findings[0].Requests != 0 || !findings[0].Sealed {
		t.Fatalf("second round = %+v; want nothing divergent and the seal advanced", findings)
	}
	if answeredAfter-answeredBefore != 1 || receivedAfter != receivedBefore {
		t.Fatalf("second round cost %d manifest answers and %d repair requests; want 1 (type level only) and 0",
			answeredAfter-answeredBefore, receivedAfter-receivedBefore)
	}
	if sealed := sealOf(t, billing, "orders"); sealed != 7 {
		t.Fatalf("seal %d, want 7 (the whole window [0, 7))", sealed)
	}
	var ledger int
	if err := billing.Pool.QueryRow(context.Background(), "select count(*) from streamseal.repair_ledger").Scan(&ledger); err != nil {
		t.Fatal(err)
	}
	if ledger != 0 {
		t.Fatalf("%d ledger rows remain after the heal", ledger)
	}
}

// Invariants 9 and 10: equal counts with different identity alarm as identity_mismatch, and a
// local extra alarms as local_extra; over 5 audit rounds neither sends a single repair request,
// nothing is deleted, and the seal does not advance.
func TestAudit_IdentityMismatchAndLocalExtraAlarmWithoutRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := auditSettings()
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes[:1]}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1]}, nil)
	services := []*harness.Service{orders, billing}
	appendStreams(t, orders, 6, 3, "o")
	// appendStreams uses every type in turn; keep only the consumed ones in mind.
	waitFor(t, "billing caught up and knows orders", services, func() bool {
		var known int
		_ = billing.Pool.QueryRow(context.Background(), "select count(*) from streamseal.known_origins").Scan(&known)
		return known == 1 && countFrom(t, billing.Pool, "orders") == 2
	})
	ctx := context.Background()
	// Identity mismatch: replace one copy with a same-position copy of another id.
	if _, err := billing.Pool.Exec(ctx, `
		with gone as (delete from streamseal.events where origin = 'orders' and stream_id = 'o-00' returning *)
		insert into streamseal.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload)
		select gen_random_uuid(), origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload from gone`); err != nil {
		t.Fatal(err)
	}
	// Local extra: a copy the origin never emitted, in a stream it does not have.
	if _, err := store.EventsIngest(ctx, billing.Pool, []store.EventCopy{{EventID: uuid.New(), Origin: "orders", OriginSeq: 3, TypeSeq: 99,
		Tenant: "acme", StreamID: "ghost", StreamVersion: 1, EventType: eventTypes[0], Payload: []byte("{}")}}); err != nil {
		t.Fatal(err)
	}
	before := countFrom(t, billing.Pool, "orders")
	for round := range 5 {
		findings, err := billing.Auditor.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]bool{}
		for _, b := range findings[0].Divergent {
			reasons[b.Reason] = true
		}
		if !reasons["identity_mismatch"] || !reasons["local_extra"] || findings[0].Requests != 0 || findings[0].Sealed {
			t.Fatalf("round %d = %+v; want identity_mismatch and local_extra alarms, no request, no seal", round+1, findings)
		}
	}
	if received, _, _ := orders.Redelivery.Counts(); received != 0 {
		t.Fatalf("the origin received %d repair requests; alarms must never request", received)
	}
	if after := countFrom(t, billing.Pool, "orders"); after != before {
		t.Fatalf("billing's rows went from %d to %d: local history must never be deleted", before, after)
	}
}

// Invariant 4: the sweep finds a sabotaged sealed epoch and a sabotaged digest row at the origin
// (an unaccounted write path) and heals both, so answers from epochs are right again.
func TestSweep_HealsSabotagedEpochsAndDigests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	orders := start(t, h, "orders", harness.Options{Settings: auditSettings()}, nil)
	ctx := context.Background()
	appendStreams(t, orders, 60, 6, "sweep")
	waitFor(t, "stamped", []*harness.Service{orders}, func() bool {
		var n int64
		_ = orders.Pool.QueryRow(ctx, "select last_origin_seq from streamseal.stamp_state").Scan(&n)
		return n == 60
	})
	if closed, err := store.EpochsClose(ctx, orders.Pool, store.EpochOptions{MaxEpochs: 100, Width: 10, Settle: time.Hour}); err != nil || len(closed) != 6 {
		t.Fatalf("close epochs = %v, %v; want 6", closed, err)
	}
	if _, err := orders.Pool.Exec(ctx, `
		update streamseal.digest_epochs set x0 = x0 # 1 where origin = 'orders' and epoch = 2;
		update streamseal.stream_digests set n = n + 1 where stream_id = 'sweep-03'`); err != nil {
		t.Fatal(err)
	}
	sweeper := &jobs.Sweeper{Pool: orders.Pool, Auditor: orders.Auditor, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxEpochs: 1000,
		Metrics: orders.Metrics.Instruments}
	if err := sweeper.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	// The sweep's instruments say what it checked and what it healed, by kind.
	requireMetrics(t, "after the sweep", []wantMetric{
		{orders, "streamseal_digest_buckets_verified_total", nil, 6},
		{orders, "streamseal_digest_drift_healed_total", map[string]string{"kind": "drift"}, 5}, // sweep-03 holds all 5 types
		{orders, "streamseal_digest_drift_healed_total", map[string]string{"kind": "epoch"}, 1},
	})
	if drift, err := store.StreamDigestsVerify(ctx, orders.Pool, false); err != nil || len(drift) != 0 {
		t.Fatalf("after the sweep the digest table still drifts: %v, %v", drift, err)
	}
	checks, err := store.EpochsVerify(ctx, orders.Pool, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if c.Drifted != 0 || c.PrefixHealed {
			t.Fatalf("after the sweep epochs still drift: %+v", c)
		}
	}
	answer, err := store.TypeDigests(ctx, orders.Pool, "orders", 0, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var recomputed int64
	if err := orders.Pool.QueryRow(ctx, "select count(*) from streamseal.events where origin = 'orders'").Scan(&recomputed); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, d := range answer.Digests {
		n += d.N
	}
	if n != recomputed {
		t.Fatalf("the answer from epochs counts %d events, the store holds %d", n, recomputed)
	}
}

// Invariant 9 (storm bounds) with a durable ledger: divergent buckets across many (tenant, type)
// pairs get at most the cap of requests per audit; the pairs the cap cut go out at the next
// audits (their ledger attempts are given back), each pair exactly once at one instant (backoff);
// a restarted control plane's auditor, reading the same ledger, does not re-request. The clock
// is injected.
func TestAudit_StormIsCappedBackedOffAndSurvivesRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := auditSettings()
	settings.MaxDigestsPerManifest = 500
	settings.MaxAutoRepairRequestsPerAudit = 3
	settings.RepairMode = config.ReportOnly // count what would be sent; nothing heals in between
	tenants := []string{"t1", "t2", "t3", "t4"}
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes}, nil)
	services := []*harness.Service{orders, billing}
	ctx := context.Background()
	var events []store.NewEvent
	for i := range 400 {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: tenants[i%4], StreamID: "s" + string(rune('a'+i%20)),
			StreamVersion: int64(i/20 + 1), EventType: eventTypes[i%5], Payload: []byte("{}")})
	}
	if _, err := store.EventsAppend(ctx, orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "billing caught up and knows orders", services, func() bool {
		var known int
		_ = billing.Pool.QueryRow(ctx, "select count(*) from streamseal.known_origins").Scan(&known)
		return known == 1 && countFrom(t, billing.Pool, "orders") == 400
	})
	// Lose (after receipt) one event in every stream: deficits in 20 pairs of (tenant, type).
	if _, err := billing.Pool.Exec(ctx, "delete from streamseal.events where stream_version = 1"); err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	billing.Auditor.Now = func() time.Time { return clock }
	first, err := billing.Auditor.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first[0].Divergent) != 20 || first[0].Requests != 3 {
		t.Fatalf("first audit: %d divergent buckets, %d requests; want 20 and the cap, 3", len(first[0].Divergent), first[0].Requests)
	}
	again, err := billing.Auditor.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Requests != 3 || len(again[0].Divergent) != 20 {
		t.Fatalf("the second audit sent %d requests; want the next 3 of the pairs the cap cut (their attempts were given back)", again[0].Requests)
	}
	// The cap cut 20 - 3 - 3 = 14 pairs so far; five more audits at the same instant send the
	// remaining 14 (3 a round), then nothing: every pair is backed off.
	sentTotal := 6
	for round := 0; round < 5; round++ {
		f, err := billing.Auditor.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sentTotal += f[0].Requests
	}
	if sentTotal != 20 {
		t.Fatalf("%d requests in all at one instant; want exactly 20 (each pair once, capped 3 a round)", sentTotal)
	}
	// Report-only climbs the ledger's dry-run ladder (issue 15 item 4): nothing was sent, so no
	// ledger attempt is spent, yet the backoff above held.
	var spent int
	if err := billing.Pool.QueryRow(ctx, "select coalesce(sum(attempts), 0)::int from streamseal.repair_ledger").Scan(&spent); err != nil || spent != 0 {
		t.Fatalf("report-only audits spent %d ledger attempts (%v); want none", spent, err)
	}
	// A restart: a new control plane on the same database reads the same ledger.
	billing.Stop()
	restarted := startReplica(t, h, billing, harness.Options{Settings: settings, Consumes: eventTypes})
	restarted.Auditor.Now = func() time.Time { return clock.Add(time.Minute) }
	after, err := restarted.Auditor.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after[0].Requests != 0 {
		t.Fatalf("after a restart the audit sent %d requests a minute later: the ledger did not survive", after[0].Requests)
	}
	// Past the backoff base (RepairRetryAfter, 1 h here), the buckets are asked for again, capped.
	restarted.Auditor.Now = func() time.Time { return clock.Add(61 * time.Minute) }
	later, err := restarted.Auditor.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if later[0].Requests == 0 || later[0].Requests > 3 {
		t.Fatalf("after the backoff the audit sent %d requests; want between 1 and the cap 3", later[0].Requests)
	}
}

// The audit command's path: an auditor outside the running control plane (its own NATS
// connection, listening beside it on the service's control subject) audits and certifies.
func TestAudit_RunsBesideARunningControlPlane(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := auditSettings()
	settings.MaxDigestsPerManifest = 500 // one chunk: a multi-chunk window compares but never certifies
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes}, nil)
	services := []*harness.Service{orders, billing}
	appendStreams(t, orders, 20, 4, "beside")
	waitFor(t, "billing caught up and knows orders", services, func() bool {
		var known int
		_ = billing.Pool.QueryRow(context.Background(), "select count(*) from streamseal.known_origins").Scan(&known)
		return known == 1 && countFrom(t, billing.Pool, "orders") == 20
	})
	nc, err := wire.Connect(h.NATS.URL(), "billing-audit", wire.Security{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	outside := &audit.Auditor{Pool: billing.Pool, JS: js, Service: "billing", Config: settings,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	findings, err := outside.RunBeside(context.Background(), nc, audit.Scope{Origin: "orders", Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || len(findings[0].Divergent) != 0 || !findings[0].Sealed || findings[0].SealedThrough != 21 {
		t.Fatalf("findings = %+v; want orders certified through 21", findings)
	}
	// Invariant 12 (answers only for requests sent) seen from the running service: the operator's
	// answers came on a reply address of its own, so billing's control plane never saw them. The
	// witness that it would have: its directed durable has nothing pending or unacked, so every
	// message on its inbox was handled; none of them was a declined chunk.
	awaitInboxDrained(t, h, "billing")
	if declined, dropped := billing.Auditor.Declined(), billing.Seam.Dropped(); declined != 0 || len(dropped) != 0 {
		t.Fatalf("the running service declined %d chunks, seam drops %v; want none: the operator's answers are not its", declined, dropped)
	}
}

// Invariants 14 and 12 on the authorized bus: an operator's `streamseal audit`, connected as the
// consumer's own NATS user beside the consumer's running control plane, asks for an answer of
// 125 chunks (one digest a chunk over 25 tenants x 5 types) on its own reply address. The
// generated permissions let the origin answer there and the operator read it; the audit completes
// with every chunk (the witness: a whole, equal comparison), and the running service declines
// none (its declined counter and its seam's drops stay zero once its inbox is drained).
func TestAudit_OperatorBesideARunningServiceOnTheAuthorizedBus_Invariant14(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	topo := natsauth.Topology{Services: []natsauth.Service{{Name: "orders"},
		{Name: "billing", Consumes: []natsauth.Consumption{{Origin: natsauth.AnyOrigin, Types: eventTypes, AllTenants: true}}}}}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	h, err := harness.NewSecured(ctx, func(ctx context.Context, service string) (string, error) { return dbtest.New(t), nil }, logger, topo, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	settings := auditSettings() // one digest a chunk
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes}, nil)
	var events []store.NewEvent
	for tenant := range 25 {
		for _, typ := range eventTypes {
			events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: fmt.Sprintf("t%02d", tenant), StreamID: fmt.Sprintf("s-%02d-%s", tenant, typ),
				StreamVersion: 1, EventType: typ, Payload: []byte(`{}`)})
		}
	}
	if _, err := store.EventsAppend(ctx, orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "billing caught up and knows orders", []*harness.Service{orders, billing}, func() bool {
		var known int
		_ = billing.Pool.QueryRow(ctx, "select count(*) from streamseal.known_origins").Scan(&known)
		return known == 1 && countFrom(t, billing.Pool, "orders") == len(events)
	})
	nc, err := wire.Connect(h.NATS.URL(), "billing", h.Security("billing"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	operator := &audit.Auditor{Pool: billing.Pool, JS: js, Service: "billing", Config: settings,
		Limits: audit.Limits{MaxDigests: 1}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	findings, err := operator.RunBeside(ctx, nc, audit.Scope{Origin: "orders", Full: true})
	if err != nil {
		t.Fatalf("the operator's audit of a 125-chunk answer: %v", err)
	}
	if len(findings) != 1 || findings[0].Skipped != "" || len(findings[0].Divergent) != 0 || len(findings[0].Unresolved) != 0 {
		t.Fatalf("findings = %+v; want orders compared whole and equal", findings)
	}
	if operator.Declined() != 0 {
		t.Fatalf("the operator declined %d chunks of its own answer", operator.Declined())
	}
	awaitInboxDrained(t, h, "billing")
	if declined, dropped := billing.Auditor.Declined(), billing.Seam.Dropped(); declined != 0 || len(dropped) != 0 {
		t.Fatalf("the running service declined %d chunks, seam drops %v; want none: the operator's answers are not its", declined, dropped)
	}
}

// awaitInboxDrained waits until service's directed control durable has delivered and had acked
// everything on its filter (published before the call: JetStream acknowledged it stored).
func awaitInboxDrained(t *testing.T, h *harness.Harness, service string) {
	t.Helper()
	nc, err := wire.Connect(h.NATS.URL(), natsauth.AdminUser, h.Security(natsauth.AdminUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	filter := wire.ControlFilters(service)[0]
	testrun.WaitFor(t, service+"'s directed control inbox drained", func() bool {
		cons, err := js.Consumer(context.Background(), wire.ControlStream, wire.ControlDurable(service, filter))
		if err != nil {
			return false
		}
		info, err := cons.Info(context.Background())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
}

// Invariants 4 and 10 with a legitimate mutation: the origin closes a stream inside sealed
// history. Its generation moves; the consumer's guard resets its seal once and skips that round;
// the next round applies the origin's announced close to the consumer's copies and re-verifies
// from the start, certifying again, with no alarm and no ledger entry.
func TestAudit_GenerationBumpResetsTheSealOnceThenReverifies(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := auditSettings()
	settings.MaxDigestsPerManifest = 500
	settings.EpochWidth = 5 // the maintenance job that runs at start pins this width
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes}, nil)
	services := []*harness.Service{orders, billing}
	ctx := context.Background()
	appendStreams(t, orders, 20, 2, "gen")
	waitFor(t, "billing caught up and knows orders", services, func() bool {
		var known int
		_ = billing.Pool.QueryRow(ctx, "select count(*) from streamseal.known_origins").Scan(&known)
		return known == 1 && countFrom(t, billing.Pool, "orders") == 20
	})
	if _, err := store.EpochsClose(ctx, orders.Pool, store.EpochOptions{MaxEpochs: 100, Width: 5, Settle: time.Hour}); err != nil {
		t.Fatal(err)
	}
	first, err := billing.Auditor.RunOnce(ctx)
	if err != nil || !first[0].Sealed || first[0].SealedThrough != 21 {
		t.Fatalf("first audit = %+v, %v; want the window [0, 21) certified", first, err)
	}

	if _, err := orders.Pool.Exec(ctx, "select streamseal.close_stream('acme', 'gen-00')"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "billing learned the new generation from a checkpoint", services, func() bool {
		var g int64
		_ = billing.Pool.QueryRow(ctx, "select coalesce(generation, -1) from streamseal.known_origins where origin = 'orders'").Scan(&g)
		return g == 1
	})
	skipped, err := billing.Auditor.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if skipped[0].Skipped == "" || sealOf(t, billing, "orders") != 0 {
		t.Fatalf("round after the bump = %+v, seal %d; want skipped and the seal reset to 0", skipped, sealOf(t, billing, "orders"))
	}
	again, err := billing.Auditor.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Skipped != "" || len(again[0].Divergent) != 0 || !again[0].Sealed || again[0].SealedThrough != 21 {
		t.Fatalf("re-verification = %+v; want no divergence and [0, 21) certified again", again)
	}
	if n := countFrom(t, billing.Pool, "orders"); n != 10 {
		t.Fatalf("billing holds %d copies; the origin closed gen-00 (10 events), 10 remain", n)
	}
	var ledger int
	if err := billing.Pool.QueryRow(ctx, "select count(*) from streamseal.repair_ledger").Scan(&ledger); err != nil || ledger != 0 {
		t.Fatalf("ledger rows %d, %v: a legitimate close must raise no alarm", ledger, err)
	}
}
