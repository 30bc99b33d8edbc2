package redelivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/checkpointtest"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestReceiver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		pool    *pgxpool.Pool // the receiver's ("billing") database
		nats    *natstest.Server
		control *wire.Control       // billing's control endpoint
		orders  jetstream.JetStream // the origin's connection, sending bundles and summaries
		billing jetstream.JetStream // the receiver's connection, asking
	}

	setup := func(t *testing.T) (*redelivery.Receiver, *testBundle) {
		t.Helper()
		pool := dbtest.NewPool(t, "billing")
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "billing")
		_, orders := srv.Connect(t, "orders")
		return &redelivery.Receiver{Pool: pool, Service: "billing", Logger: testrun.Logger(t)},
			&testBundle{pool: pool, nats: srv, control: natstest.Control(t, js, "billing"), orders: orders, billing: js}
	}

	start := func(t *testing.T, r *redelivery.Receiver, b *testBundle) {
		t.Helper()
		r.Register(b.control)
		testrun.Go(t, "control endpoint", b.control.Run)
	}

	// ask sends a redelivery request from billing to orders and returns its id: the bundles a
	// test sends answer a request billing really sent (invariant 12).
	ask := func(t *testing.T, b *testBundle) string {
		t.Helper()
		id, err := redelivery.Request(ctx, b.pool, b.billing, "billing", "orders", wire.RedeliveryRequest{Tenants: []string{"acme"}, Types: eventTypes[:1]})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	// send publishes a control message of kind from sender to billing, as sender's control plane would.
	send := func(t *testing.T, b *testBundle, kind, sender string, body any, attachment []byte) {
		t.Helper()
		env, err := wire.NewEnvelope(kind, sender, "billing", body)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Publish(ctx, b.orders, env, attachment); err != nil {
			t.Fatal(err)
		}
	}

	// Invariant 3 (identity): a bundle's events are stored with the identity the origin stamped
	// and their payload bytes exactly as they travelled; a backfill bundle marks its events
	// state-only.
	t.Run("StoresABundleWithItsIdentityAndRawBytes", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		live, backfill := ordersCopies("s", 1, 3), ordersCopies("t", 4, 2)
		liveBundle, liveBytes := bundleOf(ask(t, b), false, live)
		backfillBundle, backfillBytes := bundleOf(ask(t, b), true, backfill)
		send(t, b, wire.KindRedeliveryBundle, "orders", liveBundle, liveBytes)
		send(t, b, wire.KindRedeliveryBundle, "orders", backfillBundle, backfillBytes)
		start(t, r, b)
		testrun.WaitFor(t, "five events stored", func() bool { _, stored, _ := r.Counts(); return stored == 5 })

		for i := range backfill {
			backfill[i].Flags |= store.StateOnly
		}
		want := append(live, backfill...)
		got := lane(t, b.pool, "orders")
		if len(got) != len(want) {
			t.Fatalf("billing holds %d copies, want %d", len(got), len(want))
		}
		for i := range want {
			if !sameCopy(got[i], want[i]) {
				t.Fatalf("copy %d stored as %+v, sent %+v", i, got[i], want[i])
			}
		}
		if bundles, _, refused := r.Counts(); bundles != 2 || refused != 0 {
			t.Fatalf("counts: %d bundles, %d refused; want 2 and 0", bundles, refused)
		}
	})

	// Invariants 3 and 13: a bundle whose event lengths disagree with its payload bytes is refused
	// whole (none of its events stored, not even the ones that would parse), and the bundles
	// around it in the same run are stored.
	t.Run("RefusesAnInconsistentBundleAndStoresTheRestOfItsRun", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		first, second := ordersCopies("a", 1, 2), ordersCopies("c", 5, 2)
		id := ask(t, b)
		bad, badBytes := bundleOf(id, false, ordersCopies("b", 3, 2))
		bad.Events[1].Len += 5 // the events claim 5 bytes the attachment does not hold
		firstBundle, firstBytes := bundleOf(id, false, first)
		secondBundle, secondBytes := bundleOf(id, false, second)
		send(t, b, wire.KindRedeliveryBundle, "orders", firstBundle, firstBytes)
		send(t, b, wire.KindRedeliveryBundle, "orders", bad, badBytes)
		send(t, b, wire.KindRedeliveryBundle, "orders", secondBundle, secondBytes)
		start(t, r, b) // after sending: the three arrive as one run
		testrun.WaitFor(t, "all three bundles handled", func() bool { return b.control.Finished() == 3 })

		if _, stored, refused := r.Counts(); stored != 4 || refused != 1 {
			t.Fatalf("counts: %d stored, %d refused; want the 4 events of the good bundles and 1 refusal", stored, refused)
		}
		got := lane(t, b.pool, "orders")
		for _, e := range got {
			if e.StreamID == "b" {
				t.Fatalf("an event of the refused bundle was stored: %+v", e)
			}
		}
		if len(got) != 4 {
			t.Fatalf("billing holds %d copies, want the 4 of the good bundles", len(got))
		}
	})

	// Invariants 2 and 13: a large run is ingested in parts of whole bundles at once; when ingest
	// refuses one bundle of the second part (an unknown flag bit), the first part is already
	// stored, and the retry of each bundle alone stores the rest once, refuses the bad bundle whole
	// and counts every event stored exactly once.
	t.Run("IngestsALargeRunInPartsOfWholeBundlesAndRefusesABadOneAlone", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		r.IngestParallel = 2
		id := ask(t, b)
		var good []store.EventCopy
		for i, stream := range []string{"a", "b", "c", "d"} {
			copies := ordersCopies(stream, int64(1+150*i), 150)
			if stream == "d" {
				copies[7].Flags = 8
			} else {
				good = append(good, copies...)
			}
			bundle, attachment := bundleOf(id, true, copies)
			send(t, b, wire.KindRedeliveryBundle, "orders", bundle, attachment)
		}
		start(t, r, b) // after sending: the four arrive as one run
		testrun.WaitFor(t, "all four bundles handled", func() bool { return b.control.Finished() == 4 })

		if _, stored, refused := r.Counts(); stored != int64(len(good)) || refused != 1 {
			t.Fatalf("counts: %d stored, %d refused; want the %d events of the good bundles and 1 refusal", stored, refused, len(good))
		}
		got := lane(t, b.pool, "orders")
		if len(got) != len(good) {
			t.Fatalf("billing holds %d copies, want the %d of the good bundles", len(got), len(good))
		}
		for _, e := range got {
			if e.StreamID == "d" {
				t.Fatalf("an event of the refused bundle was stored: %+v", e)
			}
		}
	})

	// Invariant 12 (authenticity): a bundle sent by one origin claiming another origin's events
	// is refused whole; an origin re-delivers only its own lane.
	t.Run("RefusesABundleClaimingAnotherOrigin", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		forged := ordersCopies("s", 1, 2)
		for i := range forged {
			forged[i].Origin = "payments"
		}
		bundle, bytes := bundleOf(ask(t, b), false, forged)
		send(t, b, wire.KindRedeliveryBundle, "orders", bundle, bytes)
		start(t, r, b)
		testrun.WaitFor(t, "the bundle handled", func() bool { return b.control.Finished() == 1 })
		if _, stored, refused := r.Counts(); stored != 0 || refused != 1 {
			t.Fatalf("counts: %d stored, %d refused; want nothing stored and 1 refusal", stored, refused)
		}
		if n := len(lane(t, b.pool, "payments")) + len(lane(t, b.pool, "orders")); n != 0 {
			t.Fatalf("billing stored %d events of a forged bundle", n)
		}
	})

	// Invariant 2 (idempotence): the same bundle received again adds no row and moves no digest.
	t.Run("ARedeliveredBundleAddsNothing", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		bundle, bytes := bundleOf(ask(t, b), false, ordersCopies("s", 1, 3))
		start(t, r, b)
		send(t, b, wire.KindRedeliveryBundle, "orders", bundle, bytes)
		testrun.WaitFor(t, "the first bundle handled", func() bool { return b.control.Finished() == 1 })
		before, err := store.StreamDigests(ctx, b.pool)
		if err != nil {
			t.Fatal(err)
		}
		send(t, b, wire.KindRedeliveryBundle, "orders", bundle, bytes)
		testrun.WaitFor(t, "the second bundle handled", func() bool { return b.control.Finished() == 2 })
		after, err := store.StreamDigests(ctx, b.pool)
		if err != nil {
			t.Fatal(err)
		}
		if bundles, stored, refused := r.Counts(); bundles != 2 || stored != 3 || refused != 0 {
			t.Fatalf("counts: %d bundles, %d stored, %d refused; want 2, 3 (nothing new the second time), 0", bundles, stored, refused)
		}
		if n := len(lane(t, b.pool, "orders")); n != 3 {
			t.Fatalf("billing holds %d rows, want 3", n)
		}
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Fatalf("digests moved: %+v -> %+v", before, after)
		}
	})

	// Invariant 6: a hole clears only by its arrival or by a recorded acceptance. When the origin's
	// summary of billing's request for a confirmed hole says it cannot be re-delivered, the
	// receiver records it as an accepted loss and the lane's floor passes it; the zero-valued
	// receiver only reports it.
	t.Run("RecordsWhatTheOriginCannotServeAsAnAcceptedLoss", func(t *testing.T) {
		t.Parallel()
		for _, accept := range []bool{false, true} {
			t.Run(fmt.Sprintf("AcceptUnservable=%v", accept), func(t *testing.T) {
				t.Parallel()
				r, b := setup(t)
				requestID := laneWithRequestedHole(t, b.pool, b.nats)
				summaries := make(chan wire.RedeliverySummary, 1)
				r.AcceptUnservable = accept
				r.OnSummary = func(s wire.RedeliverySummary) { summaries <- s }
				start(t, r, b)
				send(t, b, wire.KindRedeliverySummary, "orders", wire.RedeliverySummary{RequestID: requestID, Origin: "orders",
					Unservable: []wire.Unservable{{Tenant: "acme", Type: eventTypes[0], Reason: "absent", TypeSeqs: [][2]int64{{3, 4}}}}}, nil)
				if s := testrun.Receive(t, "the summary", summaries); s.RequestID != requestID || len(s.Unservable) != 1 {
					t.Fatalf("summary observed as %+v", s)
				}
				want := "floor 2, holes {[3,4)}, accepted losses {}"
				if accept {
					want = "floor 5, holes {}, accepted losses {[3,4)}"
				}
				if got := laneState(t, b.pool); got != want {
					t.Fatalf("lane: %s; want %s", got, want)
				}
			})
		}
	})

	// Invariant 12 (answers only answer requests): a bundle is stored only when it answers a
	// request billing sent, that is still open (or answered less than the answer grace ago), to
	// the origin that sends it, and only within that request's scope. Each forgery is dropped and
	// counted with its reason; nothing of it is stored. The receiver runs with the control
	// plane's grace, so the replay proven here is one that comes after it.
	t.Run("DropsBundlesThatAnswerNoOpenRequestOrLeaveItsScope", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		r.AnswerGrace = redelivery.AnswerGraceDefault
		summaries := make(chan wire.RedeliverySummary, 1)
		r.OnSummary = func(s wire.RedeliverySummary) { summaries <- s }
		_, shipping := b.nats.Connect(t, "shipping")
		start(t, r, b)

		// Unsolicited: a request id billing never sent.
		unsolicited, unsolicitedBytes := bundleOf(uuid.NewString(), false, ordersCopies("u", 1, 2))
		send(t, b, wire.KindRedeliveryBundle, "orders", unsolicited, unsolicitedBytes)
		// Unsolicited: shipping answering (as itself) a request billing sent to orders.
		asked := ask(t, b)
		fromShipping := ordersCopies("v", 3, 2)
		for i := range fromShipping {
			fromShipping[i].Origin = "shipping"
		}
		shippingBundle, shippingBytes := bundleOf(asked, false, fromShipping)
		env, err := wire.NewEnvelope(wire.KindRedeliveryBundle, "shipping", "billing", shippingBundle)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Publish(ctx, shipping, env, shippingBytes); err != nil {
			t.Fatal(err)
		}
		// Out of scope: the request asked for tenant acme, type eventTypes[0]; this bundle holds
		// another type and another tenant.
		otherType, otherTenant := ordersCopies("w", 5, 1), ordersCopies("x", 6, 1)
		otherType[0].EventType, otherTenant[0].Tenant = eventTypes[1], "globex"
		for _, c := range [][]store.EventCopy{otherType, otherTenant} {
			bundle, bytes := bundleOf(asked, false, c)
			send(t, b, wire.KindRedeliveryBundle, "orders", bundle, bytes)
		}
		// Replayed: a bundle of a request answered (its final summary came) longer ago than the grace.
		old := ask(t, b)
		send(t, b, wire.KindRedeliverySummary, "orders", wire.RedeliverySummary{RequestID: old, Origin: "orders"}, nil)
		testrun.Receive(t, "the summary of the answered request", summaries)
		if _, err := b.pool.Exec(ctx, "update streamseal.sent_requests set answered_at = answered_at - make_interval(secs => $2) where request_id = $1",
			old, redelivery.AnswerGraceDefault.Seconds()); err != nil {
			t.Fatal(err)
		}
		replayed, replayedBytes := bundleOf(old, false, ordersCopies("y", 7, 2))
		send(t, b, wire.KindRedeliveryBundle, "orders", replayed, replayedBytes)
		// Forged sender: on shipping's subject, claiming orders.
		forged, forgedBytes := bundleOf(asked, false, ordersCopies("z", 9, 2))
		forgedEnv, err := wire.NewEnvelope(wire.KindRedeliveryBundle, "orders", "billing", forged)
		if err != nil {
			t.Fatal(err)
		}
		data, err := wire.Encode(forgedEnv, forgedBytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := shipping.Publish(ctx, wire.ControlSubjectFrom("billing", "shipping"), data); err != nil {
			t.Fatal(err)
		}
		// And the one honest bundle, last: everything before it has been handled when it is stored.
		good, goodBytes := bundleOf(asked, false, ordersCopies("g", 11, 2))
		send(t, b, wire.KindRedeliveryBundle, "orders", good, goodBytes)
		testrun.WaitFor(t, "every message handled", func() bool { return b.control.Finished() == 8 })

		want := map[string]int64{wire.DropUnsolicited: 2, wire.DropOutOfScope: 2, wire.DropReplayed: 1, wire.DropForgedSender: 1}
		if got := b.control.Seam.Dropped(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("drops %v, want %v", got, want)
		}
		if got := lane(t, b.pool, "orders"); len(got) != 2 || got[0].StreamID != "g" || len(lane(t, b.pool, "shipping")) != 0 {
			t.Fatalf("billing holds %d events of orders (%+v) and %d of shipping; want only the honest bundle's 2",
				len(got), got, len(lane(t, b.pool, "shipping")))
		}
	})

	// Invariants 1 and 14: replicas of one service share the control durable, so one replica can
	// handle an answer's summary before another has stored the bundles it fetched ahead of it.
	// Those bundles are handled after their summary; within the answer grace they are stored,
	// byte-equal, instead of dropped as replayed and asked for again a checkpoint later. Without a
	// grace none is stored (the drop this fixes).
	t.Run("StoresABundleHandledAfterItsSummaryByAnotherReplica", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name   string
			grace  time.Duration
			stored int
		}{{"NoGrace", 0, 0}, {"DefaultGrace", redelivery.AnswerGraceDefault, 5}} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				r, b := setup(t)
				r.AnswerGrace = c.grace
				summaries := make(chan wire.RedeliverySummary, 1)
				r.OnSummary = func(s wire.RedeliverySummary) { summaries <- s }
				start(t, r, b)
				id := ask(t, b)
				first, second := ordersCopies("s", 1, 3), ordersCopies("t", 4, 2)
				// The summary first, as the replica that handled it would leave the store.
				send(t, b, wire.KindRedeliverySummary, "orders", wire.RedeliverySummary{RequestID: id, Origin: "orders", Shipped: 5, Bundles: 2}, nil)
				testrun.Receive(t, "the summary handled", summaries)
				// Then the bundles it followed on the wire, handled late by this replica.
				for _, copies := range [][]store.EventCopy{first, second} {
					bundle, bytes := bundleOf(id, false, copies)
					send(t, b, wire.KindRedeliveryBundle, "orders", bundle, bytes)
				}
				testrun.WaitFor(t, "both bundles handled", func() bool { return b.control.Finished() == 3 })

				got := lane(t, b.pool, "orders")
				if len(got) != c.stored {
					t.Fatalf("billing holds %d of the answer's 5 events handled after its summary with grace %v; want %d (drops %v)",
						len(got), c.grace, c.stored, b.control.Seam.Dropped())
				}
				if c.stored == 0 {
					if want := map[string]int64{wire.DropReplayed: 2}; fmt.Sprint(b.control.Seam.Dropped()) != fmt.Sprint(want) {
						t.Fatalf("drops %v, want %v", b.control.Seam.Dropped(), want)
					}
					return
				}
				for i, want := range append(first, second...) {
					if !sameCopy(got[i], want) {
						t.Fatalf("copy %d stored as %+v, sent %+v", i, got[i], want)
					}
				}
			})
		}
	})

	// Invariant 12, the forged "cannot re-deliver" summary: a summary turns a confirmed gap into
	// accepted loss only when it answers billing's open request for it, from the origin asked,
	// within the request's scope, once. A forged summary (another sender, an unknown request, a
	// claim outside the request, a replay) changes no lane.
	t.Run("ForgedSummariesLeaveAConfirmedGapAlone", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		requestID := laneWithRequestedHole(t, b.pool, b.nats)
		r.AcceptUnservable = true
		_, shipping := b.nats.Connect(t, "shipping")
		start(t, r, b)
		hole := []wire.Unservable{{Tenant: "acme", Type: eventTypes[0], Reason: "absent", TypeSeqs: [][2]int64{{3, 4}}}}
		// Readiness reads lanes with a confirmed gap: one before, and still one after the forgeries.
		confirmedGaps := func() int64 {
			all, _, err := store.LanesWithConfirmedGapsCount(ctx, b.pool, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return all
		}
		if n := confirmedGaps(); n != 1 {
			t.Fatalf("premise: %d lanes with a confirmed gap, want 1", n)
		}

		// On shipping's subject claiming orders.
		forgedEnv, err := wire.NewEnvelope(wire.KindRedeliverySummary, "orders", "billing",
			wire.RedeliverySummary{RequestID: requestID, Origin: "orders", Unservable: hole})
		if err != nil {
			t.Fatal(err)
		}
		data, err := wire.Encode(forgedEnv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := shipping.Publish(ctx, wire.ControlSubjectFrom("billing", "shipping"), data); err != nil {
			t.Fatal(err)
		}
		// Shipping as itself, answering billing's request to orders.
		send(t, b, wire.KindRedeliverySummary, "shipping", wire.RedeliverySummary{RequestID: requestID, Origin: "shipping", Unservable: hole}, nil)
		// Orders' name, a request id billing never sent.
		send(t, b, wire.KindRedeliverySummary, "orders", wire.RedeliverySummary{RequestID: uuid.NewString(), Origin: "orders", Unservable: hole}, nil)
		// The right request, a claim beyond it: type_seqs 3..1000 when 3 was asked for.
		send(t, b, wire.KindRedeliverySummary, "orders", wire.RedeliverySummary{RequestID: requestID, Origin: "orders",
			Unservable: []wire.Unservable{{Tenant: "acme", Type: eventTypes[0], Reason: "absent", TypeSeqs: [][2]int64{{3, 1000}}}}}, nil)
		testrun.WaitFor(t, "the forgeries handled", func() bool { return b.control.Finished() == 4 })
		if got := laneState(t, b.pool); got != "floor 2, holes {[3,4)}, accepted losses {}" {
			t.Fatalf("forged summaries moved the lane: %s", got)
		}
		if n := confirmedGaps(); n != 1 {
			t.Fatalf("forged summaries left %d lanes with a confirmed gap, want 1 (readiness must stay degraded)", n)
		}
		want := map[string]int64{wire.DropUnsolicited: 2, wire.DropOutOfScope: 1, wire.DropForgedSender: 1}
		if got := b.control.Seam.Dropped(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("drops %v, want %v", got, want)
		}
		var answered bool
		if err := b.pool.QueryRow(ctx, "select answered_at is not null from streamseal.sent_requests where request_id = $1", requestID).
			Scan(&answered); err != nil || answered {
			t.Fatalf("the request is marked answered (%v) by forged summaries", err)
		}
	})

	// Invariant 14: a truncated answer is followed at once by a request for the rest: the same
	// scope, continued after the last event shipped, recorded as a follow-up of the first. A
	// truncated answer to a request billing never sent, or one that does not move past where its
	// request started, is followed by nothing.
	t.Run("FollowsATruncatedAnswerWithARequestForTheRest", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		_, js := b.nats.Connect(t, "billing-requests")
		r.JS = js
		requests := b.nats.Record(t, wire.ControlStream, wire.ControlFilters("orders")[0])
		start(t, r, b)
		from, to := seqRange(1, 1000)
		req := wire.RedeliveryRequest{Tenants: []string{"acme"}, Types: eventTypes[:1], Streams: []string{"s", "t"},
			FromSeq: from, ToSeq: to, MaxEvents: 4}
		id, err := redelivery.Request(ctx, b.pool, js, "billing", "orders", req)
		if err != nil {
			t.Fatal(err)
		}
		stranger := uuid.NewString()
		send(t, b, wire.KindRedeliverySummary, "orders", wire.RedeliverySummary{RequestID: stranger, Origin: "orders", Shipped: 4,
			Truncated: true, ResumeAfter: &wire.Position{Stream: "s", Version: 9}}, nil)
		send(t, b, wire.KindRedeliverySummary, "orders", wire.RedeliverySummary{RequestID: id, Origin: "orders", Shipped: 4,
			Truncated: true, ResumeAfter: &wire.Position{Stream: "s", Version: 4}}, nil)

		envs, _ := natstest.Envelopes(t, requests.AwaitCount(t, "the request and its follow-up", 2))
		var rest wire.RedeliveryRequest
		if err := json.Unmarshal(envs[1].Body, &rest); err != nil {
			t.Fatal(err)
		}
		want := req
		want.RequestID, want.After = rest.RequestID, &wire.Position{Stream: "s", Version: 4}
		if envs[1].From != "billing" || envs[1].To != "orders" || rest.RequestID == id ||
			!reflect.DeepEqual(rest, want) {
			t.Fatalf("follow-up %+v (after %+v); want the request continued after s/4 under a new id", rest, rest.After)
		}
		var follows uuid.UUID
		var source string
		if err := b.pool.QueryRow(ctx, "select source, follows from streamseal.sent_requests where request_id = $1", rest.RequestID).
			Scan(&source, &follows); err != nil || source != "follow_up" || follows.String() != id {
			t.Fatalf("the follow-up is recorded as %q following %s (%v); want follow_up following %s", source, follows, err, id)
		}

		// The follow-up's own answer is truncated at a point that does not move: not followed.
		send(t, b, wire.KindRedeliverySummary, "orders", wire.RedeliverySummary{RequestID: rest.RequestID, Origin: "orders",
			Shipped: 4, Truncated: true, ResumeAfter: &wire.Position{Stream: "s", Version: 4}}, nil)
		testrun.WaitFor(t, "every summary handled", func() bool { return b.control.Finished() == 3 })
		if n := b.nats.Count(t, wire.ControlStream, wire.ControlFilters("orders")[0]); n != 2 || r.FollowUps() != 1 {
			t.Fatalf("%d requests on orders' subject, %d follow-ups; want only the request and one follow-up", n, r.FollowUps())
		}
	})

	// Invariants 2 and 14: a truncated answer's summary is acted on twice, ahead (when its batch
	// is fetched, before the bundles ahead of it are stored) and at its turn, and may be delivered
	// twice (a crash before its ack): the rest is still asked for under one request id, recorded
	// once, so the origin serves it once (its served requests keep an id once), and the bundles
	// ahead of the summary are stored.
	t.Run("AsksForTheRestOfATruncatedAnswerUnderOneIdHoweverOftenItsSummaryIsSeen", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		_, js := b.nats.Connect(t, "billing-requests")
		r.JS = js
		requests := b.nats.Record(t, wire.ControlStream, wire.ControlFilters("orders")[0])
		req := wire.RedeliveryRequest{Tenants: []string{"acme"}, Types: eventTypes[:1], MaxEvents: 3}
		id, err := redelivery.Request(ctx, b.pool, js, "billing", "orders", req)
		if err != nil {
			t.Fatal(err)
		}
		copies := ordersCopies("s", 1, 3)
		bundle, bytes := bundleOf(id, false, copies)
		send(t, b, wire.KindRedeliveryBundle, "orders", bundle, bytes)
		summary := wire.RedeliverySummary{RequestID: id, Origin: "orders", Shipped: 3, Bundles: 1, Truncated: true,
			ResumeAfter: &wire.Position{Stream: "s", Version: 3}}
		send(t, b, wire.KindRedeliverySummary, "orders", summary, nil)
		send(t, b, wire.KindRedeliverySummary, "orders", summary, nil)
		start(t, r, b)
		testrun.WaitFor(t, "the bundle and both summaries handled", func() bool { return b.control.Finished() == 3 })

		if got := lane(t, b.pool, "orders"); len(got) != 3 {
			t.Fatalf("billing holds %d copies; want the bundle's 3", len(got))
		}
		published := b.nats.Count(t, wire.ControlStream, wire.ControlFilters("orders")[0])
		envs, _ := natstest.Envelopes(t, requests.AwaitCount(t, "every request published", max(int(published), 2)))
		followUps := map[string]bool{}
		for _, env := range envs[1:] {
			var rest wire.RedeliveryRequest
			if err := json.Unmarshal(env.Body, &rest); err != nil {
				t.Fatal(err)
			}
			if rest.After == nil || *rest.After != *summary.ResumeAfter {
				t.Fatalf("follow-up %s continues after %+v; want after s/3", rest.RequestID, rest.After)
			}
			followUps[rest.RequestID] = true
		}
		var recorded int
		if err := b.pool.QueryRow(ctx, "select count(*) from streamseal.sent_requests where follows = $1", id).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		if len(followUps) != 1 || recorded != 1 || r.FollowUps() != 1 {
			t.Fatalf("follow-ups published under ids %v, %d recorded, %d counted; want one id, recorded and counted once",
				followUps, recorded, r.FollowUps())
		}
	})
}

