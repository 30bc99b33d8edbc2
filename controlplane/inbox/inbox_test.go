package inbox_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/inbox"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var eventTypes = []string{"order.placed", "order.paid", "order.shipped"}

func TestInbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// The inbox under test is "billing", consuming eventTypes; "orders" publishes them.
	type testBundle struct {
		pool *pgxpool.Pool
		nats *natstest.Server
	}

	setup := func(t *testing.T) (*inbox.Inbox, *testBundle) {
		t.Helper()
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "", eventTypes, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "billing")
		return &inbox.Inbox{Pool: pool, JS: js, Service: "billing", Logger: testrun.Logger(t)},
			&testBundle{pool: pool, nats: srv}
	}

	// publish puts messages on the events stream as a relay would.
	publish := func(t *testing.T, b *testBundle, msgs ...*nats.Msg) {
		t.Helper()
		for _, m := range msgs {
			if _, err := b.nats.JS.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		// The inbox's batch as its doc comment states it: 500 messages fetched and ingested per
		// transaction.
		if inbox.BatchDefault != 500 {
			t.Errorf("BatchDefault = %d, want 500", inbox.BatchDefault)
		}

		// A zero-valued Inbox takes it: its durable consumer lets four batches be in flight.
		in, b := setup(t)
		testrun.Go(t, "inbox", in.Run)
		publish(t, b, wire.EventMessage(ordersEvent(1, 1, eventTypes[0])))
		testrun.WaitFor(t, "the event stored", func() bool { return in.Counts().Stored == 1 })
		cons, err := b.nats.JS.Consumer(ctx, wire.EventsStream, wire.InboxDurable("billing", wire.LiveFilter("*", "*", eventTypes[0])))
		if err != nil {
			t.Fatal(err)
		}
		if got := cons.CachedInfo().Config.MaxAckPending; got != 4*inbox.BatchDefault {
			t.Fatalf("inbox consumer MaxAckPending = %d, want 4 batches of BatchDefault (%d)", got, 4*inbox.BatchDefault)
		}
	})

	// Issue 18 item 1: the inbox picks up subscription changes without a restart. With none it
	// consumes nothing and keeps watching; a subscription added at run time gets its durable
	// (the witness: the broker holds it), and Run still returns nil when its context ends.
	t.Run("ConsumesNothingWithoutSubscriptionsAndPicksUpOneAddedAtRunTime", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "quiet")
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "quiet")
		if err := wire.EnsureStreams(ctx, js, 0); err != nil {
			t.Fatal(err)
		}
		in := &inbox.Inbox{Pool: pool, JS: js, Service: "quiet", Logger: testrun.Logger(t), ReconcileInterval: 10 * time.Millisecond}
		runCtx, cancel := context.WithTimeout(ctx, testrun.Failsafe)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- in.Run(runCtx) }()
		if n := in.Counts(); n.Received != 0 {
			t.Fatalf("an inbox without subscriptions received %d messages", n.Received)
		}
		if err := store.SubscriptionsAdd(ctx, pool, "", eventTypes[:1], store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		durable := wire.InboxDurable("quiet", wire.LiveFilter("*", "*", eventTypes[0]))
		for {
			if _, err := js.Consumer(ctx, wire.EventsStream, durable); err == nil {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("Run returned %v before the subscription was picked up", err)
			case <-runCtx.Done():
				t.Fatal("the subscription added at run time never got its durable consumer")
			case <-time.After(10 * time.Millisecond):
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v; want nil when its context ends", err)
		}
	})

	// Invariant 3: a copy is stored with the identity its origin stamped and its payload bytes
	// exactly as they travelled.
	t.Run("StoresCopiesWithTheirIdentity", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		var sent []store.EventCopy
		for i := range 30 {
			e := ordersEvent(int64(i+1), int64(i/3+1), eventTypes[i%3])
			sent = append(sent, e)
			publish(t, b, wire.EventMessage(e))
		}
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "30 copies stored", func() bool { return in.Counts().Stored == 30 })

		stored := copiesOf(t, b.pool, "orders")
		if len(stored) != 30 {
			t.Fatalf("billing holds %d copies of orders, want 30", len(stored))
		}
		for i, g := range stored {
			w := sent[i]
			if g.EventID != w.EventID || g.OriginSeq != w.OriginSeq || g.TypeSeq != w.TypeSeq || g.Tenant != w.Tenant ||
				g.StreamID != w.StreamID || g.StreamVersion != w.StreamVersion || g.EventType != w.EventType ||
				!bytes.Equal(g.Payload, w.Payload) || !g.OccurredAt.Equal(w.OccurredAt) {
				t.Fatalf("copy %d stored as %+v, sent %+v", i, g, w)
			}
		}
	})

	// Invariant 13 (no wedge): a message the inbox cannot even decode (an event without a valid id,
	// a malformed checkpoint) is recorded in inbox_rejects with its reason, subject, headers and
	// bytes, terminated, and the events behind it are stored.
	t.Run("RecordsAMalformedMessageInInboxRejectsAndGoesOn", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		badEvent := wire.EventMessage(ordersEvent(2, 2, eventTypes[0]))
		badEvent.Header.Set("Streamseal-Event-Id", "not-a-uuid")
		badEvent.Data = []byte(`{"broken": true}`)
		badCheckpoint := nats.NewMsg(wire.LiveSubject("orders", "acme", eventTypes[1]))
		badCheckpoint.Header.Set(wire.HdrKind, wire.KindCheckpoint)
		badCheckpoint.Data = []byte(`{"v":1,"origin":`)
		publish(t, b, wire.EventMessage(ordersEvent(1, 1, eventTypes[0])), badEvent, badCheckpoint,
			wire.EventMessage(ordersEvent(3, 3, eventTypes[0])))
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "two stored and two rejected", func() bool {
			c := in.Counts()
			return c.Stored == 2 && c.Rejected == 2
		})

		rows, err := b.pool.Query(ctx, "select subject, reason, headers::text, payload from streamseal.inbox_rejects order by id")
		if err != nil {
			t.Fatal(err)
		}
		type reject struct {
			subject, reason, headers string
			payload                  []byte
		}
		var rejects []reject
		for rows.Next() {
			var r reject
			if err := rows.Scan(&r.subject, &r.reason, &r.headers, &r.payload); err != nil {
				t.Fatal(err)
			}
			rejects = append(rejects, r)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(rejects) != 2 {
			t.Fatalf("inbox_rejects holds %d rows, want 2: %+v", len(rejects), rejects)
		}
		// The two ride different subjects, so different consumers: either may be recorded first.
		if rejects[0].subject != badEvent.Subject {
			rejects[0], rejects[1] = rejects[1], rejects[0]
		}
		if r := rejects[0]; r.subject != badEvent.Subject || !strings.Contains(r.reason, "Streamseal-Event-Id") ||
			!strings.Contains(r.headers, "not-a-uuid") || string(r.payload) != `{"broken": true}` {
			t.Fatalf("the bad event's reject is %+v", r)
		}
		if r := rejects[1]; r.subject != badCheckpoint.Subject || !strings.Contains(r.reason, "checkpoint") ||
			string(r.payload) != `{"v":1,"origin":` {
			t.Fatalf("the bad checkpoint's reject is %+v", r)
		}
		if n := len(copiesOf(t, b.pool, "orders")); n != 2 {
			t.Fatalf("billing holds %d copies, want the 2 good ones", n)
		}
	})

	// Invariant 13: a batch the store refuses (one copy carries an unknown flag bit) is retried one
	// copy at a time, so the one bad copy is recorded with its origin and id and the rest of its
	// batch is stored.
	t.Run("IsolatesACopyTheStoreRefusesAndStoresTheRestOfItsBatch", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		bad := ordersEvent(6, 6, eventTypes[0])
		bad.Flags = 8
		for seq := int64(1); seq <= 11; seq++ {
			e := ordersEvent(seq, seq, eventTypes[0])
			if seq == 6 {
				e = bad
			}
			publish(t, b, wire.EventMessage(e))
		}
		testrun.Go(t, "inbox", in.Run) // started after publishing: the 11 arrive as one fetch
		testrun.WaitFor(t, "ten stored and one rejected", func() bool {
			c := in.Counts()
			return c.Stored == 10 && c.Rejected == 1
		})
		var origin, reason string
		var eventID uuid.UUID
		if err := b.pool.QueryRow(ctx, "select origin, event_id, reason from streamseal.inbox_rejects").Scan(&origin, &eventID, &reason); err != nil {
			t.Fatal(err)
		}
		if origin != "orders" || eventID != bad.EventID || !strings.Contains(reason, "unknown bits") {
			t.Fatalf("reject = origin %s, event %s, %q; want the bad copy named with the store's reason", origin, eventID, reason)
		}
		if n := len(copiesOf(t, b.pool, "orders")); n != 10 {
			t.Fatalf("billing holds %d copies, want the other 10 of the batch", n)
		}
	})

	// Invariant 12 (authenticity): events and checkpoints are accepted only from the origin their
	// subject names (the broker lets a service publish only its own subjects). An event on
	// mallory's subject claiming orders, an event whose headers name a type its subject does not
	// (one billing never subscribed to), and a checkpoint on mallory's subject claiming orders with
	// 1000 phantom type_seqs: each recorded in inbox_rejects as forged_sender, nothing stored,
	// never verified; the real events behind them are stored.
	t.Run("RefusesEventsAndCheckpointsWhoseSubjectNamesAnotherOrigin", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		var verified atomic.Int64
		in.OnCheckpoint = func(_ context.Context, cps []wire.Checkpoint, _ bool) error {
			verified.Add(int64(len(cps)))
			return nil
		}

		onMallorys := wire.EventMessage(ordersEvent(1, 1, eventTypes[0]))
		onMallorys.Subject = wire.LiveSubject("mallory", "acme", eventTypes[0])
		onMallorys.Header.Set(nats.MsgIdHdr, "mallory:1")
		otherType := ordersEvent(2, 1, "order.refunded")
		wrongType := wire.EventMessage(otherType)
		wrongType.Subject = wire.LiveSubject("orders", "acme", eventTypes[1])
		first, last := int64(1), int64(1000)
		phantom, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60, At: time.Now(), From: 0, To: 1000,
			Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: 1000, First: &first, Last: &last}}})
		if err != nil {
			t.Fatal(err)
		}
		phantom.Subject = wire.LiveSubject("mallory", "acme", eventTypes[0])
		real := ordersEvent(1, 1, eventTypes[0])
		publish(t, b, onMallorys, wrongType, phantom, wire.EventMessage(real))
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "one stored and three rejected", func() bool {
			c := in.Counts()
			return c.Stored == 1 && c.Rejected == 3
		})
		if verified.Load() != 0 {
			t.Fatalf("a forged checkpoint was verified %d times", verified.Load())
		}
		var forged int
		if err := b.pool.QueryRow(ctx, "select count(*) from streamseal.inbox_rejects where reason like 'forged_sender:%'").Scan(&forged); err != nil {
			t.Fatal(err)
		}
		if forged != 3 {
			t.Fatalf("inbox_rejects holds %d forged_sender rows, want 3", forged)
		}
		if got := copiesOf(t, b.pool, "orders"); len(got) != 1 || got[0].EventID != real.EventID {
			t.Fatalf("billing holds %+v, want only the real event", got)
		}
		var lanes, origins int
		if err := b.pool.QueryRow(ctx, "select (select count(*) from streamseal.lanes), (select count(*) from streamseal.known_origins)").
			Scan(&lanes, &origins); err != nil {
			t.Fatal(err)
		}
		if lanes != 0 || origins != 0 {
			t.Fatalf("forgeries touched %d lanes and %d known origins", lanes, origins)
		}
	})

	// Liveness (issue 21 item 3): quiet pairs are not checkpointed, so each origin's beat rides
	// its own subject, consumed by one more single-filter durable per origin subscribed to (one
	// for every origin here: the subscriptions name any origin). Beats reach OnBeat whatever the
	// tenants; a beat that does not decode or claims another origin than its subject is recorded
	// and terminated (invariant 12), and no event or checkpoint consumer receives a beat.
	t.Run("TakesEachOriginsBeatOnOneMoreDurable", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		var mu sync.Mutex
		var beats []string
		in.OnBeat = func(_ context.Context, beat wire.Beat) error {
			mu.Lock()
			defer mu.Unlock()
			beats = append(beats, beat.Origin)
			return nil
		}
		var verified atomic.Int64
		in.OnCheckpoint = func(_ context.Context, cps []wire.Checkpoint, _ bool) error {
			verified.Add(int64(len(cps)))
			return nil
		}
		beat := func(origin string) *nats.Msg {
			m, err := wire.BeatMessage(wire.Beat{Origin: origin, IntervalS: 1, At: time.Now(), From: 4, To: 4})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		forged := beat("mallory")
		forged.Subject = wire.BeatSubject("orders")
		malformed := beat("orders")
		malformed.Data = []byte(`{"v":1,"origin":"orders","interval_s":0}`)
		publish(t, b, beat("orders"), forged, malformed, beat("shipping"))
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "two beats taken and two rejected", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(beats) == 2 && in.Counts().Rejected == 2
		})
		mu.Lock()
		got := slices.Clone(beats)
		mu.Unlock()
		if !slices.Equal(got, []string{"orders", "shipping"}) {
			t.Fatalf("beats taken from %v; want orders then shipping", got)
		}
		if verified.Load() != 0 || in.Counts().Stored != 0 {
			t.Fatalf("a beat was taken as a checkpoint (%d) or an event (%d)", verified.Load(), in.Counts().Stored)
		}
		if _, err := b.nats.JS.Consumer(ctx, wire.EventsStream, wire.InboxDurable("billing", wire.BeatFilter("*"))); err != nil {
			t.Fatalf("the beat durable: %v", err)
		}
	})

	// Liveness with tenant grants: a consumer of one tenant of one origin still takes that
	// origin's beat (its own durable on the named origin's beat filter), and no other origin's.
	t.Run("ATenantScopedConsumerTakesItsOriginsBeat", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "orders", eventTypes[:1], store.Tenants("acme")); err != nil {
			t.Fatal(err)
		}
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "billing")
		in := &inbox.Inbox{Pool: pool, JS: js, Service: "billing", Logger: testrun.Logger(t)}
		got := make(chan string, 4)
		in.OnBeat = func(_ context.Context, beat wire.Beat) error { got <- beat.Origin; return nil }
		for _, origin := range []string{"shipping", "orders"} {
			m, err := wire.BeatMessage(wire.Beat{Origin: origin, IntervalS: 1, At: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := srv.JS.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		testrun.Go(t, "inbox", in.Run)
		if origin := testrun.Receive(t, "the subscribed origin's beat", got); origin != "orders" {
			t.Fatalf("took the beat of %s; want orders only", origin)
		}
		if _, err := js.Consumer(ctx, wire.EventsStream, wire.InboxDurable("billing", wire.BeatFilter("orders"))); err != nil {
			t.Fatalf("the beat durable of orders: %v", err)
		}
	})

	// A service ignores its own events coming back on the shared subjects: not a copy, not a
	// reject (DESIGN.md lessons: a service ignores what it sent).
	t.Run("IgnoresItsOwnEventsComingBack", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		own := ordersEvent(1, 1, eventTypes[0])
		own.Origin = "billing"
		publish(t, b, wire.EventMessage(own), wire.EventMessage(ordersEvent(1, 1, eventTypes[0])))
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "both deliveries handled", func() bool {
			c := in.Counts()
			return c.Received == 2 && c.Stored == 1
		})
		if c := in.Counts(); c.Rejected != 0 {
			t.Fatalf("own event counted as %d rejects", c.Rejected)
		}
		var n int
		if err := b.pool.QueryRow(ctx, "select count(*) from streamseal.events where event_id = $1", own.EventID).Scan(&n); err != nil || n != 0 {
			t.Fatalf("own event stored %d times (%v)", n, err)
		}
	})

	// Invariant 2 (idempotence): the same event delivered again (republished beyond JetStream's
	// duplicate window, so it arrives twice) adds no row and moves no digest.
	t.Run("ARedeliveredEventAddsNoRowAndMovesNoDigest", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		e := ordersEvent(1, 1, eventTypes[0])
		publish(t, b, wire.EventMessage(e))
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "the first delivery stored", func() bool { return in.Counts().Stored == 1 })
		before, err := store.StreamDigests(ctx, b.pool)
		if err != nil {
			t.Fatal(err)
		}

		again := wire.EventMessage(e)
		again.Header.Set(nats.MsgIdHdr, "orders:1:again")
		publish(t, b, again)
		testrun.WaitFor(t, "the second delivery handled", func() bool { return in.Counts().Received == 2 && in.Counts().Stored == 2 })
		after, err := store.StreamDigests(ctx, b.pool)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(copiesOf(t, b.pool, "orders")); n != 1 {
			t.Fatalf("billing holds %d rows of one event", n)
		}
		if fmt.Sprint(before) != fmt.Sprint(after) || len(after) != 1 || after[0].N != 1 {
			t.Fatalf("digests moved on a redelivery: %+v -> %+v", before, after)
		}
	})

	// Invariants 1 and 14: a checkpoint is verified only once every event before it in the stream
	// is committed (so it never calls missing what is merely in its batch); a failed verification
	// redelivers the checkpoint, and the events behind it are still stored.
	t.Run("VerifiesACheckpointAfterTheEventsBeforeItAreStored", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		type call struct{ held int }
		calls := make(chan call, 4)
		var failed atomic.Bool
		in.OnCheckpoint = func(ctx context.Context, _ []wire.Checkpoint, _ bool) error {
			held := len(copiesOf(t, b.pool, "orders"))
			calls <- call{held}
			if failed.CompareAndSwap(false, true) {
				return fmt.Errorf("the verifier fails once")
			}
			return nil
		}
		for seq := int64(1); seq <= 10; seq++ {
			publish(t, b, wire.EventMessage(ordersEvent(seq, seq, eventTypes[0])))
		}
		cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60,
			At: time.Now(), From: 1, To: 11, Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: 10}}})
		if err != nil {
			t.Fatal(err)
		}
		publish(t, b, cp)
		for seq := int64(11); seq <= 15; seq++ {
			publish(t, b, wire.EventMessage(ordersEvent(seq, seq, eventTypes[0])))
		}
		testrun.Go(t, "inbox", in.Run)

		for i := range 2 {
			if c := testrun.Receive(t, "a checkpoint verification", calls); c.held < 10 {
				t.Fatalf("verification %d ran while billing held %d of the 10 events before the checkpoint", i+1, c.held)
			}
		}
		testrun.WaitFor(t, "the events behind the checkpoint stored", func() bool { return len(copiesOf(t, b.pool, "orders")) == 15 })
		testrun.WaitFor(t, "the checkpoint acknowledged", func() bool {
			info, err := b.nats.JS.Consumer(ctx, wire.EventsStream, wire.InboxDurable("billing", wire.LiveFilter("*", "*", eventTypes[0])))
			if err != nil {
				return false
			}
			i, err := info.Info(ctx)
			return err == nil && i.NumAckPending == 0 && i.NumPending == 0
		})
		select {
		case c := <-calls:
			t.Fatalf("checkpoint verified a third time (%+v) after it succeeded", c)
		default:
		}
	})

	// Invariant 1 without false alarms: an inbox stopped while it records a lone checkpoint hands
	// that checkpoint and the events behind it in the batch back at once (a plain nak), as it does
	// when stopped mid-ingest. Naked with a retry delay instead (the path for a failed recording),
	// the events stayed away from the consumer that takes over for the delay, longer than two
	// fast checkpoint cycles, whose checkpoints then confirmed them missing and requested a repair
	// of events that were only held (seen: TestCheckpoint_ReplicasAndRestartsRaiseNothingFalse).
	t.Run("StoppedWhileRecordingALoneCheckpointHandsItAndTheEventsBehindBackAtOnce", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		in.OnCheckpoint = func(context.Context, []wire.Checkpoint, bool) error { return nil }
		cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60,
			At: time.Now(), From: 1, To: 1, Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: "acme"}}})
		if err != nil {
			t.Fatal(err)
		}
		publish(t, b, cp, wire.EventMessage(ordersEvent(1, 1, eventTypes[0])))

		// Every acknowledgement the inbox sends, as the server receives it.
		nc, _ := b.nats.Connect(t, "observer")
		acks := make(chan string, 16)
		sub, err := nc.Subscribe("$JS.ACK.>", func(m *nats.Msg) { acks <- string(m.Data) })
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		// The checkpoint's recording waits on this lock until the inbox is stopped.
		hold, err := b.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = hold.Rollback(ctx) }()
		if _, err := hold.Exec(ctx, "lock table streamseal.checkpoint_inbox in exclusive mode"); err != nil {
			t.Fatal(err)
		}
		stop := testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "the checkpoint's recording waits on the lock", func() bool {
			var waiting int
			_ = b.pool.QueryRow(ctx, `select count(*) from pg_stat_activity
				where wait_event_type = 'Lock' and query ~ 'checkpoint_inbox_record|insert into streamseal\.checkpoint_inbox'`).Scan(&waiting)
			return waiting == 1
		})
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the checkpoint and the event behind it
			if got := testrun.Receive(t, "an acknowledgement of the held batch", acks); got != "-NAK" {
				t.Fatalf("a held message was answered %q at the stop; want a plain -NAK (no delay)", got)
			}
		}
	})

	// Issue 21 item 3 (checkpoints never delay live events) with invariant 1: a round over many
	// tenants is one checkpoint message per tenant; the checkpoints that come back to back in a
	// fetched batch are handed to the verifier as runs, not one call (one transaction) each, and
	// still only after the events before them are stored, every one of them acknowledged.
	t.Run("HandsARoundOfManyTenantsOverInRuns", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		const tenants = 40
		var calls, verified atomic.Int64
		var early atomic.Bool
		in.OnCheckpoint = func(ctx context.Context, cps []wire.Checkpoint, _ bool) error {
			if len(copiesOf(t, b.pool, "orders")) < 3 {
				early.Store(true)
			}
			calls.Add(1)
			verified.Add(int64(len(cps)))
			return nil
		}
		for seq := int64(1); seq <= 3; seq++ {
			publish(t, b, wire.EventMessage(ordersEvent(seq, seq, eventTypes[0])))
		}
		at := time.Now().UTC()
		for i := range tenants {
			cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60, At: at, From: 4, To: 4 + tenants,
				Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: fmt.Sprintf("t%03d", i), N: 0}}})
			if err != nil {
				t.Fatal(err)
			}
			publish(t, b, cp)
		}
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "every tenant's checkpoint verified and acknowledged", func() bool {
			info, err := b.nats.JS.Consumer(ctx, wire.EventsStream, wire.InboxDurable("billing", wire.LiveFilter("*", "*", eventTypes[0])))
			if err != nil {
				return false
			}
			i, err := info.Info(ctx)
			return err == nil && verified.Load() == tenants && i.NumAckPending == 0 && i.NumPending == 0
		})
		if early.Load() {
			t.Fatal("checkpoints were verified before the events ahead of them were stored")
		}
		if n := calls.Load(); n > tenants/10 {
			t.Fatalf("%d checkpoints back to back reached the verifier in %d calls; want runs (at most %d calls)", tenants, n, tenants/10)
		}
	})

	// Issue 21 item 3 (checkpoints never delay live events) with invariant 1: a live event
	// published behind a large round of checkpoints is stored while that round is still being
	// verified. The witness is the event's row appearing while the verifier holds every call of
	// the round (it is released only after the row is seen); then the whole round is verified,
	// each checkpoint once, and nothing stays pending on the broker.
	t.Run("StoresALiveEventWhileALargeRoundIsStillBeingVerified", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		const tenants = 2000 // four fetched batches of checkpoints ahead of the event
		release := make(chan struct{})
		var releaseOnce sync.Once
		open := func() { releaseOnce.Do(func() { close(release) }) }
		t.Cleanup(open)
		var verified atomic.Int64
		var mu sync.Mutex
		seen := map[string]int{}
		in.OnCheckpoint = func(ctx context.Context, cps []wire.Checkpoint, _ bool) error {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			for _, cp := range cps {
				seen[cp.Tenants[0].Tenant]++
			}
			mu.Unlock()
			verified.Add(int64(len(cps)))
			return nil
		}
		at := time.Now().UTC()
		for i := range tenants {
			first := int64(1)
			cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 1, At: at, From: 1, To: 1 + tenants,
				Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: fmt.Sprintf("t%05d", i), N: 1, First: &first, Last: &first}}})
			if err != nil {
				t.Fatal(err)
			}
			publish(t, b, cp)
		}
		live := ordersEvent(1+tenants, 1, eventTypes[0])
		publish(t, b, wire.EventMessage(live))
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "the live event behind the round stored while the round is being verified", func() bool {
			return len(copiesOf(t, b.pool, "orders")) == 1
		})
		if n := verified.Load(); n != 0 {
			t.Fatalf("%d checkpoints verified while the verifier was held", n)
		}
		open()
		testrun.WaitFor(t, "the whole round verified and nothing pending", func() bool {
			info, err := b.nats.JS.Consumer(ctx, wire.EventsStream, wire.InboxDurable("billing", wire.LiveFilter("*", "*", eventTypes[0])))
			if err != nil {
				return false
			}
			i, err := info.Info(ctx)
			return err == nil && verified.Load() >= tenants && i.NumAckPending == 0 && i.NumPending == 0
		})
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != tenants {
			t.Fatalf("verified the checkpoints of %d tenants, want %d", len(seen), tenants)
		}
		for tenant, n := range seen {
			if n != 1 {
				t.Fatalf("tenant %s's checkpoint verified %d times, want once", tenant, n)
			}
		}
	})

	// Invariant 1 with checkpoints recorded before verification (issue 21 item 3): a checkpoint
	// acknowledged on the broker is held in streamseal.checkpoint_inbox until it is verified. An
	// inbox stopped while verifying it leaves it there, and the next inbox verifies it, with the
	// order proof it was recorded with.
	t.Run("ARecordedCheckpointSurvivesAStopAndTheNextRunVerifiesIt", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		holding := make(chan struct{}, 1)
		in.OnCheckpoint = func(ctx context.Context, _ []wire.Checkpoint, _ bool) error {
			select {
			case holding <- struct{}{}:
			default:
			}
			<-ctx.Done() // the verifier is still at it when the process stops
			return ctx.Err()
		}
		publish(t, b, wire.EventMessage(ordersEvent(1, 1, eventTypes[0])))
		cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60, At: time.Now(), From: 1, To: 2,
			Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		publish(t, b, cp)
		stop := testrun.Go(t, "inbox", in.Run)
		testrun.Receive(t, "the verification under way", holding)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		info, err := b.nats.JS.Consumer(ctx, wire.EventsStream, wire.InboxDurable("billing", wire.LiveFilter("*", "*", eventTypes[0])))
		if err != nil {
			t.Fatal(err)
		}
		if i, err := info.Info(ctx); err != nil || i.NumAckPending != 0 || i.NumPending != 0 {
			t.Fatalf("the broker still holds the checkpoint (%+v, %v); want it acknowledged once recorded", i, err)
		}
		if n := recordedCheckpoints(t, b.pool); n != 1 {
			t.Fatalf("checkpoint_inbox holds %d rows after the stop, want the checkpoint under verification", n)
		}

		next := &inbox.Inbox{Pool: b.pool, JS: in.JS, Service: "billing", Logger: testrun.Logger(t)}
		verified := make(chan bool, 4)
		next.OnCheckpoint = func(_ context.Context, cps []wire.Checkpoint, ordered bool) error {
			for range cps {
				verified <- ordered
			}
			return nil
		}
		testrun.Go(t, "the next inbox", next.Run)
		if !testrun.Receive(t, "the recorded checkpoint verified by the next inbox", verified) {
			t.Fatal("the recorded checkpoint lost the order proof it was recorded with")
		}
		testrun.WaitFor(t, "checkpoint_inbox empty", func() bool { return recordedCheckpoints(t, b.pool) == 0 })
		select {
		case <-verified:
			t.Fatal("the checkpoint was verified twice")
		default:
		}
	})

	// Invariant 13 (no wedge) with checkpoints recorded before verification: a recorded
	// checkpoint whose verification keeps failing is retried with backoff, then recorded in
	// inbox_rejects as given up and removed; the checkpoint recorded behind it is verified.
	t.Run("ARecordedCheckpointThatKeepsFailingIsGivenUpAndTheNextIsVerified", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		in.MaxDeliver = 2
		var mu sync.Mutex
		calls := map[string]int{}
		in.OnCheckpoint = func(_ context.Context, cps []wire.Checkpoint, _ bool) error {
			mu.Lock()
			defer mu.Unlock()
			for _, cp := range cps {
				calls[cp.Tenants[0].Tenant]++
				if cp.Tenants[0].Tenant == "stuck" {
					return fmt.Errorf("the verifier cannot finish this one")
				}
			}
			return nil
		}
		at := time.Now().UTC()
		for _, tenant := range []string{"stuck", "next"} {
			cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60, At: at, From: 1, To: 1,
				Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: tenant}}})
			if err != nil {
				t.Fatal(err)
			}
			publish(t, b, cp)
		}
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "the failing checkpoint given up and checkpoint_inbox empty", func() bool {
			return in.Counts().Rejected == 1 && recordedCheckpoints(t, b.pool) == 0
		})
		var reason string
		if err := b.pool.QueryRow(ctx, "select reason from streamseal.inbox_rejects").Scan(&reason); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(reason, "given up after 2 verifications") {
			t.Fatalf("reject reason %q; want it given up after MaxDeliver verifications", reason)
		}
		mu.Lock()
		defer mu.Unlock()
		if calls["next"] < 1 {
			t.Fatalf("the checkpoint behind the failing one was never verified (%v)", calls)
		}
	})

	// Invariants 12 and 13 with checkpoints verified as runs: a run holding a forged checkpoint
	// (another origin's subject) and one the verifier refuses for good (SQL's invalid input) loses
	// neither of the genuine checkpoints beside them: each bad one is recorded and terminated
	// alone, each genuine one verified once, and the run acknowledged.
	t.Run("ARunWithABadCheckpointLosesNoneOfTheOthers", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		var mu sync.Mutex
		verified := map[string]int{}
		in.OnCheckpoint = func(_ context.Context, cps []wire.Checkpoint, _ bool) error {
			for _, cp := range cps {
				if cp.Tenants[0].Tenant == "refused" {
					return fmt.Errorf("verify checkpoint: %w: a refusal", store.ErrInvalidInput)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, cp := range cps {
				verified[cp.Tenants[0].Tenant]++
			}
			return nil
		}
		at := time.Now().UTC()
		checkpoint := func(tenant string) *nats.Msg {
			m, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60, At: at, From: 1, To: 1,
				Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: tenant}}})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		forged := checkpoint("forged")
		forged.Subject = wire.LiveSubject("mallory", "forged", eventTypes[0])
		publish(t, b, checkpoint("first"), forged, checkpoint("refused"), checkpoint("last"))
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "the genuine checkpoints verified, the bad ones rejected, nothing pending", func() bool {
			info, err := b.nats.JS.Consumer(ctx, wire.EventsStream, wire.InboxDurable("billing", wire.LiveFilter("*", "*", eventTypes[0])))
			if err != nil {
				return false
			}
			i, err := info.Info(ctx)
			mu.Lock()
			defer mu.Unlock()
			return err == nil && in.Counts().Rejected == 2 && verified["first"] == 1 && verified["last"] == 1 &&
				i.NumAckPending == 0 && i.NumPending == 0
		})
		mu.Lock()
		defer mu.Unlock()
		if len(verified) != 2 || verified["first"] != 1 || verified["last"] != 1 {
			t.Fatalf("verified %v; want first and last once each", verified)
		}
	})

	// Detection in one interval (invariant 1): a checkpoint is handed over as ordered only while
	// every delivery before it was this inbox's own first delivery, handled to the end. A
	// checkpoint redelivered after a failed verification is not ordered; once the idle consumer
	// has nothing pending, the next checkpoint is ordered again.
	t.Run("ProvesOrderUntilAMessageGoesBackForRedelivery", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		calls := make(chan bool, 8)
		var failed atomic.Bool
		in.OnCheckpoint = func(ctx context.Context, _ []wire.Checkpoint, ordered bool) error {
			calls <- ordered
			if failed.CompareAndSwap(false, true) {
				return fmt.Errorf("the verifier fails once")
			}
			return nil
		}
		checkpoint := func(from, to int64) *nats.Msg {
			cp, err := acmeCheckpoint(from, to)
			if err != nil {
				t.Fatal(err)
			}
			return cp
		}
		for seq := int64(1); seq <= 3; seq++ {
			publish(t, b, wire.EventMessage(ordersEvent(seq, seq, eventTypes[0])))
		}
		publish(t, b, checkpoint(1, 4))
		testrun.Go(t, "inbox", in.Run)
		if !testrun.Receive(t, "the first verification", calls) {
			t.Fatal("a checkpoint behind three first deliveries on a fresh consumer was not ordered")
		}
		if testrun.Receive(t, "the checkpoint's redelivery", calls) {
			t.Fatal("a checkpoint redelivered after a failed verification was handed over as ordered")
		}
		testrun.WaitFor(t, "the idle consumer proves order again", func() bool {
			c := in.Counts()
			return c.Ordered == 1 && c.Unordered == 1 && c.OrderProven
		})
		publish(t, b, wire.EventMessage(ordersEvent(4, 4, eventTypes[0])))
		publish(t, b, checkpoint(4, 5))
		testrun.WaitFor(t, "the next checkpoint verified", func() bool { return in.Counts().Ordered+in.Counts().Unordered == 3 })
		if !<-calls {
			t.Fatal("after the redelivered checkpoint was handled and nothing was pending, the next checkpoint was not ordered")
		}
	})

	// Detection in one interval (invariant 1) under steady traffic: once the proof is lost (a
	// failed verification sends a checkpoint back), it is taken again as soon as nothing is
	// pending, not only after a second with no message at all: a consumer whose subjects carry a
	// checkpoint every round never has such a second, so it stayed on two-cycle confirmation for
	// good (TestCheckpoint_HealthyRunSendsNoRepairRequest on a loaded machine: no ordered
	// checkpoint in the whole run).
	t.Run("ProvesOrderAgainWhileMessagesKeepArriving", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		calls := make(chan bool, 64)
		in.OnCheckpoint = func(ctx context.Context, _ []wire.Checkpoint, ordered bool) error {
			select {
			case calls <- ordered:
			default:
			}
			return nil
		}
		// The store fails the first batch once (a test trigger; a sequence survives the
		// rollback), so it goes back for redelivery and the proof is lost.
		if _, err := b.pool.Exec(ctx, `
			create sequence public.test_fail_once;
			create function public.test_fail_once() returns trigger language plpgsql set search_path = public, pg_catalog as $$
			begin
			    if nextval('test_fail_once') = 1 then
			        raise exception 'injected: the first batch fails once';
			    end if;
			    return null;
			end $$;
			create trigger test_fail_once after insert on streamseal.events
			    for each statement execute function public.test_fail_once()`); err != nil {
			t.Fatal(err)
		}
		checkpoint := func(from, to int64) *nats.Msg {
			cp, err := acmeCheckpoint(from, to)
			if err != nil {
				t.Fatal(err)
			}
			return cp
		}
		publish(t, b, wire.EventMessage(ordersEvent(1, 1, eventTypes[0])), checkpoint(1, 2))
		testrun.Go(t, "inbox", in.Run)
		if testrun.Receive(t, "the redelivered first checkpoint verified", calls) {
			t.Fatal("a checkpoint redelivered with the batch that failed was handed over as ordered")
		}
		// Traffic never pauses for the fetch's one-second wait: an event and a checkpoint
		// every 100 ms until a checkpoint is handed over as ordered again.
		testrun.Go(t, "steady traffic", func(ctx context.Context) error {
			for seq := int64(2); ctx.Err() == nil; seq++ {
				cp, err := acmeCheckpoint(seq, seq+1) // not checkpoint(): t.Fatal belongs to the test's goroutine
				if err != nil {
					return err
				}
				for _, m := range []*nats.Msg{wire.EventMessage(ordersEvent(seq, seq, eventTypes[0])), cp} {
					if _, err := b.nats.JS.PublishMsg(ctx, m); err != nil && ctx.Err() == nil {
						return err
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond): // the traffic's pace, not a wait on a state
				}
			}
			return nil
		})
		failsafe := time.After(testrun.Failsafe)
		for ordered := false; !ordered; {
			select {
			case ordered = <-calls:
			case <-failsafe:
				t.Fatalf("gave up waiting for a checkpoint handed over as ordered again under steady traffic (%+v)", in.Counts())
			}
		}
	})

	// A delivery another consumer (an earlier process, a second replica) holds unacknowledged
	// may be committed after the checkpoint behind it: that checkpoint is not ordered.
	t.Run("DoesNotProveOrderOverADeliveryAnotherConsumerHolds", func(t *testing.T) {
		t.Parallel()
		in, b := setup(t)
		calls := make(chan bool, 4)
		in.OnCheckpoint = func(ctx context.Context, _ []wire.Checkpoint, ordered bool) error {
			calls <- ordered
			return nil
		}
		publish(t, b, wire.EventMessage(ordersEvent(1, 1, eventTypes[0])), wire.EventMessage(ordersEvent(2, 2, eventTypes[0])))
		cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60,
			At: time.Now(), From: 1, To: 3, Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: 2}}})
		if err != nil {
			t.Fatal(err)
		}
		publish(t, b, cp)
		// An earlier process took event 1 and died before acknowledging it.
		cons, err := b.nats.JS.CreateOrUpdateConsumer(ctx, wire.EventsStream, jetstream.ConsumerConfig{
			Durable:       wire.InboxDurable("billing", wire.LiveFilter("*", "*", eventTypes[0])),
			FilterSubject: wire.LiveFilter("*", "*", eventTypes[0]),
			AckPolicy:     jetstream.AckExplicitPolicy, AckWait: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		held, err := cons.Fetch(1)
		if err != nil {
			t.Fatal(err)
		}
		for range held.Messages() {
		}
		testrun.Go(t, "inbox", in.Run)
		if testrun.Receive(t, "the checkpoint verification", calls) {
			t.Fatal("a checkpoint behind a delivery still held by another consumer was handed over as ordered")
		}
	})
}

