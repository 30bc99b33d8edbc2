package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/checkpointtest"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestAuditor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		pool     *pgxpool.Pool // the auditor's ("billing") database, consuming types
		origin   *pgxpool.Pool // "orders", granting billing types
		nats     *natstest.Server
		toOrders *natstest.Recorder // everything billing sends the origin: manifest and repair requests
		// serve starts the origin's manifest server; a test that wants a silent origin skips it.
		serve    func(t *testing.T)
		server   *audit.ManifestServer // the origin's, once serve ran
		control  *wire.Control         // billing's control endpoint, the auditor registered
		ordersJS jetstream.JetStream
		// stopControl stops billing's control endpoint (a test restarts one on billingJS).
		stopControl func() error
		billingJS   jetstream.JetStream
	}

	// setup gives billing an origin it knows from a checkpoint and consumes types from (all of
	// eventTypes when none are named); its control endpoint runs with the auditor registered.
	setup := func(t *testing.T, types ...string) (*audit.Auditor, *testBundle) {
		t.Helper()
		if len(types) == 0 {
			types = eventTypes
		}
		srv := natstest.Start(t)
		origin := dbtest.NewPool(t, "orders")
		if err := store.GrantsAdd(ctx, origin, "billing", types, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		_, ordersJS := srv.Connect(t, "orders")
		ordersControl := natstest.Control(t, ordersJS, "orders")

		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "", types, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		checkpointtest.Verify(t, pool, "billing", checkpointtest.Heartbeat("orders", types[0], "acme", 0, 0))
		_, billingJS := srv.Connect(t, "billing")
		settings := config.Defaults()
		settings.SettleWindow = 0 // nothing here is in flight: compare everything
		a := &audit.Auditor{Pool: pool, JS: billingJS, Service: "billing", Config: settings, Logger: testrun.Logger(t)}
		control := natstest.Control(t, billingJS, "billing")
		a.Register(control)
		stopControl := testrun.Go(t, "billing control endpoint", control.Run)

		b := &testBundle{pool: pool, origin: origin, nats: srv, toOrders: srv.Record(t, wire.ControlStream, wire.ControlFilters("orders")[0]),
			control: control, ordersJS: ordersJS, stopControl: stopControl, billingJS: billingJS}
		b.serve = func(t *testing.T) {
			b.server = &audit.ManifestServer{Pool: origin, JS: ordersJS, Service: "orders", Logger: a.Logger}
			b.server.Register(ordersControl)
			testrun.Go(t, "orders control endpoint", ordersControl.Run)
		}
		return a, b
	}

	// awaitSent waits until billing has sent the origin n messages of kind and returns them.
	awaitSent := func(t *testing.T, b *testBundle, kind string, n int) []wire.Envelope {
		t.Helper()
		var out []wire.Envelope
		b.toOrders.Await(t, fmt.Sprintf("%d %s sent to orders", n, kind), func(msgs []natstest.Msg) bool {
			envs, _ := natstest.Envelopes(t, msgs)
			out = out[:0]
			for _, env := range envs {
				if env.Kind == kind {
					out = append(out, env)
				}
			}
			return len(out) >= n
		})
		return out
	}

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		// The audit's caps as the README's configuration table (and config.Defaults) state them,
		// and the limits only the doc comment states: 10 stream pages, a 30 s answer timeout.
		for _, c := range []struct {
			name      string
			got, want any
		}{
			{"MaxDrillDownTypesDefault", audit.MaxDrillDownTypesDefault, 10},
			{"MaxPagesDefault", audit.MaxPagesDefault, 10},
			{"MaxDigestsDefault", audit.MaxDigestsDefault, 500},
			{"MaxRequestsDefault", audit.MaxRequestsDefault, 25},
			{"AnswerTimeoutDefault", audit.AnswerTimeoutDefault, 30 * time.Second},
			{"config MaxDrillDownTypesPerAudit", config.Defaults().MaxDrillDownTypesPerAudit, audit.MaxDrillDownTypesDefault},
			{"config MaxDigestsPerManifest", config.Defaults().MaxDigestsPerManifest, audit.MaxDigestsDefault},
			{"config MaxAutoRepairRequestsPerAudit", config.Defaults().MaxAutoRepairRequestsPerAudit, audit.MaxRequestsDefault},
		} {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}

		// Invariant 9 (storm bounds) with zero Limits: eleven mismatched types, and the audit
		// drills into MaxDrillDownTypesDefault of them, asking one repair for each.
		var types []string
		for i := range 11 {
			types = append(types, fmt.Sprintf("kind.%02d", i))
		}
		a, b := setup(t, types...)
		for _, ty := range types {
			appendStamped(t, b.origin, ownEvent("acme", "s-"+ty, 1, ty))
		}
		b.serve(t)
		findings, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		drilled := map[string]bool{}
		for _, d := range findings[0].Divergent {
			drilled[d.Type] = true
		}
		if len(drilled) != audit.MaxDrillDownTypesDefault || findings[0].Requests != audit.MaxDrillDownTypesDefault || findings[0].Sealed {
			t.Fatalf("finding %+v: drilled into %d types; want %d types drilled and repaired, no seal",
				findings[0], len(drilled), audit.MaxDrillDownTypesDefault)
		}
	})

	// Invariant 8 (bounded cost): a window that matches whole at type level is sealed without a
	// stream-level page, and the next audit asks only for the window above the seal.
	t.Run("SealsAMatchingWindowAndStartsAboveItNextTime", func(t *testing.T) {
		t.Parallel()
		a, b := setup(t)
		for v := int64(1); v <= 4; v++ {
			appendStamped(t, b.origin, ownEvent("acme", "s1", v, eventTypes[0]), ownEvent("acme", "s2", v, eventTypes[1]),
				ownEvent("globex", "g1", v, eventTypes[2]))
		}
		ingest(t, b.pool, ownLane(t, b.origin))
		b.serve(t)

		first, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		if f := first[0]; f.Origin != "orders" || f.From != 0 || f.To != 13 || !f.Sealed || f.SealedThrough != 13 || len(f.Divergent) != 0 || f.Requests != 0 {
			t.Fatalf("first audit %+v; want [0, 13) matched and sealed through 13", f)
		}
		appendStamped(t, b.origin, ownEvent("acme", "s1", 5, eventTypes[0]), ownEvent("acme", "s3", 1, eventTypes[1]))
		ingest(t, b.pool, ownLane(t, b.origin)[12:])
		second, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		if f := second[0]; f.From != 13 || f.To != 15 || !f.Sealed || f.SealedThrough != 15 {
			t.Fatalf("second audit %+v; want the window [13, 15) above the seal, sealed through 15", f)
		}
		requests := awaitSent(t, b, wire.KindManifestRequest, 2)
		var levels []string
		for _, env := range requests {
			var req wire.ManifestRequest
			if err := json.Unmarshal(env.Body, &req); err != nil {
				t.Fatal(err)
			}
			levels = append(levels, fmt.Sprintf("%s[%d,…)", req.Level, req.From))
		}
		if fmt.Sprint(levels) != "[folds[0,…) folds[13,…)]" {
			t.Fatalf("manifest requests %v; want one type-level request per audit, none at stream level", levels)
		}
	})

	// Invariants 1 and 10: a deficit is found to the stream and repaired by a directed request
	// naming exactly that stream; a local extra and an identity mismatch are alarmed and ledgered
	// but never requested, and no local copy is deleted; nothing is sealed over the mismatch (14).
	t.Run("ClassifiesDivergenceAndAsksRepairOnlyForDeficits", func(t *testing.T) {
		t.Parallel()
		a, b := setup(t)
		for v := int64(1); v <= 3; v++ {
			appendStamped(t, b.origin, ownEvent("acme", "lost", v, eventTypes[0])) // origin_seq 1..3
		}
		appendStamped(t, b.origin, ownEvent("acme", "extra", 1, eventTypes[0]), ownEvent("acme", "extra", 2, eventTypes[0]), // 4, 5
			ownEvent("acme", "swapped", 1, eventTypes[0]), // 6
			ownEvent("acme", "fine", 1, eventTypes[0]))    // 7
		lane := ownLane(t, b.origin)
		extra := lane[2] // the lost event's number, claimed by a copy nobody sent in stream "extra"
		extra.EventID, extra.StreamID, extra.StreamVersion = uuid.New(), "extra", 3
		swapped := lane[5]
		swapped.EventID = uuid.New()
		ingest(t, b.pool, []store.EventCopy{lane[0], lane[1], lane[3], lane[4], extra, swapped, lane[6]})
		b.serve(t)

		findings, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		f := findings[0]
		var divergent []string
		for _, d := range f.Divergent {
			divergent = append(divergent, fmt.Sprintf("%s:%s:%d/%d", d.Stream, d.Reason, d.LocalN, d.OriginN))
		}
		sort.Strings(divergent)
		if want := "[extra:local_extra:3/2 lost:deficit:2/3 swapped:identity_mismatch:1/1]"; fmt.Sprint(divergent) != want {
			t.Fatalf("divergent buckets %v, want %s", divergent, want)
		}
		if f.Requests != 1 || f.Sealed {
			t.Fatalf("finding %+v; want one repair request and no seal", f)
		}
		var req wire.RedeliveryRequest
		if err := json.Unmarshal(awaitSent(t, b, wire.KindRedeliveryRequest, 1)[0].Body, &req); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(req.Streams, req.Tenants, req.Types) != "[lost] [acme] [order.placed]" || *req.FromSeq != 0 || *req.ToSeq != 8 {
			t.Fatalf("repair request %+v; want stream lost of acme's order.placed in [0, 8)", req)
		}
		if n := len(copiesHeld(t, b.pool)); n != 7 {
			t.Fatalf("billing holds %d copies after the audit, want the 7 it had (nothing deleted)", n)
		}
		var ledgered string
		if err := b.pool.QueryRow(ctx, "select string_agg(stream_id || ':' || reason, ' ' order by stream_id) from streamseal.repair_ledger").Scan(&ledgered); err != nil {
			t.Fatal(err)
		}
		if ledgered != "extra:local_extra lost:deficit swapped:identity_mismatch" {
			t.Fatalf("repair ledger holds %q; want the three divergent buckets", ledgered)
		}
		var sealed int64
		if err := b.pool.QueryRow(ctx, "select coalesce((select sealed_through from streamseal.seals where origin = 'orders'), 0)").Scan(&sealed); err != nil || sealed != 0 {
			t.Fatalf("seal at %d (%v), want none over a mismatching window", sealed, err)
		}
	})

	// Invariant 14 (an audit that could not compare everything says what it left, and never
	// reports all-clear over a mismatching digest): damage beyond one audit's page budget is
	// found by the next audits, each resuming where the last stopped, and every audit before it
	// names the type as unresolved with where it resumes. Before the cursor, every audit walked
	// the same first pages and reported 0 divergent buckets forever.
	t.Run("ResumesTheDrillDownWhereTheLastAuditStopped", func(t *testing.T) {
		t.Parallel()
		a, b := setup(t)
		a.Limits = audit.Limits{MaxPages: 1, MaxDigests: 2} // two streams per audit
		for _, stream := range []string{"s1", "s2", "s3", "s4", "s5", "s6"} {
			appendStamped(t, b.origin, ownEvent("acme", stream, 1, eventTypes[0]), ownEvent("acme", stream, 2, eventTypes[0]))
		}
		lane := ownLane(t, b.origin)
		var held []store.EventCopy
		for _, e := range lane {
			if e.StreamID != "s5" || e.StreamVersion != 2 { // the one loss, past the first four streams
				held = append(held, e)
			}
		}
		ingest(t, b.pool, held)
		b.serve(t)

		for round, want := range []string{`resume after "s2"`, `resume after "s4"`} {
			findings, err := a.Run(ctx, audit.Scope{})
			if err != nil {
				t.Fatal(err)
			}
			f := findings[0]
			if len(f.Divergent) != 0 || f.Requests != 0 || f.Sealed || len(f.Unresolved) != 1 ||
				fmt.Sprintf("%s resume after %q", f.Unresolved[0].Type, f.Unresolved[0].ResumeAfter) != eventTypes[0]+" "+want {
				t.Fatalf("audit %d: %+v; want nothing divergent on its pages, %s unresolved, %s", round+1, f, eventTypes[0], want)
			}
			var report strings.Builder
			audit.WriteFindings(&report, findings, config.AutoRepairCapped)
			if !strings.Contains(report.String(), "UNRESOLVED: 1 event types still differ") {
				t.Fatalf("audit %d reads as all-clear over a mismatching digest:\n%s", round+1, report.String())
			}
		}
		findings, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		f := findings[0]
		if len(f.Divergent) != 1 || f.Divergent[0].Stream != "s5" || f.Divergent[0].Reason != "deficit" || f.Requests != 1 {
			t.Fatalf("the third audit: %+v; want the deficit of s5 found and requested", f)
		}
	})

	// Report-only is an exact dry run (issue 15 item 4): the audit records the request
	// auto-repair would send, byte for byte but for its id, sends nothing and spends no ledger
	// attempt (its ladder is the ledger's dry run); the same damage audited in auto-repair mode
	// records and sends exactly that request and spends one.
	t.Run("ReportOnlyRecordsTheRequestAutoRepairSendsAndSpendsNoAttempt", func(t *testing.T) {
		t.Parallel()
		// recorded audits one consumer's damage (the last of stream "lost" missing) in mode and
		// returns what the audit recorded (the request id blanked: it is minted per send), how
		// many repair requests the consumer sent and the ledger attempts it spent.
		recorded := func(t *testing.T, mode string) (string, int, int) {
			a, b := setup(t)
			for v := int64(1); v <= 3; v++ {
				appendStamped(t, b.origin, ownEvent("acme", "lost", v, eventTypes[0]))
			}
			ingest(t, b.pool, ownLane(t, b.origin)[:2])
			b.serve(t)
			a.Config.RepairMode = mode
			if findings, err := a.Run(ctx, audit.Scope{}); err != nil || findings[0].Requests != 1 {
				t.Fatalf("%s audit: %+v, %v; want one request", mode, findings, err)
			}
			var action, body string
			if err := b.pool.QueryRow(ctx, "select action, (request - 'request_id')::text from streamseal.audit_requests").
				Scan(&action, &body); err != nil {
				t.Fatalf("%s audit recorded no request: %v", mode, err)
			}
			// Every request sent is recorded before it is published (redelivery.Send).
			var sent, attempts int
			if err := b.pool.QueryRow(ctx, "select count(*)::int from streamseal.sent_requests").Scan(&sent); err != nil {
				t.Fatal(err)
			}
			if err := b.pool.QueryRow(ctx, "select attempts from streamseal.repair_ledger where stream_id = 'lost'").Scan(&attempts); err != nil {
				t.Fatal(err)
			}
			return action + " " + body, sent, attempts
		}
		dry, drySent, dryAttempts := recorded(t, config.ReportOnly)
		real, realSent, realAttempts := recorded(t, config.AutoRepairCapped)
		if drySent != 0 || realSent != 1 {
			t.Fatalf("report-only sent %d requests, auto-repair %d; want 0 and 1", drySent, realSent)
		}
		if dry != "would_request "+strings.TrimPrefix(real, "requested ") || !strings.HasPrefix(real, "requested ") {
			t.Fatalf("report-only recorded %q, auto-repair %q; want the same request", dry, real)
		}
		if dryAttempts != 0 || realAttempts != 1 {
			t.Fatalf("report-only spent %d ledger attempts, auto-repair %d; want 0 and 1", dryAttempts, realAttempts)
		}
	})

	// Invariant 9 (storm bounds) for the dry run: report-only audits repeated every 5 minutes
	// record the unchanged deficit's request on the backoff schedule (at once, then after 5,
	// 10, 20, 40 minutes), exactly when auto-repair audits of the same damage send theirs, not
	// every round; the report-only ledger's attempts stay 0 throughout. The clock is injected.
	t.Run("ReportOnlyRecordsOnTheBackoffScheduleNotEveryRound", func(t *testing.T) {
		t.Parallel()
		// schedule audits one consumer's damage in mode every 5 minutes for 80 minutes and
		// returns the minutes at which a request was recorded, and the ledger attempts spent.
		schedule := func(t *testing.T, mode string) ([]int, int) {
			a, b := setup(t)
			for v := int64(1); v <= 3; v++ {
				appendStamped(t, b.origin, ownEvent("acme", "lost", v, eventTypes[0]))
			}
			ingest(t, b.pool, ownLane(t, b.origin)[:2])
			b.serve(t)
			a.Config.RepairMode = mode
			a.Config.RepairRetryAfter = 5 * time.Minute
			a.Config.MaxRepairAttemptsPerBucket = 8
			start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			var minutes []int
			for minute := 0; minute <= 80; minute += 5 {
				a.Now = func() time.Time { return start.Add(time.Duration(minute) * time.Minute) }
				findings, err := a.Run(ctx, audit.Scope{})
				if err != nil {
					t.Fatalf("%s audit at minute %d: %v", mode, minute, err)
				}
				if findings[0].Requests > 0 {
					minutes = append(minutes, minute)
				}
			}
			var recorded, attempts int
			if err := b.pool.QueryRow(ctx, "select count(*)::int from streamseal.audit_requests").Scan(&recorded); err != nil {
				t.Fatal(err)
			}
			if recorded != len(minutes) {
				t.Fatalf("%s: %d requests recorded for %d audits that made one", mode, recorded, len(minutes))
			}
			if err := b.pool.QueryRow(ctx, "select attempts from streamseal.repair_ledger where stream_id = 'lost'").Scan(&attempts); err != nil {
				t.Fatal(err)
			}
			return minutes, attempts
		}
		dry, dryAttempts := schedule(t, config.ReportOnly)
		real, realAttempts := schedule(t, config.AutoRepairCapped)
		if fmt.Sprint(dry) != "[0 5 15 35 75]" || fmt.Sprint(real) != fmt.Sprint(dry) {
			t.Fatalf("report-only recorded at minutes %v, auto-repair sent at %v; want both at [0 5 15 35 75]", dry, real)
		}
		if dryAttempts != 0 || realAttempts != 5 {
			t.Fatalf("report-only spent %d ledger attempts, auto-repair %d; want 0 and 5", dryAttempts, realAttempts)
		}
	})

	// Invariant 14: an origin that does not answer fails the audit loudly after the answer
	// timeout; nothing is compared, nothing sealed.
	t.Run("FailsWhenTheOriginDoesNotAnswer", func(t *testing.T) {
		t.Parallel()
		a, b := setup(t)
		a.Limits.AnswerTimeout = 200 * time.Millisecond // the timeout is the behaviour under test
		appendStamped(t, b.origin, ownEvent("acme", "s", 1, eventTypes[0]))
		ingest(t, b.pool, ownLane(t, b.origin))
		findings, err := a.Run(ctx, audit.Scope{})
		if err == nil || !strings.Contains(err.Error(), "no complete folds manifest answer from orders within 200ms") {
			t.Fatalf("audit of a silent origin returned %+v, %v; want the missing answer named", findings, err)
		}
		awaitSent(t, b, wire.KindManifestRequest, 1)
		var sealed int64
		if err := b.pool.QueryRow(ctx, "select coalesce(max(sealed_through), 0) from streamseal.seals").Scan(&sealed); err != nil || sealed != 0 {
			t.Fatalf("sealed through %d (%v) after a failed audit", sealed, err)
		}
	})

	// Invariant 12 (authenticity): an answer whose body claims an origin other than its sender is
	// refused, not fed to a comparison.
	// Invariants 4 and 10 (issue 15 item 2): an application deletes one own event the consumer
	// already sealed, in an epoch not yet closed. The deletion bumps the origin's generation (the
	// seal covers that epoch) and the guard reads it from the answer it compares (this origin sends
	// no checkpoint here), so the round skips and resets the seal; the announced removal is applied
	// to the copy, and the next round certifies the window again with no divergence.
	t.Run("GuardReadsTheGenerationFromTheAnswerAndAppliesAnnouncedRemovals", func(t *testing.T) {
		t.Parallel()
		a, b := setup(t)
		var events []store.NewEvent
		for v := int64(1); v <= 4; v++ {
			events = append(events, ownEvent("acme", "s1", v, eventTypes[0]))
		}
		appendStamped(t, b.origin, events...)
		ingest(t, b.pool, ownLane(t, b.origin))
		b.serve(t)
		if first, err := a.Run(ctx, audit.Scope{}); err != nil || !first[0].Sealed || first[0].SealedThrough != 5 {
			t.Fatalf("first audit %+v, %v; want [0, 5) sealed", first, err)
		}
		if _, err := b.origin.Exec(ctx, "delete from streamseal.events where event_id = $1", events[1].EventID); err != nil {
			t.Fatal(err)
		}
		skipped, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		if f := skipped[0]; f.Skipped == "" || len(f.Divergent) != 0 {
			t.Fatalf("audit after the deletion %+v; want the round skipped on the answer's new generation", f)
		}
		if n := len(copiesHeld(t, b.pool)); n != 3 {
			t.Fatalf("billing holds %d copies; want 3: the announced removal applied", n)
		}
		again, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		if f := again[0]; f.Skipped != "" || f.From != 0 || !f.Sealed || f.SealedThrough != 5 || len(f.Divergent) != 0 {
			t.Fatalf("re-verification %+v; want [0, 5) certified again with no divergence", f)
		}
	})

	// Invariants 10 and 14: the origin removes an event while the consumer drills down (after the
	// first stream page). The later pages come from a newer generation than the type-level answer,
	// so the round stops and says so instead of reading the removed event's copy as a local extra;
	// the following rounds apply the announced removal and never report one either.
	t.Run("StopsADrillDownWhoseOriginChangedHistoryMeanwhile", func(t *testing.T) {
		t.Parallel()
		a, b := setup(t)
		a.Limits.MaxDigests = 1 // one stream per page
		var events []store.NewEvent
		for _, stream := range []string{"s1", "s2", "s3"} {
			events = append(events, ownEvent("acme", stream, 1, eventTypes[0]))
		}
		appendStamped(t, b.origin, events...)
		ingest(t, b.pool, ownLane(t, b.origin)[1:]) // billing lost s1: the type mismatches
		b.serve(t)
		a.OnProgress = func(p audit.Progress) {
			if p.Pages == 1 {
				if _, err := b.origin.Exec(ctx, "delete from streamseal.events where event_id = $1", events[2].EventID); err != nil {
					t.Error(err)
				}
			}
		}
		first, err := a.Run(ctx, audit.Scope{})
		a.OnProgress = nil
		if err != nil {
			t.Fatal(err)
		}
		if f := first[0]; !strings.Contains(f.Skipped, "during the drill-down") || len(f.Divergent) != 0 {
			t.Fatalf("audit across the removal %+v; want the round stopped at the newer generation", f)
		}
		for round := range 3 {
			found, err := a.Run(ctx, audit.Scope{})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range found[0].Divergent {
				if d.Reason == "local_extra" {
					t.Fatalf("round %d reported %+v: an announced removal must never read as a local extra", round, d)
				}
			}
		}
		for _, id := range copiesHeld(t, b.pool) {
			if id == events[2].EventID.String() {
				t.Fatalf("billing still holds the copy of the removed event %s", id)
			}
		}
	})

	// Invariant 9: history changes beyond one answer are caught up ask by ask, at most
	// MaxHistoryAsks per origin's audit; a round that could not catch up says so and compares
	// nothing, and the next continues from its cursor.
	t.Run("CatchesUpOnHistoryChangesAskByAskWithinItsCap", func(t *testing.T) {
		t.Parallel()
		a, b := setup(t)
		n := audit.MaxHistoryChangesPerAnswer + 500
		var events []store.NewEvent
		for i := range n {
			events = append(events, ownEvent("acme", fmt.Sprintf("s%04d", i), 1, eventTypes[0]))
		}
		appendStamped(t, b.origin, events...)
		ingest(t, b.pool, ownLane(t, b.origin))
		b.serve(t)
		if first, err := a.Run(ctx, audit.Scope{}); err != nil || !first[0].Sealed {
			t.Fatalf("first audit %+v, %v; want sealed", first, err)
		}
		if _, err := b.origin.Exec(ctx, "delete from streamseal.events where origin = 'orders'"); err != nil {
			t.Fatal(err)
		}
		a.Limits.MaxHistoryAsks = 1
		capped, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		if f := capped[0]; !strings.Contains(f.Skipped, "still arriving") || len(f.Divergent) != 0 {
			t.Fatalf("capped audit %+v; want skipped while history changes remain", f)
		}
		if held := len(copiesHeld(t, b.pool)); held != 500 {
			t.Fatalf("billing holds %d copies after one ask; want 500 (one answer's %d removals applied)", held, audit.MaxHistoryChangesPerAnswer)
		}
		a.Limits.MaxHistoryAsks = audit.MaxHistoryAsksDefault
		for round := 0; round < 2; round++ {
			found, err := a.Run(ctx, audit.Scope{})
			if err != nil {
				t.Fatal(err)
			}
			if len(found[0].Divergent) != 0 {
				t.Fatalf("round %d reported %+v: announced removals must never read as divergence", round, found[0].Divergent)
			}
			if found[0].Skipped == "" && !found[0].Sealed {
				t.Fatalf("round %d = %+v; want skipped (generation) or certified", round, found[0])
			}
		}
		if held := len(copiesHeld(t, b.pool)); held != 0 {
			t.Fatalf("billing holds %d copies; want 0: every announced removal applied", held)
		}
	})

	// Invariant 14 (every request reaches an answer): a waited-for answer of 201 chunks (one
	// digest a chunk over 201 types: the healthy audit's answer is one fold per type, so the
	// chunks come from types, not tenants) arrives whole while every core is busy: the audit
	// completes, compares every type, and declines none. The witness is the completed audit, never
	// a duration. Before the fix a 4-slot hand-off dropped chunks under load and the audit timed out.
	t.Run("EveryChunkOfAManyChunkAnswerArrivesUnderLoad_Invariant14", func(t *testing.T) {
		t.Parallel()
		var types []string
		for i := range 201 {
			types = append(types, fmt.Sprintf("kind.%03d", i))
		}
		a, b := setup(t, types...)
		b.serve(t)
		var events []store.NewEvent
		for i, typ := range types {
			events = append(events, ownEvent(fmt.Sprintf("t%03d", i%67), fmt.Sprintf("s-%s", typ), 1, typ))
		}
		appendStamped(t, b.origin, events...)
		ingest(t, b.pool, ownLane(t, b.origin))
		a.Limits.MaxDigests = 1
		loadEveryCore(t)
		// Billing's consumer falls behind (as on busy cores): its control endpoint is stopped
		// while the origin answers, so the whole answer waits on the broker and arrives in
		// fetched batches, faster than any hand-off could be drained.
		if err := b.stopControl(); err != nil {
			t.Fatal(err)
		}
		type result struct {
			found []audit.Finding
			err   error
		}
		done := make(chan result, 1)
		go func() {
			found, err := a.Run(ctx, audit.Scope{})
			done <- result{found, err}
		}()
		testrun.WaitFor(t, "the origin's whole answer on the broker", func() bool { answered, _ := b.server.Counts(); return answered == 1 })
		b.control = natstest.Control(t, b.billingJS, "billing")
		a.Register(b.control)
		testrun.Go(t, "billing control endpoint, restarted", b.control.Run)
		r := testrun.Receive(t, "the audit of a 201-chunk answer", done)
		found, err := r.found, r.err
		if err != nil {
			t.Fatalf("audit of a 201-chunk answer: %v", err)
		}
		if len(found) != 1 || found[0].Skipped != "" || len(found[0].Divergent) != 0 || len(found[0].Unresolved) != 0 {
			t.Fatalf("findings %+v; want orders compared whole and equal", found)
		}
		if answered, chunks := b.server.Counts(); answered != 1 || chunks != 201 {
			t.Fatalf("the origin answered %d requests in %d chunks; want 1 in 201", answered, chunks)
		}
		if a.Declined() != 0 || len(b.control.Seam.Dropped()) != 0 {
			t.Fatalf("declined %d, seam drops %v; want none: every chunk was waited for", a.Declined(), b.control.Seam.Dropped())
		}
	})

	// Invariant 12: over the wire, a chunk answering no request this auditor waits for is declined
	// and counted (the auditor's counter and the seam's unsolicited drops), never held.
	t.Run("AChunkNoRequestWaitsForIsDeclinedAndCounted_Invariant12", func(t *testing.T) {
		t.Parallel()
		a, b := setup(t)
		env, err := wire.NewEnvelope(wire.KindManifestAnswer, "orders", "billing",
			wire.ManifestAnswer{RequestID: "nobody-asked", Origin: "orders", Level: wire.LevelTypes, Chunk: 1, Chunks: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Publish(ctx, b.ordersJS, env, nil); err != nil {
			t.Fatal(err)
		}
		testrun.WaitFor(t, "billing's control endpoint done with the unsolicited chunk", func() bool { return b.control.Finished() == 1 })
		if a.Declined() != 1 || b.control.Seam.Dropped()[wire.DropUnsolicited] != 1 {
			t.Fatalf("declined %d, seam drops %v; want the chunk declined once and counted unsolicited", a.Declined(), b.control.Seam.Dropped())
		}
	})

	t.Run("RefusesAnAnswerItsSenderDoesNotOwn", func(t *testing.T) {
		t.Parallel()
		a := &audit.Auditor{}
		env, err := wire.NewEnvelope(wire.KindManifestAnswer, "payments", "billing",
			wire.ManifestAnswer{RequestID: "r", Origin: "orders", Level: wire.LevelTypes, Chunk: 1, Chunks: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Accept(env); !errors.Is(err, wire.ErrPermanent) {
			t.Fatalf("Accept = %v, want a permanent refusal", err)
		}
		if a.Declined() != 0 {
			t.Fatalf("a refused answer counted as %d declined", a.Declined())
		}
	})
}

// loadEveryCore keeps every core busy until the test ends (a test that fails under CPU load is a
// defect: this makes the load certain rather than hoped for).
func loadEveryCore(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for i := 0; i < 1_000_000; i++ {
					_ = i * i
				}
			}
		}()
	}
	t.Cleanup(func() { close(done); wg.Wait() })
}

func copiesHeld(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), "select event_id::text from streamseal.events where origin = 'orders'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}
