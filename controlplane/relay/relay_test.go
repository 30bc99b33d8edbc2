package relay_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/relay"
	"github.com/streamseal/streamseal/controlplane/stamper"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// ownSubjects are the event subjects of the service under test, "orders".
const ownSubjects = "streamseal.evt.orders.>"

var eventTypes = []string{"order.placed", "order.paid", "order.shipped"}

func TestRelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		pool *pgxpool.Pool
		nats *natstest.Server
		// published collects the through values of the relay's acknowledged batches.
		published *progress
	}

	setup := func(t *testing.T) (*relay.Relay, *testBundle) {
		t.Helper()
		pool := dbtest.NewPool(t, "orders")
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "orders")
		p := newProgress()
		return &relay.Relay{Pool: pool, JS: js, Logger: testrun.Logger(t), OnPublished: p.record},
			&testBundle{pool: pool, nats: srv, published: p}
	}

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		// The relay's tunables as its doc comment states them: batches of 500 events, a failsafe
		// wake-up every second without a notification.
		if relay.BatchDefault != 500 {
			t.Errorf("BatchDefault = %d, want 500", relay.BatchDefault)
		}
		if relay.PollIntervalDefault != time.Second {
			t.Errorf("PollIntervalDefault = %s, want 1s", relay.PollIntervalDefault)
		}
		// Four batches published ahead of their acknowledgements.
		if relay.InFlightDefault != 4 {
			t.Errorf("InFlightDefault = %d, want 4", relay.InFlightDefault)
		}

		// A zero-valued Relay publishes in batches of BatchDefault: with 1100 stamped events
		// waiting it acknowledges through 500, 1000, then 1100.
		r, b := setup(t)
		appendStamped(t, b.pool, "s", 1100)
		testrun.Go(t, "relay", r.Run)
		b.published.await(t, 1100)
		if got, want := fmt.Sprint(b.published.all()), fmt.Sprint([]int64{relay.BatchDefault, 2 * relay.BatchDefault, 1100}); got != want {
			t.Fatalf("acknowledged batches through %s, want %s", got, want)
		}
	})

	// Invariants 7 and 3: the relay puts stamped own events on the wire in origin_seq order, each
	// on its type's subject with its identity in the headers and its payload bytes untouched,
	// deduplicable by origin:origin_seq. Copies this service received from others are never
	// relayed under its name (its own lane only).
	t.Run("RelaysStampedEventsInOriginSeqOrder", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		recorded := b.nats.Record(t, wire.EventsStream, "streamseal.evt.>")
		// Interleaved with the own appends: copies of a peer's events of the same types.
		for i := range 3 {
			appendStamped(t, b.pool, fmt.Sprintf("s%d", i), 20)
			if _, err := store.EventsIngest(ctx, b.pool, []store.EventCopy{peerCopy(int64(i + 1))}); err != nil {
				t.Fatal(err)
			}
		}
		want := ownLane(t, b.pool)
		testrun.Go(t, "relay", r.Run)
		b.published.await(t, 60)

		msgs := recorded.AwaitCount(t, "60 events on the wire", 60)
		if n := b.nats.Count(t, wire.EventsStream, "streamseal.evt.>"); n != 60 {
			t.Fatalf("the events stream holds %d messages, want the 60 own events and no copy", n)
		}
		for i, m := range msgs {
			e, err := wire.DecodeEvent(m.Header, m.Data)
			if err != nil {
				t.Fatalf("message %d does not decode: %v", i, err)
			}
			w := want[i]
			if e.OriginSeq != int64(i+1) || e.EventID != w.EventID || e.Origin != "orders" || e.TypeSeq != w.TypeSeq ||
				e.Tenant != w.Tenant || e.StreamID != w.StreamID || e.StreamVersion != w.StreamVersion ||
				e.EventType != w.EventType || !bytes.Equal(e.Payload, w.Payload) || !bytes.Equal(e.Metadata, w.Metadata) {
				t.Fatalf("message %d is %+v, want the store's %+v (origin_seq order, identity intact)", i, e, w)
			}
			if m.Subject != wire.LiveSubject("orders", w.Tenant, w.EventType) {
				t.Fatalf("message %d on %s, want its (tenant, type) subject %s", i, m.Subject, wire.LiveSubject("orders", w.Tenant, w.EventType))
			}
			if id := m.Header.Get(nats.MsgIdHdr); id != "orders:"+strconv.Itoa(i+1) {
				t.Fatalf("message %d has message id %q, want orders:%d", i, id, i+1)
			}
		}
		if c := cursor(t, b.pool); c != 60 {
			t.Fatalf("relay cursor at %d, want 60", c)
		}
	})

	// Invariant 7: a relay that does not stamp (StampBatch < 0) leaves an unstamped event alone,
	// it has no place in the order yet; the stamper's NOTIFY wakes the relay (its failsafe poll
	// is an hour, so nothing else can).
	t.Run("PublishesOnlyStampedEventsAndWakesOnTheStamp", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		r.PollInterval = time.Hour
		r.StampBatch = -1
		appendStamped(t, b.pool, "s", 3)
		appendEvents(t, b.pool, "late", 1, 2) // committed, not yet stamped
		testrun.Go(t, "relay", r.Run)
		b.published.await(t, 3)
		if n := b.nats.Count(t, wire.EventsStream, ownSubjects); n != 3 {
			t.Fatalf("the stream holds %d events, want only the 3 stamped ones", n)
		}

		if _, err := store.EventsStamp(ctx, b.pool, 100); err != nil {
			t.Fatal(err)
		}
		b.published.await(t, 5)
		if n := b.nats.Count(t, wire.EventsStream, ownSubjects); n != 5 {
			t.Fatalf("the stream holds %d events after the stamp, want 5", n)
		}
	})

	// Invariants 7 and 1, the leading relay's one round: woken by an own insert's NOTIFY (no
	// stamper runs, the failsafe poll is an hour), it numbers what has committed as stamp() does
	// and publishes it in origin_seq order; an insert made while it waits is the next round.
	t.Run("StampsWhatCommittedAndPublishesIt", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		r.PollInterval = time.Hour
		recorded := b.nats.Record(t, wire.EventsStream, ownSubjects)
		appendEvents(t, b.pool, "s", 0, 3)
		testrun.Go(t, "relay", r.Run)
		b.published.await(t, 3)
		appendEvents(t, b.pool, "s", 3, 2)
		b.published.await(t, 5)

		want := ownLane(t, b.pool)
		msgs := recorded.AwaitCount(t, "5 events on the wire", 5)
		for i, m := range msgs {
			e, err := wire.DecodeEvent(m.Header, m.Data)
			if err != nil {
				t.Fatalf("message %d does not decode: %v", i, err)
			}
			if e.OriginSeq != int64(i+1) || e.EventID != want[i].EventID || e.TypeSeq != want[i].TypeSeq {
				t.Fatalf("message %d is origin_seq %d (%s, type_seq %d), want the store's %d (%s, type_seq %d)",
					i, e.OriginSeq, e.EventID, e.TypeSeq, i+1, want[i].EventID, want[i].TypeSeq)
			}
		}
		var last int64
		if err := b.pool.QueryRow(ctx, "select last_origin_seq from streamseal.stamp_state").Scan(&last); err != nil {
			t.Fatal(err)
		}
		if last != 5 || len(want) != 5 {
			t.Fatalf("stamp_state at %d with %d stamped own events, want 5 and 5", last, len(want))
		}
	})

	// Invariant 1, issue 16 (appends notify only while a sleeper holds the sleep lock): an
	// append in flight while the leading relay, which stamps and no stamper beside it, goes to
	// wait (it sent no NOTIFY: nobody slept when it inserted) is published once it commits,
	// though the failsafe poll is an hour. Witness that the relay waits: its connection idle
	// after its round's statement or its sleep-lock check.
	t.Run("PublishesAnAppendThatWasInFlightWhenItWentToWait", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		r.PollInterval = time.Hour
		inFlight, err := b.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer inFlight.Rollback(ctx)
		appendEvents(t, inFlight, "s", 0, 1)
		testrun.Go(t, "relay", r.Run)
		testrun.WaitFor(t, "the relay waiting after its first round", func() bool {
			var waiting bool
			err := b.pool.QueryRow(ctx, `select exists (select from pg_stat_activity
				where datname = current_database() and state = 'idle'
				  and (query like '%relay_page%' or query like '%stamper_sleep_arm%'))`).Scan(&waiting)
			return err == nil && waiting
		})
		if err := inFlight.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		b.published.await(t, 1)
	})

	// Invariant 1: numbers reach the wire only once their stamp has committed. A stamp that fails
	// at commit (here a deferred trigger refuses it) publishes nothing: JetStream would otherwise
	// hold "orders:1" for an event that never had that number, and drop the real one as a
	// duplicate. Once commits succeed, everything goes out in order.
	t.Run("PublishesNothingOfAStampThatDidNotCommit", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		restarts := make(chan struct{}, 16)
		r.Logger = slog.New(onMessage{Handler: r.Logger.Handler(), message: "relay: restarting", seen: restarts})
		r.PollInterval = 20 * time.Millisecond
		if _, err := b.pool.Exec(ctx, `
			create function public.refuse_at_commit() returns trigger language plpgsql as
			$$ begin raise exception 'stamp refused at commit'; end $$;
			create constraint trigger refuse_stamp after insert on streamseal.own_numbers
			deferrable initially deferred for each row execute function public.refuse_at_commit()`); err != nil {
			t.Fatal(err)
		}
		appendEvents(t, b.pool, "s", 0, 3)
		testrun.Go(t, "relay", r.Run)

		testrun.Receive(t, "the relay's stamp failing at commit", restarts)
		testrun.Receive(t, "the relay failing again after a retry", restarts)
		if n := b.nats.Count(t, wire.EventsStream, ownSubjects); n != 0 {
			t.Fatalf("the stream holds %d events of a stamp that never committed", n)
		}

		if _, err := b.pool.Exec(ctx, "drop trigger refuse_stamp on streamseal.own_numbers"); err != nil {
			t.Fatal(err)
		}
		b.published.await(t, 3)
		want := ownLane(t, b.pool)
		msgs := b.nats.Record(t, wire.EventsStream, ownSubjects).AwaitCount(t, "the 3 events", 3)
		for i, m := range msgs {
			if m.Header.Get(nats.MsgIdHdr) != "orders:"+strconv.Itoa(i+1) || m.Header.Get("Streamseal-Event-Id") != want[i].EventID.String() {
				t.Fatalf("message %d carries %s / %s, want orders:%d / %s", i, m.Header.Get(nats.MsgIdHdr),
					m.Header.Get("Streamseal-Event-Id"), i+1, want[i].EventID)
			}
		}
	})

	// Invariant 1 across restarts: a relay starts above its cursor (what JetStream acknowledged
	// to a predecessor), never republishes below it, and a restarted relay goes on from where the
	// last one stopped.
	t.Run("ResumesAfterItsCursor", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		recorded := b.nats.Record(t, wire.EventsStream, ownSubjects)
		appendStamped(t, b.pool, "s", 20)
		// A predecessor published 1..12 and recorded it.
		if _, err := b.pool.Exec(ctx, "update streamseal.relay_state set published_through = 12"); err != nil {
			t.Fatal(err)
		}
		stop := testrun.Go(t, "first relay", r.Run)
		b.published.await(t, 20)
		if err := stop(); err != nil {
			t.Fatalf("stopped relay returned %v", err)
		}

		appendStamped(t, b.pool, "t", 5)
		second := &relay.Relay{Pool: b.pool, JS: r.JS, Logger: r.Logger, OnPublished: b.published.record}
		testrun.Go(t, "second relay", second.Run)
		b.published.await(t, 25)

		msgs := recorded.AwaitCount(t, "the 13 events above the first cursor", 13)
		if n := b.nats.Count(t, wire.EventsStream, ownSubjects); n != 13 {
			t.Fatalf("the stream holds %d events, want 13 (13..25, nothing below the cursor)", n)
		}
		for i, m := range msgs {
			if seq := m.Header.Get("Streamseal-Origin-Seq"); seq != strconv.Itoa(13+i) {
				t.Fatalf("message %d carries origin_seq %s, want %d", i, seq, 13+i)
			}
		}
	})

	// Invariants 1 and 13: while JetStream acknowledges nothing (here: the events stream is gone)
	// the relay keeps retrying, its cursor stays where JetStream's acknowledgements put it, and
	// once the stream is back every event goes out, in order, none skipped.
	t.Run("KeepsItsCursorUntilJetStreamAcknowledges", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		restarts := make(chan struct{}, 16)
		r.Logger = slog.New(onMessage{Handler: r.Logger.Handler(), message: "relay: restarting", seen: restarts})
		r.PollInterval = 20 * time.Millisecond
		if err := b.nats.JS.DeleteStream(ctx, wire.EventsStream); err != nil {
			t.Fatal(err)
		}
		appendStamped(t, b.pool, "s", 10)
		testrun.Go(t, "relay", r.Run)

		testrun.Receive(t, "the relay failing to publish", restarts)
		testrun.Receive(t, "the relay failing again after a retry", restarts)
		if c := cursor(t, b.pool); c != 0 {
			t.Fatalf("relay cursor moved to %d while JetStream acknowledged nothing", c)
		}

		if err := wire.EnsureStreams(ctx, b.nats.JS, 0); err != nil {
			t.Fatal(err)
		}
		b.published.await(t, 10)
		wireCarriesInOrder(t, b.nats, 10)
	})

	// Invariant 7's wire order across a broker outage that ends in the middle of a round: the
	// events stream is missing while the relay starts, and comes back on its fifth publish, once
	// the publishes before it have failed. A relay that pipelined that round would have the
	// stream store the round's tail (5..10) before the head it publishes again (1..4: JetStream
	// drops 5..10 as duplicates), so the wire would carry 5..10, 1..4. A relay proves the broker
	// takes its first message before pipelining the rest, so the wire carries 1..10 in order.
	t.Run("KeepsOriginSeqOrderWhenTheStreamReturnsMidRound", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		r.PollInterval = 20 * time.Millisecond
		if err := b.nats.JS.DeleteStream(ctx, wire.EventsStream); err != nil {
			t.Fatal(err)
		}
		r.JS = &atPublish{JetStream: r.JS, at: 5, do: func() error { return wire.EnsureStreams(ctx, b.nats.JS, 0) }}
		appendStamped(t, b.pool, "s", 10)
		testrun.Go(t, "relay", r.Run)

		b.published.await(t, 10)
		wireCarriesInOrder(t, b.nats, 10)
	})

	// Invariant 13: a publish nobody acknowledges does not wedge the relay. With the events stream
	// gone, a plain subscriber on the events subjects (a stray or hostile client) takes the
	// publishes and never answers, so JetStream's acknowledgement never comes. The silence starts
	// on the relay's second publish, after its first (a leadership's lone first publish) was
	// acknowledged, so it strikes a pipelined batch: the relay gives up on it after AckWait,
	// restarts from its cursor, gives up on its lone first publish again, and publishes
	// everything once the stream is back.
	t.Run("RestartsWhenNoAcknowledgementComes", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		restarts := make(chan string, 16)
		r.Logger = slog.New(onError{Handler: r.Logger.Handler(), message: "relay: restarting", seen: restarts})
		r.PollInterval = 20 * time.Millisecond
		r.AckWait = 200 * time.Millisecond
		silent, _ := b.nats.Connect(t, "stray")
		swallowed := make(chan *nats.Msg, 64)
		var sub *nats.Subscription
		r.JS = &atPublish{JetStream: r.JS, at: 2, do: func() error {
			if err := b.nats.JS.DeleteStream(ctx, wire.EventsStream); err != nil {
				return err
			}
			var err error
			if sub, err = silent.ChanSubscribe(ownSubjects, swallowed); err != nil {
				return err
			}
			return silent.Flush()
		}}
		appendStamped(t, b.pool, "s", 10)
		testrun.Go(t, "relay", r.Run)

		b.published.await(t, 1)
		for _, want := range []string{"publish event origin_seq 2: no acknowledgement within 200ms", "context deadline exceeded"} {
			if got := testrun.Receive(t, "the relay giving up on an unacknowledged publish", restarts); !strings.Contains(got, want) {
				t.Fatalf("the relay restarted with %q, want an error containing %q", got, want)
			}
		}
		if c := cursor(t, b.pool); c != 1 {
			t.Fatalf("relay cursor at %d, want 1: JetStream acknowledged only the first event", c)
		}
		if err := sub.Unsubscribe(); err != nil {
			t.Fatal(err)
		}
		if err := wire.EnsureStreams(ctx, b.nats.JS, 0); err != nil {
			t.Fatal(err)
		}
		b.published.await(t, 10)
		if n := b.nats.Count(t, wire.EventsStream, ownSubjects); n != 9 {
			t.Fatalf("the re-created stream holds %d events, want 9 (2..10)", n)
		}
	})

	// Invariants 7 and 1 across the hand-off between the relay and the node's standalone stamper
	// (stamper.Loop.Yield = Relay.Stamping): quiet, the relay numbers what commits; a full page
	// makes it busy and it hands the numbering to the stamper, which numbers what commits while
	// the relay only reads; the first round that ends with nothing received takes the numbering
	// back. Nothing is numbered twice or skipped, and the wire carries 1..9 once each, in order.
	// The relay is held busy without timing: with one batch in flight, its cursor write waits on
	// a row lock this test holds, so its third page cannot be handed on.
	t.Run("HandsNumberingToTheStamperWhenBusyAndTakesItBack", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		r.Batch, r.InFlight, r.PollInterval = 2, 1, time.Hour
		recorded := b.nats.Record(t, wire.EventsStream, ownSubjects)
		var mu sync.Mutex
		var rounds []relay.RoundTrace
		r.OnRound = func(rt relay.RoundTrace) {
			mu.Lock()
			rounds = append(rounds, rt)
			mu.Unlock()
		}
		// OnRound reports a round after its cursor write, so after OnPublished: the round's trace
		// is waited for, the publication being no witness of it.
		roundThrough := func(seq int64) relay.RoundTrace {
			var found relay.RoundTrace
			testrun.WaitFor(t, fmt.Sprintf("the trace of the round that published origin_seq %d", seq), func() bool {
				mu.Lock()
				defer mu.Unlock()
				for _, rt := range rounds {
					if rt.Through >= seq {
						found = rt
						return true
					}
				}
				return false
			})
			return found
		}
		stampedByLoop := make(chan int, 16)
		loop := &stamper.Loop{Pool: b.pool, PollInterval: time.Hour, Coalesce: -1, Logger: r.Logger, Yield: r.Stamping,
			OnStamp: func(s store.StampResult) { stampedByLoop <- s.Stamped }}
		testrun.Go(t, "relay", r.Run)
		testrun.Go(t, "stamper", loop.Run)
		testrun.WaitFor(t, "the relay leading and stamping", r.Stamping)

		// Quiet: the relay numbers the commit itself.
		appendEvents(t, b.pool, "s", 0, 1)
		b.published.await(t, 1)
		if rt := roundThrough(1); !rt.Stamping || rt.Stamped != 1 {
			t.Fatalf("the quiet commit's round: stamping %v, stamped %d; want the relay numbering it (true, 1)", rt.Stamping, rt.Stamped)
		}

		// Busy: six events in one commit fill three pages of two. The cursor write of the first
		// page waits on our lock, so the relay stays busy (it cannot hand on its third page).
		lock, err := b.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Rollback(ctx)
		if _, err := lock.Exec(ctx, "select from streamseal.relay_state for update"); err != nil {
			t.Fatal(err)
		}
		appendEvents(t, b.pool, "s", 1, 6)
		testrun.WaitFor(t, "the relay stamping origin_seq 2..7 and going busy", func() bool {
			var last int64
			if err := b.pool.QueryRow(ctx, "select last_origin_seq from streamseal.stamp_state").Scan(&last); err != nil {
				t.Error(err)
				return true
			}
			return last == 7 && !r.Stamping()
		})
		// Busy, the stamper numbers what commits.
		appendEvents(t, b.pool, "s", 7, 1)
		if n := testrun.Receive(t, "the stamper numbering the commit made while the relay is busy", stampedByLoop); n != 1 {
			t.Fatalf("the stamper numbered %d events, want 1 (origin_seq 8)", n)
		}
		if err := lock.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		b.published.await(t, 8)
		if rt := roundThrough(6); rt.Stamping {
			t.Fatalf("the round that published origin_seq 6 was a stamping round: the relay did not hand over on a full page")
		}

		// Quiet again: the relay takes the numbering back and numbers the next commit itself.
		testrun.WaitFor(t, "the relay taking the numbering back", r.Stamping)
		appendEvents(t, b.pool, "s", 8, 1)
		b.published.await(t, 9)
		if rt := roundThrough(9); !rt.Stamping || rt.Stamped != 1 {
			t.Fatalf("the commit after the burst: its round stamping %v, stamped %d; want the relay numbering it (true, 1)", rt.Stamping, rt.Stamped)
		}
		select {
		case n := <-stampedByLoop:
			t.Fatalf("the stamper numbered %d more events beside the relay", n)
		default:
		}

		// Each number once, none skipped, on the wire once each and in order.
		lane := ownLane(t, b.pool)
		if len(lane) != 9 {
			t.Fatalf("%d own events numbered, want 9", len(lane))
		}
		for i, e := range lane {
			if e.OriginSeq != int64(i+1) {
				t.Fatalf("own event %d holds origin_seq %d, want %d (dense, none twice)", i, e.OriginSeq, i+1)
			}
		}
		msgs := recorded.AwaitCount(t, "9 events on the wire", 9)
		for i, m := range msgs {
			if seq := m.Header.Get("Streamseal-Origin-Seq"); seq != strconv.Itoa(i+1) || m.Header.Get("Streamseal-Event-Id") != lane[i].EventID.String() {
				t.Fatalf("message %d carries origin_seq %s (%s), want %d (%s)", i, seq, m.Header.Get("Streamseal-Event-Id"), i+1, lane[i].EventID)
			}
		}
		if n := b.nats.Count(t, wire.EventsStream, ownSubjects); n != 9 {
			t.Fatalf("the stream holds %d events, want 9", n)
		}
	})

	// One active relay per service (DESIGN.md, control plane jobs) and invariant 7 across a
	// failover: a second replica waits while the leader relays, takes over when the leader stops,
	// and continues the same order.
	t.Run("AStandbyReplicaTakesOverWhenTheLeaderStops", func(t *testing.T) {
		t.Parallel()
		leader, b := setup(t)
		recorded := b.nats.Record(t, wire.EventsStream, ownSubjects)
		appendStamped(t, b.pool, "s", 5)
		stopLeader := testrun.Go(t, "leader", leader.Run)
		b.published.await(t, 5)

		standbyPublished := newProgress()
		standby := &relay.Relay{Pool: b.pool, JS: leader.JS, Logger: leader.Logger, PollInterval: 10 * time.Millisecond,
			OnPublished: standbyPublished.record}
		testrun.Go(t, "standby", standby.Run)
		appendStamped(t, b.pool, "s2", 5)
		b.published.await(t, 10)
		if got := standbyPublished.all(); len(got) != 0 {
			t.Fatalf("the standby published through %v while the leader held the lock", got)
		}

		if err := stopLeader(); err != nil {
			t.Fatalf("leader returned %v", err)
		}
		appendStamped(t, b.pool, "s3", 5)
		standbyPublished.await(t, 15)
		msgs := recorded.AwaitCount(t, "all 15 events", 15)
		for i, m := range msgs {
			if seq := m.Header.Get("Streamseal-Origin-Seq"); seq != strconv.Itoa(i+1) {
				t.Fatalf("message %d carries origin_seq %s, want %d (one order across the failover)", i, seq, i+1)
			}
		}
		if n := b.nats.Count(t, wire.EventsStream, ownSubjects); n != 15 {
			t.Fatalf("the stream holds %d events, want 15", n)
		}
	})
}