// Unbundle is the receiving side's check of a bundle: it refuses whatever is not internally
// consistent (invariant 3) or not the sender's own lane (invariant 12), and slices payloads
// without letting one copy's bytes run into the next.
func TestUnbundle(t *testing.T) {
	t.Parallel()
	good, goodBytes := bundleOf("r", false, ordersCopies("s", 1, 3))
	envelope := func(from string, body any) wire.Envelope {
		env, err := wire.NewEnvelope(wire.KindRedeliveryBundle, from, "billing", body)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}

	t.Run("SlicesEachPayloadExactly", func(t *testing.T) {
		t.Parallel()
		copies, err := redelivery.Unbundle(envelope("orders", good), goodBytes)
		if err != nil {
			t.Fatal(err)
		}
		second := string(copies[1].Payload)
		copies[0].Payload = append(copies[0].Payload, "overwrite"...)
		if string(copies[1].Payload) != second {
			t.Fatalf("appending to one copy's payload changed the next one's: %q", copies[1].Payload)
		}
	})

	withEvents := func(mutate func([]wire.BundleEvent) []wire.BundleEvent) wire.Bundle {
		b := good
		b.Events = mutate(append([]wire.BundleEvent(nil), good.Events...))
		return b
	}
	for _, c := range []struct {
		name       string
		from       string
		body       any
		attachment []byte
		reason     string
	}{
		{"RefusesANegativeLength", "orders", withEvents(func(e []wire.BundleEvent) []wire.BundleEvent { e[0].Len = -1; return e }), goodBytes, "claims -1 payload bytes"},
		{"RefusesALengthBeyondTheAttachment", "orders", withEvents(func(e []wire.BundleEvent) []wire.BundleEvent { e[2].Len = 1 << 20; return e }), goodBytes, "payload bytes"},
		{"RefusesBytesNoEventClaims", "orders", good, append(append([]byte(nil), goodBytes...), "trailing"...), "attachment holds"},
		{"RefusesAnEmptyBundle", "orders", withEvents(func([]wire.BundleEvent) []wire.BundleEvent { return nil }), nil, "holds no events"},
		{"RefusesAnotherOriginsEvents", "payments", good, goodBytes, "re-delivers only its own lane"},
		{"RefusesAnUnknownField", "orders", map[string]any{"request_id": "r", "origin": "orders", "stream_id": "s", "events": good.Events, "extra": 1}, goodBytes, "unknown field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			copies, err := redelivery.Unbundle(envelope(c.from, c.body), c.attachment)
			if err == nil || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("Unbundle = %d copies, %v; want a refusal mentioning %q", len(copies), err, c.reason)
			}
		})
	}
}

