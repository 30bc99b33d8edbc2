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
	"github.com/jackc/pgx/v5/pgxpool"
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

// laneMarkRig is billing consuming orders' order.placed through the real inbox and verifier,
// with the wire driven by the test: the lane-set mark tests' shared set-up (invariant 15).
type laneMarkRig struct {
	t         *testing.T
	pool      *pgxpool.Pool
	srv       *natstest.Server
	in        *inbox.Inbox
	at        time.Time
	beatsDone atomic.Int64
}

// newLaneMarkRig builds the rig; seam, when set, stands between the inbox and the verifier's
// VerifyRun (a test fails a checkpoint there).
func newLaneMarkRig(t *testing.T, seam func(ctx context.Context, cps []wire.Checkpoint, ordered bool, verify func(context.Context, []wire.Checkpoint, bool) error) error) *laneMarkRig {
	t.Helper()
	ctx := context.Background()
	r := &laneMarkRig{t: t, pool: dbtest.NewPool(t, "billing"), srv: natstest.Start(t), at: time.Now().UTC()}
	if err := store.SubscriptionsAdd(ctx, r.pool, "orders", []string{"order.placed"}, store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	_, js := r.srv.Connect(t, "billing")
	cfg := config.Defaults()
	cfg.RepairMode = config.ReportOnly
	v := &checkpoint.Verifier{Pool: r.pool, JS: js, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
	onCheckpoint := v.VerifyRun
	if seam != nil {
		onCheckpoint = func(ctx context.Context, cps []wire.Checkpoint, ordered bool) error {
			return seam(ctx, cps, ordered, v.VerifyRun)
		}
	}
	r.in = &inbox.Inbox{Pool: r.pool, JS: js, Service: "billing", Logger: testrun.Logger(t), MaxDeliver: 1000,
		OnCheckpoint: onCheckpoint,
		OnBeat: func(ctx context.Context, b wire.Beat) error {
			if err := v.Beat(ctx, b); err != nil {
				return err
			}
			r.beatsDone.Add(1)
			return nil
		}}
	return r
}

func (r *laneMarkRig) publish(m *nats.Msg) {
	r.t.Helper()
	if _, err := r.srv.JS.PublishMsg(context.Background(), m); err != nil {
		r.t.Fatal(err)
	}
}

// beat publishes orders' beat of a round, listing lanes.
func (r *laneMarkRig) beat(first, to int64, roundAt time.Time, lanes []wire.BeatLane) {
	r.t.Helper()
	m, err := wire.BeatMessage(wire.Beat{Origin: "orders", IntervalS: 1, At: roundAt, From: first, To: to,
		Part: 1, Parts: 1, Lanes: lanes})
	if err != nil {
		r.t.Fatal(err)
	}
	r.publish(m)
}

// round publishes one round of orders as its relay and checkpoint publisher put it on the wire:
// its events (3 lost on the way to billing), the pair's checkpoint unless checkpointLost, and the
// beat listing the pair.
func (r *laneMarkRig) round(first, last int64, roundAt time.Time, checkpointLost bool) {
	r.t.Helper()
	for seq := first; seq <= last; seq++ {
		if seq == 3 {
			continue
		}
		r.publish(wire.EventMessage(store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: seq, TypeSeq: seq,
			Tenant: "acme", StreamID: "s", StreamVersion: seq, EventType: "order.placed",
			Payload: []byte(fmt.Sprintf(`{"n":%d}`, seq)), OccurredAt: r.at}))
	}
	if !checkpointLost {
		cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 1, At: roundAt, From: first, To: last + 1,
			Type: "order.placed", Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: last - first + 1, First: &first, Last: &last}}})
		if err != nil {
			r.t.Fatal(err)
		}
		r.publish(cp)
	}
	r.beat(first, last+1, roundAt, []wire.BeatLane{{Tenant: "acme", Type: "order.placed", Last: last}})
}

// boundary reads the whole feed from token and returns the next token and its boundary for orders.
func (r *laneMarkRig) boundary(token string) (string, int64) {
	r.t.Helper()
	ctx := context.Background()
	for {
		b, err := feed.Read(ctx, r.pool, feed.Options{}, token, 1000)
		if err != nil {
			r.t.Fatal(err)
		}
		token = b.Token
		if len(b.Events) == 0 {
			break
		}
	}
	bs, err := store.FeedTokenBoundaries(ctx, r.pool, token)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, b := range bs {
		if b.Origin == "orders" {
			return token, b.Boundary
		}
	}
	r.t.Fatalf("the token names no boundary for orders: %+v", bs)
	return "", 0
}

// birth is the birth_floor of billing's lane of orders' acme order.placed (nil: no lane yet).
func (r *laneMarkRig) birth() *int64 {
	r.t.Helper()
	var b *int64
	if err := r.pool.QueryRow(context.Background(), "select birth_floor from streamseal.lanes where origin = 'orders' and tenant = 'acme'").
		Scan(&b); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		r.t.Fatal(err)
	}
	return b
}

// mark is orders' lane-set mark at billing (-1: none yet).
func (r *laneMarkRig) mark() int64 {
	r.t.Helper()
	var m *int64
	if err := r.pool.QueryRow(context.Background(), "select lanes_announced_through from streamseal.known_origins where origin = 'orders'").
		Scan(&m); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		r.t.Fatal(err)
	}
	if m == nil {
		return -1
	}
	return *m
}