// progress records OnPublished calls and lets a test wait for one.
type progress struct {
	mu      sync.Mutex
	through []int64
	changed chan struct{}
}

func newProgress() *progress { return &progress{changed: make(chan struct{})} }

func (p *progress) record(through int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.through = append(p.through, through)
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *progress) all() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.through...)
}

// await waits until a batch through at least want was acknowledged.
func (p *progress) await(t *testing.T, want int64) {
	t.Helper()
	deadline := time.After(testrun.Failsafe)
	for {
		p.mu.Lock()
		done := len(p.through) > 0 && p.through[len(p.through)-1] >= want
		changed := p.changed
		p.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("gave up waiting for the relay to publish through %d (got %v)", want, p.all())
		}
	}
}

// onError sends the "err" attribute of every record with message to seen, then hands it on.
type onError struct {
	slog.Handler
	message string
	seen    chan string
}

func (h onError) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.message {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				select {
				case h.seen <- a.Value.String():
				default:
				}
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h onError) WithAttrs(as []slog.Attr) slog.Handler {
	return onError{Handler: h.Handler.WithAttrs(as), message: h.message, seen: h.seen}
}

// onMessage signals seen for every record with message, then hands it on.
type onMessage struct {
	slog.Handler
	message string
	seen    chan struct{}
}