// ordersCopies are n events of origin "orders" in stream, origin_seq and version from..from+n-1.
func ordersCopies(stream string, from int64, n int) []store.EventCopy {
	var out []store.EventCopy
	for i := range int64(n) {
		seq := from + i
		out = append(out, store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: seq, TypeSeq: seq, Tenant: "acme",
			StreamID: stream, StreamVersion: i + 1, EventType: eventTypes[0], Payload: []byte(payload(int(seq), 12+int(seq))),
			Metadata:   []byte(`{"trace": "` + uuid.NewString() + `"}`), // jsonb's own rendering, so it reads back equal
			OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, int(seq)*1000, time.UTC)})
	}
	return out
}

// bundleOf builds the bundle an origin would send for copies of one stream.
func bundleOf(requestID string, stateOnly bool, copies []store.EventCopy) (wire.Bundle, []byte) {
	b := wire.Bundle{RequestID: requestID, Origin: copies[0].Origin, StreamID: copies[0].StreamID, StateOnly: stateOnly}
	var attachment []byte
	for _, c := range copies {
		b.Events = append(b.Events, wire.BundleEvent{ID: c.EventID, OriginSeq: c.OriginSeq, TypeSeq: c.TypeSeq, Tenant: c.Tenant,
			Type: c.EventType, Version: c.StreamVersion, Flags: int32(c.Flags), Len: len(c.Payload), Metadata: string(c.Metadata),
			OccurredAt: c.OccurredAt})
		attachment = append(attachment, c.Payload...)
	}
	return b, attachment
}