// billingConsumer is a "billing" store subscribed to eventTypes of every origin and tenant, with
// an embedded NATS server and billing's JetStream context on it.
func billingConsumer(t *testing.T) (*pgxpool.Pool, *natstest.Server, jetstream.JetStream) {
	t.Helper()
	pool := dbtest.NewPool(t, "billing")
	if err := store.SubscriptionsAdd(context.Background(), pool, "", eventTypes, store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	srv := natstest.Start(t)
	_, js := srv.Connect(t, "billing")
	return pool, srv, js
}

// recordedCheckpoints counts the checkpoints waiting in streamseal.checkpoint_inbox.
func recordedCheckpoints(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "select count(*) from streamseal.checkpoint_inbox").Scan(&n); err != nil {
		t.Error(err)
	}
	return n
}

// ordersEvent is an event of origin "orders" as its relay publishes it.
// acmeCheckpoint is orders' checkpoint of the window [from, to) of the first event type, every
// event in it of tenant acme.
func acmeCheckpoint(from, to int64) (*nats.Msg, error) {
	return wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60,
		At: time.Now(), From: from, To: to, Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: to - from}}})
}

func ordersEvent(originSeq, typeSeq int64, eventType string) store.EventCopy {
	return store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: originSeq, TypeSeq: typeSeq, Tenant: "acme",
		StreamID: fmt.Sprintf("order-%d", originSeq%4), StreamVersion: originSeq, EventType: eventType,
		Payload:    []byte(fmt.Sprintf(" {\"seq\" : %d}\n", originSeq)), // odd spacing: bytes must survive untouched
		OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, int(originSeq)*1000, time.UTC)}
}