func (h onMessage) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.message {
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

// appendEvents appends n own events to stream (versions from+1..from+n) over the event types.
func appendEvents(t *testing.T, db store.Querier, stream string, from, n int) {
	t.Helper()
	var events []store.NewEvent
	for i := range n {
		v := from + i + 1
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: stream, StreamVersion: int64(v),
			EventType: eventTypes[v%len(eventTypes)], Payload: []byte(fmt.Sprintf(`{ "v" :%d }`, v)),
			Metadata: []byte(`{"trace":"` + uuid.NewString() + `"}`)})
	}
	if _, err := store.EventsAppend(context.Background(), db, events); err != nil {
		t.Fatal(err)
	}
}

// appendStamped appends n own events to stream and stamps everything committed.
func appendStamped(t *testing.T, db store.Querier, stream string, n int) {
	t.Helper()
	appendEvents(t, db, stream, 0, n)
	if _, err := store.EventsStamp(context.Background(), db, 100000); err != nil {
		t.Fatal(err)
	}
}

func peerCopy(seq int64) store.EventCopy {
	return store.EventCopy{EventID: uuid.New(), Origin: "peer", OriginSeq: seq, TypeSeq: seq, Tenant: "acme",
		StreamID: "peer-s", StreamVersion: seq, EventType: eventTypes[0], Payload: []byte("{}")}
}

