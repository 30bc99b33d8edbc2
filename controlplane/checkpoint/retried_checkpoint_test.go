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

func TestRetriedCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// Invariant 15 (a token never allows a skip; issue 17's last certification gap), through the
	// real inbox and verifier: round R1's checkpoint of a new pair, [1, 10] (3 lost here), fails
	// verification at the verify seam and waits in checkpoint_inbox to be retried; R2's, [11, 20],
	// is verified first and births the lane at 10. A feed token taken then (both rounds' beats
	// recorded) does not pass R1's window. Once R1's checkpoint is verified, the birth lowers,
	// the origin's lane-set mark moves on, and the token certifies up to the hole at 3, not past.
	t.Run("ATokenTakenWhileAnEarlierCheckpointIsRetriedDoesNotPassItsWindow", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "orders", []string{"order.placed"}, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "billing")
		cfg := config.Defaults()
		cfg.RepairMode = config.ReportOnly
		v := &checkpoint.Verifier{Pool: pool, JS: js, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
		release := make(chan struct{})
		var failedR1, beatsDone atomic.Int64
		in := &inbox.Inbox{Pool: pool, JS: js, Service: "billing", Logger: testrun.Logger(t), MaxDeliver: 1000,
			OnCheckpoint: func(ctx context.Context, cps []wire.Checkpoint, ordered bool) error {
				for _, cp := range cps {
					if cp.From != 1 {
						continue
					}
					select {
					case <-release:
					default:
						failedR1.Add(1)
						return errors.New("the verify seam fails R1's checkpoint until the test releases it")
					}
				}
				return v.VerifyRun(ctx, cps, ordered)
			},
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
		// One round of orders as its relay and checkpoint publisher put it on the wire: the
		// events (3 lost on the way to billing), the pair's checkpoint, the beat listing the pair.
		round := func(first, last int64, roundAt time.Time) {
			for seq := first; seq <= last; seq++ {
				if seq == 3 {
					continue
				}
				publish(wire.EventMessage(store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: seq, TypeSeq: seq,
					Tenant: "acme", StreamID: "s", StreamVersion: seq, EventType: "order.placed",
					Payload: []byte(fmt.Sprintf(`{"n":%d}`, seq)), OccurredAt: at}))
			}
			cp, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 1, At: roundAt, From: first, To: last + 1,
				Type: "order.placed", Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: last - first + 1, First: &first, Last: &last}}})
			if err != nil {
				t.Fatal(err)
			}
			publish(cp)
			beat, err := wire.BeatMessage(wire.Beat{Origin: "orders", IntervalS: 1, At: roundAt, From: first, To: last + 1,
				Part: 1, Parts: 1, Lanes: []wire.BeatLane{{Tenant: "acme", Type: "order.placed", Last: last}}})
			if err != nil {
				t.Fatal(err)
			}
			publish(beat)
		}
		// boundary reads the whole feed from token and returns the next token and its boundary for orders.
		boundary := func(token string) (string, int64) {
			t.Helper()
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
					return token, b.Boundary
				}
			}
			t.Fatalf("the token names no boundary for orders: %+v", bs)
			return "", 0
		}
		var birth *int64
		lane := func() *int64 {
			birth = nil
			if err := pool.QueryRow(ctx, "select birth_floor from streamseal.lanes where origin = 'orders' and tenant = 'acme'").
				Scan(&birth); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				t.Fatal(err)
			}
			return birth
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

		round(1, 10, at)
		round(11, 20, at.Add(time.Second))
		testrun.Go(t, "inbox", in.Run)
		testrun.WaitFor(t, "R2's checkpoint verified first (the lane born at 10), both beats recorded, R1's checkpoint failed", func() bool {
			b := lane()
			return b != nil && *b == 10 && beatsDone.Load() == 2 && failedR1.Load() >= 1 && in.Counts().Stored == 19
		})
		token, between := boundary("")
		if between > 1 {
			t.Fatalf("a token taken while R1's checkpoint waits to be retried certifies orders through %d (mark %d): past R1's "+
				"window [1, 11), whose type_seq 3 was never checked; want at most 1", between, mark())
		}

		close(release)
		// The retry is due after its backoff; the test need not wait it out.
		if _, err := pool.Exec(ctx, "update streamseal.checkpoint_inbox set not_before = now()"); err != nil {
			t.Fatal(err)
		}
		testrun.WaitFor(t, "R1's checkpoint verified late and the lane-set mark moved over both rounds", func() bool {
			b := lane()
			return b != nil && *b == 0 && mark() == 21
		})
		if _, after := boundary(token); after != 3 {
			t.Fatalf("after R1's checkpoint was verified the token certifies orders through %d; want 3, just below the hole at 3", after)
		}
	})
}