// copiesOf reads the copies of origin's events in origin_seq order.
func copiesOf(t *testing.T, pool *pgxpool.Pool, origin string) []store.EventCopy {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		select event_id, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload, occurred_at
		from streamseal.numbered_events where origin = $1 order by origin_seq`, origin)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer rows.Close()
	var out []store.EventCopy
	for rows.Next() {
		e := store.EventCopy{Origin: origin}
		if err := rows.Scan(&e.EventID, &e.OriginSeq, &e.TypeSeq, &e.Tenant, &e.StreamID, &e.StreamVersion, &e.EventType,
			&e.Payload, &e.OccurredAt); err != nil {
			t.Error(err)
			return nil
		}
		out = append(out, e)
	}
	return out
}

// TestCheckpointInboxBoundedPerOrigin: invariant 13 against a flooding bus. An origin publishing
// checkpoints faster than the verifier takes them (here the verifier holds its first call until
// the flood is in) cannot grow checkpoint_inbox past MaxWaitingPerOrigin: the checkpoints a later
// one of the same lane supersedes are dropped and counted, and none the guarantee needs is (the
// lane's newest and the one that births it are verified once the verifier goes on). Events behind
// the flood on the same subject are stored.
func TestCheckpointInboxBoundedPerOrigin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, srv, js := billingConsumer(t)
	const flood, maxWaiting = 600, 50
	release := make(chan struct{})
	var mu sync.Mutex
	var verified []wire.Checkpoint
	in := &inbox.Inbox{Pool: pool, JS: js, Service: "billing", Logger: testrun.Logger(t), MaxWaitingPerOrigin: maxWaiting,
		OnCheckpoint: func(ctx context.Context, cps []wire.Checkpoint, _ bool) error {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			defer mu.Unlock()
			verified = append(verified, cps...)
			return nil
		}}
	at := time.Now().UTC()
	for i := int64(1); i <= flood; i++ {
		first, last := i, i
		cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60, At: at.Add(time.Duration(i) * time.Second),
			From: i, To: i + 1, Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: 1, First: &first, Last: &last}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.JS.PublishMsg(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.JS.PublishMsg(ctx, wire.EventMessage(ordersEvent(flood+1, flood+1, eventTypes[0]))); err != nil {
		t.Fatal(err)
	}
	testrun.Go(t, "inbox", in.Run)
	// The witness: the event behind the flood is stored, so every checkpoint before it on its
	// subject was handled by the door (recorded, dropped or refused).
	testrun.WaitFor(t, "the event behind the flood stored", func() bool { return in.Counts().Stored == 1 })
	if n := recordedCheckpoints(t, pool); n > maxWaiting {
		t.Fatalf("checkpoint_inbox holds %d checkpoints of one origin after a flood of %d; want at most MaxWaitingPerOrigin (%d)",
			n, flood, maxWaiting)
	}
	if got := in.Counts().Superseded; got == 0 {
		t.Fatalf("Counts().Superseded = 0 after a flood of %d against a cap of %d; want the drops counted", flood, maxWaiting)
	}
	close(release)
	testrun.WaitFor(t, "checkpoint_inbox empty", func() bool { return recordedCheckpoints(t, pool) == 0 })
	mu.Lock()
	defer mu.Unlock()
	firsts := map[int64]bool{}
	for _, cp := range verified {
		firsts[*cp.Tenants[0].First] = true
	}
	if !firsts[1] || !firsts[flood] {
		t.Fatalf("verified %d checkpoints without the lane's first (%v) or newest (%v); want both kept", len(verified), firsts[1], firsts[flood])
	}
	if in.Counts().Rejected != 0 {
		t.Fatalf("%d checkpoints rejected; superseded ones make room for one lane's flood", in.Counts().Rejected)
	}
}

// TestCheckpointInboxRefusesWhatNothingSupersedes: invariant 13 when the cap cannot be met by
// dropping superseded checkpoints (each lane has one waiting): the checkpoints beyond
// MaxWaitingPerOrigin are recorded in inbox_rejects as "checkpoint inbox full" and terminated,
// what waits is kept, and the event behind them on the subject is stored.
func TestCheckpointInboxRefusesWhatNothingSupersedes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, srv, js := billingConsumer(t)
	const lanes, maxWaiting = 20, 5
	release := make(chan struct{})
	in := &inbox.Inbox{Pool: pool, JS: js, Service: "billing", Logger: testrun.Logger(t), MaxWaitingPerOrigin: maxWaiting,
		OnCheckpoint: func(ctx context.Context, _ []wire.Checkpoint, _ bool) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
	defer close(release)
	at := time.Now().UTC()
	for i := int64(1); i <= lanes; i++ {
		first := int64(1)
		cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60, At: at, From: 1, To: 2, Type: eventTypes[0],
			Tenants: []wire.CheckpointTenant{{Tenant: fmt.Sprintf("t%02d", i), N: 1, First: &first, Last: &first}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.JS.PublishMsg(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.JS.PublishMsg(ctx, wire.EventMessage(ordersEvent(1, 1, eventTypes[0]))); err != nil {
		t.Fatal(err)
	}
	testrun.Go(t, "inbox", in.Run)
	testrun.WaitFor(t, "the event behind the checkpoints stored", func() bool { return in.Counts().Stored == 1 })
	if n := recordedCheckpoints(t, pool); n != maxWaiting {
		t.Fatalf("checkpoint_inbox holds %d checkpoints; want the cap (%d) kept", n, maxWaiting)
	}
	if got := in.Counts().Rejected; got != lanes-maxWaiting {
		t.Fatalf("%d checkpoints rejected; want the %d beyond the cap", got, lanes-maxWaiting)
	}
	var rejected int
	if err := pool.QueryRow(ctx, "select coalesce(sum(rejected), 0)::int from streamseal.inbox_reject_counts where reason like 'checkpoint inbox full: origin \"orders\"%'").
		Scan(&rejected); err != nil {
		t.Fatal(err)
	}
	if rejected != lanes-maxWaiting {
		t.Fatalf("inbox_reject_counts holds %d checkpoint-inbox-full rejects; want %d", rejected, lanes-maxWaiting)
	}
}

// Invariant 15 (a token never allows a skip): a pair whose lane was born above its round's window
// holds the lane-set mark for streamseal._lane_rounds_hold, which must cover the longest the
// broker can still deliver the pair's earlier checkpoint after its first delivery: MaxDeliver
// deliveries, each held at most ConsumerAckWait before it is redelivered or nak'd with
// wire.RetryDelay(RetryBase, n), the last one handled within ConsumerAckWait too.
func TestLaneRoundsHoldCoversTheRedeliveryHorizon(t *testing.T) {
	t.Parallel()
	var horizon time.Duration
	for n := uint64(1); n < wire.MaxDeliverDefault; n++ {
		horizon += inbox.ConsumerAckWait + wire.RetryDelay(inbox.RetryBase, n)
	}
	horizon += inbox.ConsumerAckWait
	if horizon != 843*time.Second {
		t.Errorf("redelivery horizon = %v, want 843s as lane_rounds.sql's arithmetic says: update it and _lane_rounds_hold", horizon)
	}
	hold, err := store.LaneRoundsHold(context.Background(), dbtest.NewPool(t, "holder"))
	if err != nil {
		t.Fatal(err)
	}
	if hold < horizon {
		t.Fatalf("_lane_rounds_hold = %v, shorter than the broker's redelivery horizon %v: a late checkpoint could be skipped", hold, horizon)
	}
}
