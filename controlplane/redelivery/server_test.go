package redelivery_test

import (
	"encoding/json"
	"reflect"
	"sync"
	"time"

	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acme := []string{"acme"}

	type testBundle struct {
		pool      *pgxpool.Pool // the origin's ("orders") database
		nats      *natstest.Server
		control   *wire.Control       // the origin's control endpoint
		billing   jetstream.JetStream // the requester's connection
		billingDB *pgxpool.Pool       // the requester's database (its sent requests)
		answers   *natstest.Recorder  // the requester's control subject: bundles and summaries
	}

	setup := func(t *testing.T) (*redelivery.Server, *testBundle) {
		t.Helper()
		pool := dbtest.NewPool(t, "orders")
		if err := store.GrantsAdd(ctx, pool, "billing", eventTypes[:2], store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "orders")
		_, billing := srv.Connect(t, "billing")
		return &redelivery.Server{Pool: pool, JS: js, Service: "orders", Logger: testrun.Logger(t)},
			&testBundle{pool: pool, nats: srv, control: natstest.Control(t, js, "orders"), billing: billing,
				billingDB: dbtest.NewPool(t, "billing"),
				answers:   srv.Record(t, wire.ControlStream, wire.ControlFilters("billing")[0])}
	}

	// start registers the server on the origin's control endpoint and runs both for the test.
	start := func(t *testing.T, s *redelivery.Server, b *testBundle) {
		t.Helper()
		s.Register(b.control)
		testrun.Go(t, "control endpoint", b.control.Run)
		testrun.Go(t, "redelivery server", s.Run)
	}

	ask := func(t *testing.T, b *testBundle, req wire.RedeliveryRequest) string {
		t.Helper()
		id, err := redelivery.Request(ctx, b.billingDB, b.billing, "billing", "orders", req)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		// DESIGN.md (Wire; Options) and the README's built-in limits: a request is served at most
		// 10000 events, selected in pages of 500, shipped in bundles of 500 events or 192000
		// payload bytes (one larger event alone).
		for _, c := range []struct {
			name      string
			got, want int
		}{
			{"MaxEventsPerRequestDefault", redelivery.MaxEventsPerRequestDefault, 10000},
			{"PageSizeDefault", redelivery.PageSizeDefault, 500},
			{"MaxBundleEventsDefault", redelivery.MaxBundleEventsDefault, 500},
			{"MaxBundleBytesDefault", redelivery.MaxBundleBytesDefault, 192000},
		} {
			if c.got != c.want {
				t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
			}
		}
		want := redelivery.Limits{MaxEventsPerRequest: 10000, PageSize: 500, MaxBundleEvents: 500, MaxBundleBytes: 192000, HoldLimit: time.Hour,
			BackfillShare: 50}
		if redelivery.DefaultLimits != want {
			t.Errorf("DefaultLimits = %+v, want %+v", redelivery.DefaultLimits, want)
		}
		if got := redelivery.WithDefaults(redelivery.Limits{}); got != want {
			t.Errorf("WithDefaults(zero) = %+v, want %+v", got, want)
		}
		if got := redelivery.WithDefaults(redelivery.Limits{PageSize: 7}); got != (redelivery.Limits{10000, 7, 500, 192000, time.Hour, 50}) {
			t.Errorf("WithDefaults kept %+v of a set page size 7", got)
		}

		// A server with zero Limits serves by the defaults: a requester's 50000 is clamped to
		// 10000 events, shipped in bundles of 500, and the summary says the answer was cut.
		s, b := setup(t)
		streamOf(t, b.pool, "big", eventTypes[0], 10001, 10)
		// Three 100000-byte payloads do not fit two to a 192000-byte bundle.
		streamOf(t, b.pool, "wide", eventTypes[1], 3, 100000)
		start(t, s, b)
		from, to := seqRange(1, 1<<40)
		capped := awaitAnswer(t, b.answers, ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1],
			FromSeq: from, ToSeq: to, MaxEvents: 50000}))
		if s := capped.summary; s.Shipped != 10000 || !s.Truncated || s.Bundles != 20 || len(capped.bundles) != 20 {
			t.Fatalf("summary %+v with %d bundles; want 10000 shipped in 20 bundles, truncated", s, len(capped.bundles))
		}
		for i, bundle := range capped.bundles {
			if len(bundle.Events) != 500 {
				t.Fatalf("bundle %d holds %d events, want 500", i, len(bundle.Events))
			}
		}
		wide := awaitAnswer(t, b.answers, ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[1:2],
			FromSeq: from, ToSeq: to}))
		if wide.summary.Shipped != 3 || len(wide.bundles) != 3 || wide.summary.Truncated {
			t.Fatalf("summary %+v with %d bundles; want 3 shipped, one per bundle", wide.summary, len(wide.bundles))
		}
		for i, a := range wide.attachments {
			if len(a) != 100000 {
				t.Fatalf("bundle %d carries %d payload bytes, want one 100000-byte event", i, len(a))
			}
		}
	})

	// Invariants 3 and 11, and the lesson "an origin re-ships only its own lane": a request is
	// answered with the origin's own events of the named types, one stream per bundle, in
	// (stream, version) order, identity and payload bytes intact; copies it holds of a peer's
	// events and types nobody asked for stay home.
	t.Run("ServesItsOwnLaneInStreamAndVersionOrder", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		for v := int64(1); v <= 4; v++ { // interleaved: origin_seq order is not stream order
			appendStamped(t, b.pool,
				ownEvent("c", v, eventTypes[v%2], payload(int(v), 20)),
				ownEvent("a", v, eventTypes[(v+1)%2], payload(int(v), 30)),
				ownEvent("b", v, eventTypes[2], payload(int(v), 40)))
		}
		peer := store.EventCopy{EventID: [16]byte{1}, Origin: "peer", OriginSeq: 1, TypeSeq: 1, Tenant: "acme",
			StreamID: "a", StreamVersion: 9, EventType: eventTypes[0], Payload: []byte("{}")}
		if _, err := store.EventsIngest(ctx, b.pool, []store.EventCopy{peer}); err != nil {
			t.Fatal(err)
		}
		start(t, s, b)
		from, to := seqRange(1, 1<<40)
		a := awaitAnswer(t, b.answers, ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:2],
			FromSeq: from, ToSeq: to, MaxEvents: 100}))

		var want []store.EventCopy
		for _, e := range lane(t, b.pool, "orders") {
			if e.EventType != eventTypes[2] {
				want = append(want, e)
			}
		}
		slices.SortFunc(want, func(x, y store.EventCopy) int {
			return strings.Compare(fmt.Sprintf("%s/%09d", x.StreamID, x.StreamVersion), fmt.Sprintf("%s/%09d", y.StreamID, y.StreamVersion))
		})
		var got []store.EventCopy
		for i, bundle := range a.bundles {
			if bundle.Origin != "orders" || a.envelopes[i].From != "orders" || a.envelopes[i].To != "billing" {
				t.Fatalf("bundle %d: origin %q from %q to %q", i, bundle.Origin, a.envelopes[i].From, a.envelopes[i].To)
			}
			copies, err := redelivery.Unbundle(a.envelopes[i], a.attachments[i])
			if err != nil {
				t.Fatalf("bundle %d does not unbundle: %v", i, err)
			}
			got = append(got, copies...)
		}
		if len(got) != len(want) || a.summary.Shipped != len(want) || a.summary.Bundles != len(a.bundles) || a.summary.Truncated {
			t.Fatalf("shipped %d events in %d bundles (summary %+v), want the %d own events of the granted types",
				len(got), len(a.bundles), a.summary, len(want))
		}
		for i := range want {
			if !sameCopy(got[i], want[i]) {
				t.Fatalf("event %d shipped as %+v, want %+v", i, got[i], want[i])
			}
		}
		if len(a.bundles) != 2 || a.bundles[0].StreamID != "a" || a.bundles[1].StreamID != "c" {
			t.Fatalf("%d bundles; want one for stream a, then one for c", len(a.bundles))
		}
	})

	// Invariant 11 (isolation): billing is granted order.shipped of tenant acme only. Asking for
	// globex is refused and nothing at all is sent; a request naming no tenant ships acme's
	// events and never globex's.
	t.Run("ATenantNotGrantedIsRefusedAndNamingNoTenantShipsOnlyTheGrantedOnes", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		if err := store.GrantsAdd(ctx, b.pool, "billing", eventTypes[2:], store.Tenants("acme")); err != nil {
			t.Fatal(err)
		}
		var events []store.NewEvent
		for v := int64(1); v <= 5; v++ {
			events = append(events, ownEvent("a", v, eventTypes[2], payload(int(v), 20)))
			globex := ownEvent("g", v, eventTypes[2], payload(int(v), 20))
			globex.Tenant = "globex"
			events = append(events, globex)
		}
		appendStamped(t, b.pool, events...)
		start(t, s, b)
		from, to := seqRange(1, 1<<40)
		ask(t, b, wire.RedeliveryRequest{Tenants: []string{"globex"}, Types: eventTypes[2:], FromSeq: from, ToSeq: to, MaxEvents: 100})
		ask(t, b, wire.RedeliveryRequest{Tenants: []string{"acme", "globex"}, Types: eventTypes[2:], FromSeq: from, ToSeq: to, MaxEvents: 100})
		testrun.WaitFor(t, "both requests naming globex refused", func() bool { _, refused, _ := s.Counts(); return refused == 2 })
		if n := b.nats.Count(t, wire.ControlStream, wire.ControlFilters("billing")[0]); n != 0 {
			t.Fatalf("the origin sent %d messages to billing for requests naming globex, want none", n)
		}

		a := awaitAnswer(t, b.answers, ask(t, b, wire.RedeliveryRequest{Types: eventTypes[2:], FromSeq: from, ToSeq: to, MaxEvents: 100}))
		if a.summary.Shipped != 5 {
			t.Fatalf("a request naming no tenant shipped %d, want acme's 5", a.summary.Shipped)
		}
		for i := range a.bundles {
			copies, err := redelivery.Unbundle(a.envelopes[i], a.attachments[i])
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range copies {
				if c.Tenant != "acme" {
					t.Fatalf("shipped an event of tenant %q to a service granted acme only", c.Tenant)
				}
			}
		}
	})

	// Invariant 11 (isolation) and 13 (no wedge): a request naming an ungranted type or no type,
	// or one that does not decode, is refused and nothing at all is sent to the requester; the
	// next good request is served as usual.
	t.Run("RefusesAnUngrantedTypeAndShipsNothing", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		streamOf(t, b.pool, "s", eventTypes[0], 5, 10)
		streamOf(t, b.pool, "t", eventTypes[2], 5, 10)
		start(t, s, b)
		from, to := seqRange(1, 1<<40)
		ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: []string{eventTypes[0], eventTypes[2]}, FromSeq: from, ToSeq: to, MaxEvents: 100})
		ask(t, b, wire.RedeliveryRequest{Tenants: acme, FromSeq: from, ToSeq: to, MaxEvents: 100})
		malformed, err := wire.NewEnvelope(wire.KindRedeliveryRequest, "billing", "orders",
			map[string]any{"request_id": "m", "tenants": acme, "types": eventTypes[:1], "max_events": 1, "everything": true})
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Publish(ctx, b.billing, malformed, nil); err != nil {
			t.Fatal(err)
		}
		testrun.WaitFor(t, "three refusals", func() bool { _, refused, _ := s.Counts(); return refused == 3 })
		if n := b.nats.Count(t, wire.ControlStream, wire.ControlFilters("billing")[0]); n != 0 {
			t.Fatalf("the origin sent %d messages to billing for refused requests, want none", n)
		}

		good := awaitAnswer(t, b.answers, ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], FromSeq: from, ToSeq: to, MaxEvents: 100}))
		if good.summary.Shipped != 5 {
			t.Fatalf("the good request after the refusals shipped %d, want 5", good.summary.Shipped)
		}
		if n := b.nats.Count(t, wire.ControlStream, wire.ControlFilters("billing")[0]); n != uint64(good.summary.Bundles+1) {
			t.Fatalf("billing's inbox holds %d messages, want only the good request's %d bundles and its summary", n, good.summary.Bundles)
		}
		if received, refused, shipped := s.Counts(); received != 3 || refused != 3 || shipped != 5 {
			t.Fatalf("counts: received %d, refused %d, shipped %d; want 3 decoded requests, 3 refusals, 5 shipped", received, refused, shipped)
		}
	})

	// Invariant 12: the sender is the one the subject names. A plain NATS client on shipping's
	// subject claiming billing (which orders grants) gets nothing built and nothing shipped to
	// anyone: the request is dropped at the seam as forged_sender.
	t.Run("ShipsNothingForARequestClaimingAnotherSender", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		streamOf(t, b.pool, "s", eventTypes[0], 5, 10)
		start(t, s, b)
		from, to := seqRange(1, 1<<40)
		req := wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: acme, Types: eventTypes[:1], FromSeq: from, ToSeq: to, MaxEvents: 100}
		env, err := wire.NewEnvelope(wire.KindRedeliveryRequest, "billing", "orders", req)
		if err != nil {
			t.Fatal(err)
		}
		data, err := wire.Encode(env, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A plain client on the bus (the test server's own connection), publishing shipping's subject.
		if _, err := b.nats.JS.Publish(ctx, wire.ControlSubjectFrom("orders", "shipping"), data); err != nil {
			t.Fatal(err)
		}
		testrun.WaitFor(t, "the forged request handled", func() bool { return b.control.Finished() == 1 })
		if got := b.control.Seam.Dropped(); got[wire.DropForgedSender] != 1 || len(got) != 1 {
			t.Fatalf("drops %v, want one forged_sender", got)
		}
		if received, _, shipped := s.Counts(); received != 0 || shipped != 0 {
			t.Fatalf("the forged request was received (%d) and shipped %d events", received, shipped)
		}
		if n := b.nats.Count(t, wire.ControlStream, "streamseal.ctl.*.orders"); n != 0 {
			t.Fatalf("orders sent %d control messages for a forged request", n)
		}
	})

	// Invariant 12: an origin serves a request id once. A replayed request (the same id again,
	// even from the requester itself) is never rebuilt: one replayed 300-byte request once
	// shipped 5 000 events again each time. Invariant 14: the replay is answered by the summary
	// sent for it, byte for byte the same, and nothing else (a requester whose summary was lost
	// re-asks under the id: a backfill's stalled answer).
	t.Run("ServesARequestIDOnceAndAnswersAReplayWithItsSummary", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		streamOf(t, b.pool, "s", eventTypes[0], 5, 10)
		start(t, s, b)
		from, to := seqRange(1, 1<<40)
		req := wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], FromSeq: from, ToSeq: to, MaxEvents: 100}
		first := awaitAnswer(t, b.answers, ask(t, b, req))
		if first.summary.Shipped != 5 {
			t.Fatalf("the first request shipped %d, want 5", first.summary.Shipped)
		}
		// The summary goes out just before the request is recorded served: replayed before that,
		// it would still wait in the queue (and be dropped as a duplicate, its summary coming anyway).
		testrun.WaitFor(t, "the first request recorded served", func() bool {
			var served bool
			err := b.pool.QueryRow(ctx, "select exists (select from streamseal.served_requests where request_id = $1)",
				first.summary.RequestID).Scan(&served)
			return err == nil && served
		})
		replay := req
		replay.RequestID = first.summary.RequestID
		env, err := wire.NewEnvelope(wire.KindRedeliveryRequest, "billing", "orders", replay)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Publish(ctx, b.billing, env, nil); err != nil {
			t.Fatal(err)
		}
		// A later request is served after the replay was handled (one control consumer, in order).
		second := awaitAnswer(t, b.answers, ask(t, b, req))
		if n := b.nats.Count(t, wire.ControlStream, wire.ControlFilters("billing")[0]); n != uint64(first.summary.Bundles+second.summary.Bundles+3) {
			t.Fatalf("billing's inbox holds %d messages, want the two answers' %d bundles and 3 summaries (the replay's its first's again): the replay was rebuilt or not answered",
				n, first.summary.Bundles+second.summary.Bundles)
		}
		var summaries []wire.RedeliverySummary
		envs, _ := natstest.Envelopes(t, b.answers.Messages())
		for _, env := range envs {
			var s wire.RedeliverySummary
			if env.Kind == wire.KindRedeliverySummary && json.Unmarshal(env.Body, &s) == nil && s.RequestID == first.summary.RequestID {
				summaries = append(summaries, s)
			}
		}
		if len(summaries) != 2 || !reflect.DeepEqual(summaries[0], summaries[1]) {
			t.Fatalf("summaries of the replayed request: %+v; want the first one twice", summaries)
		}
		if got := b.control.Seam.Dropped()[wire.DropReplayed]; got != 0 {
			t.Fatalf("replayed drops = %d, want 0: a replay of a served request is answered by its summary (%v)", got, b.control.Seam.Dropped())
		}
	})

	// Invariants 8 and 9 (bounded cost): bundles close at the event cap, at the byte cap, and at
	// every stream change; one event larger than the byte cap ships alone; keyset pages smaller
	// than the answer lose nothing and reorder nothing.
	t.Run("SplitsBundlesAtTheEventAndByteCaps", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		s.Limits = redelivery.Limits{MaxBundleEvents: 3, MaxBundleBytes: 50, PageSize: 4}
		streamOf(t, b.pool, "a", eventTypes[0], 7, 10)
		var events []store.NewEvent
		for i, size := range []int{30, 30, 60, 12} {
			events = append(events, ownEvent("b", int64(i+1), eventTypes[0], payload(i+1, size)))
		}
		appendStamped(t, b.pool, events...)
		start(t, s, b)
		from, to := seqRange(1, 1<<40)
		a := awaitAnswer(t, b.answers, ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], FromSeq: from, ToSeq: to, MaxEvents: 100}))

		var shape []string
		for i, bundle := range a.bundles {
			shape = append(shape, fmt.Sprintf("%s:%d/%dB", bundle.StreamID, len(bundle.Events), len(a.attachments[i])))
		}
		want := []string{"a:3/30B", "a:3/30B", "a:1/10B", "b:1/30B", "b:1/30B", "b:1/60B", "b:1/12B"}
		if fmt.Sprint(shape) != fmt.Sprint(want) {
			t.Fatalf("bundles %v, want %v", shape, want)
		}
		if a.summary.Shipped != 11 || a.summary.Bundles != 7 {
			t.Fatalf("summary %+v, want 11 events in 7 bundles", a.summary)
		}
		for i, bundle := range a.bundles {
			for j, e := range bundle.Events {
				if want := int64(j + 1 + 3*i); bundle.StreamID == "a" && e.Version != want {
					t.Fatalf("bundle %d event %d is version %d, want %d", i, j, e.Version, want)
				}
			}
		}
	})

	// Issue 18 (a backfill never hurts live traffic much): a backfill's (state-only) answer is
	// paced, page by page, to BackfillShare of the wall time: between pages the build pauses
	// (100 - share) / share times as long as the page took. A plain repair is never paced, nor
	// a backfill at share 100. The pause is the seam (Server.Pause); nothing here waits on time.
	t.Run("ABackfillAnswerIsPacedPageByPageARepairIsNot", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		s.Limits = redelivery.Limits{PageSize: 2, BackfillShare: 25}
		var mu sync.Mutex
		var pauses []time.Duration
		s.Pause = func(_ context.Context, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			pauses = append(pauses, d)
		}
		streamOf(t, b.pool, "a", eventTypes[0], 5, 10)
		start(t, s, b)
		from, to := seqRange(1, 1<<40)
		repair := awaitAnswer(t, b.answers, ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], FromSeq: from, ToSeq: to, MaxEvents: 100}))
		mu.Lock()
		paused := len(pauses)
		mu.Unlock()
		if repair.summary.Shipped != 5 || paused != 0 {
			t.Fatalf("a plain repair shipped %d and paused %d times; want 5, never paused", repair.summary.Shipped, paused)
		}
		backfill := awaitAnswer(t, b.answers, ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], MaxEvents: 100, StateOnly: true}))
		mu.Lock()
		defer mu.Unlock()
		if backfill.summary.Shipped != 5 || len(pauses) != 2 {
			t.Fatalf("a backfill of 5 events in pages of 2 shipped %d and paused %d times (%v); want 5, a pause between each two of its 3 pages",
				backfill.summary.Shipped, len(pauses), pauses)
		}
		for _, d := range pauses {
			if d <= 0 {
				t.Fatalf("pauses %v: want each three times its page's build (share 25%%), so positive", pauses)
			}
		}
	})

	// Issue 18 (a backfill yields to live traffic as much as its work takes from it): a page's
	// pause is counted from the cheapest rate any page of the answer ran at, not from the page's
	// own wall time, so time a page spent waiting (here behind a lock on events; on a busy
	// machine for the CPU, while the live traffic ran) is not paused for again. Before, a page
	// that waited was paused for three times its wait at share 25, and a backfill on a machine
	// its own consumer kept busy spent ~40% of its run paused (bench backfill --quick).
	t.Run("ABackfillPausesForItsPagesWorkNotForTheirWaits", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		s.Limits = redelivery.Limits{PageSize: 2, BackfillShare: 25}
		locked := make(chan pgx.Tx, 1) // the lock on events that holds the second page up
		var lockErr error
		var mu sync.Mutex
		var pauses []time.Duration
		s.Pause = func(ctx context.Context, d time.Duration) {
			mu.Lock()
			pauses = append(pauses, d)
			first := len(pauses) == 1
			mu.Unlock()
			if !first {
				return
			}
			tx, err := b.pool.Begin(ctx)
			if err == nil {
				_, err = tx.Exec(ctx, "lock table streamseal.events in access exclusive mode")
			}
			if err != nil {
				lockErr = err
				close(locked)
				return
			}
			locked <- tx
		}
		streamOf(t, b.pool, "a", eventTypes[0], 5, 10)
		start(t, s, b)
		id := ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], MaxEvents: 100, StateOnly: true})
		var tx pgx.Tx
		select {
		case tx = <-locked:
		case <-time.After(failsafe):
			t.Fatal("the backfill never paused after its first page")
		}
		if tx == nil {
			t.Fatalf("lock events after the first page: %v", lockErr)
		}
		mu.Lock()
		firstPause := pauses[0]
		mu.Unlock()
		// The second page waits on the lock until it has waited longer than the first page
		// took (its pause is three times that): paced by its wall time, it would pause longer.
		deadline := time.Now().Add(failsafe)
		for {
			var waited bool
			if err := b.pool.QueryRow(ctx, `
				select exists (select from pg_stat_activity
				               where datname = current_database() and wait_event_type = 'Lock'
				                 and query like '%select_redelivery%' and clock_timestamp() - query_start > $1)`,
				firstPause/3).Scan(&waited); err != nil {
				t.Fatal(err)
			}
			if waited {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the second page never waited on the lock")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		backfill := awaitAnswer(t, b.answers, id)
		mu.Lock()
		defer mu.Unlock()
		if backfill.summary.Shipped != 5 || len(pauses) != 2 {
			t.Fatalf("a backfill of 5 events in pages of 2 shipped %d and paused %d times (%v); want 5, paused twice",
				backfill.summary.Shipped, len(pauses), pauses)
		}
		if pauses[1] <= 0 || pauses[1] > pauses[0] {
			t.Fatalf("pauses %v: the page that waited on the lock paused %s after the first page's %s; want it paced by its work, no longer than the first page's",
				pauses, pauses[1], pauses[0])
		}
	})

	// Issue 18 (bench backfill: 25 events a bundle, a bundle per stream): a backfill's
	// (state-only) answer packs consecutive streams into one bundle up to the event and byte
	// caps, each event naming its stream past the first; unbundled, every event keeps its own
	// stream and version (invariant 3). A plain repair still closes a bundle at every stream.
	t.Run("ABackfillPacksStreamsIntoBundlesUpToTheCaps", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		s.Limits = redelivery.Limits{MaxBundleEvents: 5, PageSize: 4}
		streamOf(t, b.pool, "a", eventTypes[0], 3, 10)
		streamOf(t, b.pool, "b", eventTypes[0], 3, 10)
		streamOf(t, b.pool, "c", eventTypes[0], 1, 10)
		start(t, s, b)
		a := awaitAnswer(t, b.answers, ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], MaxEvents: 100, StateOnly: true}))
		var shape []string
		var got []string
		for i, bundle := range a.bundles {
			shape = append(shape, fmt.Sprintf("%s:%d", bundle.StreamID, len(bundle.Events)))
			copies, err := redelivery.Unbundle(a.envelopes[i], a.attachments[i])
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range copies {
				got = append(got, fmt.Sprintf("%s/%d", c.StreamID, c.StreamVersion))
			}
		}
		if want := []string{"a:5", "b:2"}; fmt.Sprint(shape) != fmt.Sprint(want) {
			t.Fatalf("bundles %v, want %v", shape, want)
		}
		if want := []string{"a/1", "a/2", "a/3", "b/1", "b/2", "b/3", "c/1"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("unbundled %v, want %v", got, want)
		}
	})

	// Invariants 1 and 14: what a request names and the origin cannot re-deliver is named in the
	// summary with its reason (an at-most-once occurrence is never re-delivered; a number above
	// the counter never existed), and everything else of the request ships.
	t.Run("NamesWhatItCannotServe", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		var events []store.NewEvent
		for v := int64(1); v <= 5; v++ {
			e := ownEvent("s", v, eventTypes[0], payload(int(v), 10))
			if v == 3 {
				e.Flags = store.AtMostOnce
			}
			events = append(events, e)
		}
		appendStamped(t, b.pool, events...)
		start(t, s, b)
		a := awaitAnswer(t, b.answers, ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1],
			TypeSeqRanges: [][2]int64{{1, 6}, {8, 10}}, MaxEvents: 100}))

		if a.summary.Shipped != 4 {
			t.Fatalf("shipped %d, want the 4 events that are not at-most-once", a.summary.Shipped)
		}
		reasons := map[string]string{}
		for _, u := range a.summary.Unservable {
			if u.Tenant != "acme" || u.Type != eventTypes[0] {
				t.Fatalf("unservable entry names tenant %q type %q", u.Tenant, u.Type)
			}
			reasons[u.Reason] = fmt.Sprint(u.TypeSeqs)
		}
		if want := map[string]string{"at_most_once": "[[3 4]]", "never_existed": "[[8 10]]"}; fmt.Sprint(reasons) != fmt.Sprint(want) {
			t.Fatalf("unservable %+v, want %v", a.summary.Unservable, want)
		}
	})

	// Invariant 14 (every request reaches an answer): a request the origin accepted (the broker
	// forgot it) and had not served when the process died is served by the restarted process.
	// Before the durable queue it waited in memory and was lost with the process.
	t.Run("ServesARequestAcceptedBeforeACrash", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		streamOf(t, b.pool, "s", eventTypes[0], 5, 10)
		s.Register(b.control)
		stop := testrun.Go(t, "control endpoint", b.control.Run) // accepts; no build ever runs
		from, to := seqRange(1, 1<<40)
		id := ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], FromSeq: from, ToSeq: to, MaxEvents: 100})
		testrun.WaitFor(t, "the request accepted", func() bool { return b.control.Finished() == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}

		// The restarted process: a new server and control endpoint over the same database and bus.
		_, js := b.nats.Connect(t, "orders-restarted")
		restarted := &redelivery.Server{Pool: b.pool, JS: js, Service: "orders", Logger: testrun.Logger(t)}
		control := natstest.Control(t, js, "orders")
		restarted.Register(control)
		testrun.Go(t, "restarted control endpoint", control.Run)
		testrun.Go(t, "restarted redelivery server", restarted.Run)
		a := awaitAnswer(t, b.answers, id)
		if a.summary.Shipped != 5 || a.summary.Truncated {
			t.Fatalf("summary %+v; want the 5 events served after the restart", a.summary)
		}
		if received, _, _ := restarted.Counts(); received != 0 {
			t.Fatalf("the broker handed the request to the restarted process %d times; it was served from the queue", received)
		}
	})

	// Invariant 14 (every loss repaired, promptly): a repair accepted while backfill answers wait
	// is served before them, so a lost event's redelivery never queues behind a new consumer's
	// history (a paced backfill answer takes seconds each, and a broadcast asks for many).
	t.Run("ARepairIsServedBeforeBackfillsAcceptedEarlier", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		s.Pause = func(context.Context, time.Duration) {}
		streamOf(t, b.pool, "s", eventTypes[0], 5, 10)
		s.Register(b.control)
		testrun.Go(t, "control endpoint", b.control.Run) // accepts; the server starts below
		backfill := ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], MaxEvents: 100, StateOnly: true})
		testrun.WaitFor(t, "the backfill request accepted", func() bool { return b.control.Finished() == 1 })
		from, to := seqRange(1, 1<<40)
		repair := ask(t, b, wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], FromSeq: from, ToSeq: to, MaxEvents: 100})
		testrun.WaitFor(t, "the repair request accepted", func() bool { return b.control.Finished() == 2 })

		testrun.Go(t, "redelivery server", s.Run)
		awaitAnswer(t, b.answers, backfill)
		awaitAnswer(t, b.answers, repair)
		order := answerOrder(t, b.answers.Messages())
		if len(order) != 2 || order[0] != repair {
			t.Fatalf("answers were served in the order %v; want the repair %s first, then the backfill %s accepted before it",
				order, repair, backfill)
		}
	})

	// Invariant 14: an answer cut by the origin's cap says where the rest starts, and a request
	// continued from there ships exactly the rest.
	t.Run("ATruncatedAnswerSaysWhereTheRestStarts", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		streamOf(t, b.pool, "s", eventTypes[0], 3, 10)
		streamOf(t, b.pool, "t", eventTypes[0], 2, 10)
		start(t, s, b)
		from, to := seqRange(1, 1<<40)
		req := wire.RedeliveryRequest{Tenants: acme, Types: eventTypes[:1], FromSeq: from, ToSeq: to, MaxEvents: 4}
		first := awaitAnswer(t, b.answers, ask(t, b, req))
		if !first.summary.Truncated || first.summary.Shipped != 4 || first.summary.ResumeAfter == nil ||
			*first.summary.ResumeAfter != (wire.Position{Stream: "t", Version: 1}) {
			t.Fatalf("summary %+v (resume after %+v); want 4 shipped, truncated, the rest after t/1", first.summary, first.summary.ResumeAfter)
		}
		req.After = first.summary.ResumeAfter
		rest := awaitAnswer(t, b.answers, ask(t, b, req))
		if rest.summary.Truncated || rest.summary.Shipped != 1 || len(rest.bundles) != 1 ||
			rest.bundles[0].StreamID != "t" || rest.bundles[0].Events[0].Version != 2 {
			t.Fatalf("the rest: summary %+v, bundles %+v; want t/2 alone", rest.summary, rest.bundles)
		}
	})
}
