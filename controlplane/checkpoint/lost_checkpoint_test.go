package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"github.com/streamseal/streamseal/controlplane/checkpoint"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/inbox"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/feed"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Invariant 15 (a token never allows a skip; issue 17, migration 042), through the real inbox and
// verifier: round R1's checkpoint of a new pair, [1, 10] (3 lost here), never reaches the store
// (its recording failed and the broker has not redelivered it yet; a replica fetched it and has
// not committed), so checkpoint_inbox holds no trace of it; R2's, [11, 20], is verified and births
// the lane at 10. A token taken then does not pass R1's window while the broker could still
// deliver R1 (_lane_rounds_hold); once that has passed (the test ages the hold), the next beat
// moves the origin's lane-set mark on: the mark never stalls on a checkpoint that never comes.
func TestLostCheckpointHoldsTheMarkForTheRedeliveryHorizon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t, "billing")
	if err := store.SubscriptionsAdd(ctx, pool, "orders", []string{"order.placed"}, store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	srv := natstest.Start(t)
	_, js := srv.Connect(t, "billing")
	cfg := config.Defaults()
	cfg.RepairMode = config.ReportOnly
	v := &checkpoint.Verifier{Pool: pool, JS: js, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
	var beatsDone atomic.Int64
	in := &inbox.Inbox{Pool: pool, JS: js, Service: "billing", Logger: testrun.Logger(t),
		OnCheckpoint: v.VerifyRun,
		OnBeat: func(ctx context.Context, b wire.Beat) error {
			if err := v.Beat(ctx, b); err != nil {
				return err
			}
			beatsDone.Add(1)
			return nil
		}}

	at := time.Now().UTC()
	publish := func(m *nats.Msg) {
		t.Helper()
		if _, err := srv.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	beat := func(first, to int64, roundAt time.Time, lanes []wire.BeatLane) {
		t.Helper()
		m, err := wire.BeatMessage(wire.Beat{Origin: "orders", IntervalS: 1, At: roundAt, From: first, To: to,
			Part: 1, Parts: 1, Lanes: lanes})
		if err != nil {
			t.Fatal(err)
		}
		publish(m)
	}
	// One round of orders on the wire: its events (3 lost on the way to billing), the pair's
	// checkpoint unless it is lost too, the beat listing the pair.
	round := func(first, last int64, roundAt time.Time, checkpointLost bool) {
		for seq := first; seq <= last; seq++ {
			if seq == 3 {
				continue
			}
			publish(wire.EventMessage(store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: seq, TypeSeq: seq,
				Tenant: "acme", StreamID: "s", StreamVersion: seq, EventType: "order.placed",
				Payload: []byte(fmt.Sprintf(`{"n":%d}`, seq)), OccurredAt: at}))
		}
		if !checkpointLost {
			cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 1, At: roundAt, From: first, To: last + 1,
				Type: "order.placed", Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: last - first + 1, First: &first, Last: &last}}})
			if err != nil {
				t.Fatal(err)
			}
			publish(cp)
		}
		beat(first, last+1, roundAt, []wire.BeatLane{{Tenant: "acme", Type: "order.placed", Last: last}})
	}
	boundary := func() int64 {
		t.Helper()
		token := ""
		for {
			b, err := feed.Read(ctx, pool, feed.Options{}, token, 1000)
			if err != nil {
				t.Fatal(err)
			}
			token = b.Token
			if len(b.Events) == 0 {
				break
			}
		}
		bs, err := store.FeedTokenBoundaries(ctx, pool, token)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.Origin == "orders" {
				return b.Boundary
			}
		}
		t.Fatalf("the token names no boundary for orders: %+v", bs)
		return 0
	}
	birth := func() *int64 {
		var b *int64
		if err := pool.QueryRow(ctx, "select birth_floor from streamseal.lanes where origin = 'orders' and tenant = 'acme'").
			Scan(&b); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return b
	}
	mark := func() int64 {
		var m *int64
		if err := pool.QueryRow(ctx, "select lanes_announced_through from streamseal.known_origins where origin = 'orders'").
			Scan(&m); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if m == nil {
			return -1
		}
		return *m
	}

	round(1, 10, at, true)
	round(11, 20, at.Add(time.Second), false)
	testrun.Go(t, "inbox", in.Run)
	testrun.WaitFor(t, "R2's checkpoint verified (the lane born at 10) and both beats recorded", func() bool {
		b := birth()
		return b != nil && *b == 10 && beatsDone.Load() == 2 && in.Counts().Stored == 19
	})
	if got := boundary(); got > 1 {
		t.Fatalf("a token taken while R1's checkpoint could still be redelivered certifies orders through %d (mark %d): "+
			"past R1's window [1, 11), whose type_seq 3 was never checked; want at most 1", got, mark())
	}

	// The broker's redelivery horizon passes (aged here: the test does not wait it out).
	if _, err := pool.Exec(ctx, `update streamseal.lane_round_pairs
		set held_since = now() - streamseal._lane_rounds_hold() - interval '1 second' where origin = 'orders'`); err != nil {
		t.Fatal(err)
	}
	beat(21, 21, at.Add(2*time.Second), nil)
	testrun.WaitFor(t, "the next beat after the hold moves the lane-set mark over both rounds", func() bool {
		return mark() == 21
	})
}