// laneWithRequestedHole gives billing a lane of orders' eventTypes[0] for tenant acme whose
// type_seq 3 is missing (copies 1, 2, 4 and 5 stored), confirmed by two checkpoints and requested
// from orders as billing's checkpoint verifier does; it returns the request's id.
func laneWithRequestedHole(t *testing.T, pool *pgxpool.Pool, srv *natstest.Server) string {
	t.Helper()
	ctx := context.Background()
	if err := store.SubscriptionsAdd(ctx, pool, "", eventTypes[:1], store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	copies := ordersCopies("s", 1, 5)
	if _, err := store.EventsIngest(ctx, pool, append(copies[:2:2], copies[3:]...)); err != nil {
		t.Fatal(err)
	}
	requests := srv.Record(t, wire.ControlStream, wire.ControlFilters("orders")[0])
	_, js := srv.Connect(t, "billing")
	checkpointtest.VerifyAndRequest(t, pool, js, "billing", checkpointtest.Announcing("orders", eventTypes[0], 1, 6, "acme", 1, 5))
	checkpointtest.VerifyAndRequest(t, pool, js, "billing", checkpointtest.Heartbeat("orders", eventTypes[0], "acme", 6, 6))
	envs, _ := natstest.Envelopes(t, requests.AwaitCount(t, "billing's request for the hole", 1))
	var req wire.RedeliveryRequest
	if err := json.Unmarshal(envs[0].Body, &req); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(req.TypeSeqRanges) != "[[3 4]]" {
		t.Fatalf("premise: billing requested %v, want [[3 4]]", req.TypeSeqRanges)
	}
	if got := laneState(t, pool); got != "floor 2, holes {[3,4)}, accepted losses {}" {
		t.Fatalf("premise: lane %s", got)
	}
	return req.RequestID
}

// laneState renders the lane of laneWithRequestedHole: its floor, its holes (suspected and
// confirmed) and its accepted losses.
func laneState(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var floor int64
	var holes, accepted string
	if err := pool.QueryRow(context.Background(), `
		select floor, (suspected + confirmed)::text, accepted_losses::text from streamseal.lanes
		where origin = 'orders' and tenant = 'acme' and event_type = $1`, eventTypes[0]).Scan(&floor, &holes, &accepted); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("floor %d, holes %s, accepted losses %s", floor, holes, accepted)
}

// TestAnswerGraceCoversTheControlRedeliveryHorizon pins AnswerGraceDefault to the longest a bundle
// can still be handled after its summary (invariants 1 and 14): a bundle precedes its summary on
// the control subject, so its first delivery came before the summary was handled, and the broker
// can deliver it again MaxDeliver times, each after the AckWait or the retry delay. Raising any of
// those constants past the grace fails here instead of dropping late bundles as replayed.
func TestAnswerGraceCoversTheControlRedeliveryHorizon(t *testing.T) {
	t.Parallel()
	var horizon time.Duration
	for n := uint64(1); n < wire.MaxDeliverDefault; n++ {
		horizon += wire.ControlAckWait + wire.RetryDelay(wire.RetryBaseDefault, n)
	}
	horizon += wire.ControlAckWait // the last delivery's handling
	if horizon != 902*time.Second {
		t.Errorf("control redelivery horizon = %v, want 902s as AnswerGraceDefault's comment says: update it", horizon)
	}
	if redelivery.AnswerGraceDefault < horizon {
		t.Fatalf("AnswerGraceDefault = %v, shorter than the control redelivery horizon %v: a bundle redelivered that late is dropped as replayed",
			redelivery.AnswerGraceDefault, horizon)
	}
}