// ownLane reads the service's own stamped events in origin_seq order.
func ownLane(t *testing.T, pool *pgxpool.Pool) []store.EventCopy {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		select event_id, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload, metadata::text::bytea
		from streamseal.numbered_events where origin = 'orders' order by origin_seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.EventCopy
	for rows.Next() {
		var e store.EventCopy
		if err := rows.Scan(&e.EventID, &e.OriginSeq, &e.TypeSeq, &e.Tenant, &e.StreamID, &e.StreamVersion, &e.EventType,
			&e.Payload, &e.Metadata); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func cursor(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var c int64
	if err := pool.QueryRow(context.Background(), "select published_through from streamseal.relay_state").Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// atPublish is the relay's JetStream with a fault changed on the at-th publish (synchronous or
// not), after every publish before it has had its answer: the outage starts or ends at a known
// point inside a round.
type atPublish struct {
	jetstream.JetStream
	at    int
	do    func() error
	calls atomic.Int64
}

func (s *atPublish) before() error {
	if s.calls.Add(1) != int64(s.at) {
		return nil
	}
	select {
	case <-s.PublishAsyncComplete():
	case <-time.After(testrun.Failsafe):
		return fmt.Errorf("publishes before the %d-th still unanswered", s.at)
	}
	return s.do()
}

func (s *atPublish) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if err := s.before(); err != nil {
		return nil, err
	}
	return s.JetStream.PublishMsgAsync(m, opts...)
}

func (s *atPublish) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if err := s.before(); err != nil {
		return nil, err
	}
	return s.JetStream.PublishMsg(ctx, m, opts...)
}

// wireCarriesInOrder fails t unless the events stream holds the service's origin_seqs 1..n once
// each, in that order.
func wireCarriesInOrder(t *testing.T, srv *natstest.Server, n int) {
	t.Helper()
	msgs := srv.Record(t, wire.EventsStream, ownSubjects).AwaitCount(t, fmt.Sprintf("the %d events", n), n)
	for i, m := range msgs {
		if seq := m.Header.Get("Streamseal-Origin-Seq"); seq != strconv.Itoa(i+1) {
			t.Fatalf("message %d carries origin_seq %s, want %d", i, seq, i+1)
		}
	}
	if got := srv.Count(t, wire.EventsStream, ownSubjects); got != uint64(n) {
		t.Fatalf("the stream holds %d events, want %d", got, n)
	}
}
