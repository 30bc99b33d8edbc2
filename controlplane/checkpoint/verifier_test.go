package checkpoint_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/checkpoint"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestVerifier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// Invariants 1 and 6 (tail loss) with quiet pairs not checkpointed (issue 21 item 3): the
	// window that announced a pair's last events leaves the lost one suspected (order not
	// proven); the pair then goes quiet and sends nothing more, and the origin's next beat
	// confirms the hole and requests it, once: a further beat asks nothing again before the
	// re-ask deadline, and a beat never moves the floor past the hole.
	t.Run("ABeatConfirmsAQuietPairsTailLossAndRequestsItOnce", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "orders", []string{"order.placed"}, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		var copies []store.EventCopy
		for seq := int64(1); seq <= 4; seq++ { // 5 is lost
			copies = append(copies, store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: seq, TypeSeq: seq,
				Tenant: "acme", StreamID: "s", StreamVersion: seq, EventType: "order.placed",
				Payload: []byte(fmt.Sprintf(`{"n":%d}`, seq)), OccurredAt: time.Now().UTC()})
		}
		if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
			t.Fatal(err)
		}
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "billing")
		cfg := config.Defaults()
		cfg.RepairMode = config.AutoRepairCapped
		v := &checkpoint.Verifier{Pool: pool, JS: js, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
		sent := func() int {
			var n int
			if err := pool.QueryRow(ctx, "select count(*) from streamseal.sent_requests").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		first, last := int64(1), int64(5)
		at := time.Now().UTC()
		if err := v.Verify(ctx, wire.Checkpoint{Origin: "orders", IntervalS: 1, At: at, From: 1, To: 6, Type: "order.placed",
			Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: 5, First: &first, Last: &last}}}, false); err != nil {
			t.Fatal(err)
		}
		if _, gaps, _ := v.Counts(); gaps != 0 || sent() != 0 {
			t.Fatalf("the announcing window confirmed %d gaps and sent %d requests; want the hole suspected only", gaps, sent())
		}
		for round := 1; round <= 3; round++ {
			if err := v.Beat(ctx, wire.Beat{Origin: "orders", IntervalS: 1, At: at.Add(time.Duration(round) * time.Second), From: 6, To: 6}); err != nil {
				t.Fatal(err)
			}
			if _, gaps, requests := v.Counts(); gaps != 1 || requests != 1 || sent() != 1 {
				t.Fatalf("after beat %d: %d gaps, %d requests, %d sent; want the tail loss confirmed and requested once", round, gaps, requests, sent())
			}
		}
		var floor int64
		var confirmed string
		if err := pool.QueryRow(ctx, "select floor, confirmed::text from streamseal.lanes where origin = 'orders' and tenant = 'acme'").
			Scan(&floor, &confirmed); err != nil {
			t.Fatal(err)
		}
		if floor != 4 || confirmed != "{[5,6)}" {
			t.Fatalf("lane floor %d confirmed %s; want floor 4 below the hole {[5,6)}", floor, confirmed)
		}
		if v.Beats() != 3 {
			t.Fatalf("beats counted %d, want 3", v.Beats())
		}
	})

	// Invariant 9 (storm bounds without starvation): checkpoints and beats share one fairness
	// order. Cap one request a round; four lanes (2 tenants x 2 types) each lose one event every
	// round; each round's checkpoints arrive in the same order (the first lane always first) and
	// each round's beat arrives late, after the next round's checkpoints (the beat rides its own
	// durable, so nothing orders it against the pairs' subjects). Over five rounds each lane is
	// served once before any lane is served twice. (Before: a late beat re-offered the waiting
	// lanes under its older round, which counted them as no longer waiting, and the first lane
	// took the cap a second time while two lanes had never been served.)
	t.Run("CheckpointsAndLateBeatsServeEveryLaneInTurn", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		types, tenants := []string{"order.placed", "order.shipped"}, []string{"t1", "t2"}
		if err := store.SubscriptionsAdd(ctx, pool, "orders", types, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		cfg := config.Defaults()
		cfg.RepairMode = config.ReportOnly
		cfg.MaxAutoRepairRequestsPerCheckpoint = 1
		cfg.RepairRetryAfter = time.Hour
		v := &checkpoint.Verifier{Pool: pool, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
		base := time.Now().UTC().Truncate(time.Second)
		roundAt := func(r int) time.Time { return base.Add(time.Duration(r) * time.Second) }
		seq := int64(0)
		windows := map[int][2]int64{}
		for round := 1; round <= 5; round++ {
			from := seq + 1
			var cps []wire.Checkpoint
			var copies []store.EventCopy
			for _, eventType := range types {
				for _, tenant := range tenants {
					// Each lane's round holds type_seqs 2r-1 (stored) and 2r (lost).
					kept, lost := int64(2*round-1), int64(2*round)
					seq++
					copies = append(copies, store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: seq, TypeSeq: kept,
						Tenant: tenant, StreamID: fmt.Sprintf("r%d-%s-%s", round, tenant, eventType), StreamVersion: 1, EventType: eventType,
						Payload: []byte("{}"), OccurredAt: time.Now().UTC()})
					seq++ // the lost one
					cps = append(cps, wire.Checkpoint{Origin: "orders", IntervalS: 1, At: roundAt(round), Type: eventType,
						Tenants: []wire.CheckpointTenant{{Tenant: tenant, N: 2, First: &kept, Last: &lost}}})
				}
			}
			if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
				t.Fatal(err)
			}
			windows[round] = [2]int64{from, seq + 1}
			for _, cp := range cps {
				cp.From, cp.To = from, seq+1
				if err := v.Verify(ctx, cp, true); err != nil {
					t.Fatal(err)
				}
			}
			if round > 1 { // the previous round's beat, late
				w := windows[round-1]
				if err := v.Beat(ctx, wire.Beat{Origin: "orders", IntervalS: 1, At: roundAt(round - 1), From: w[0], To: w[1]}); err != nil {
					t.Fatal(err)
				}
			}
		}
		rows, err := pool.Query(ctx, "select tenant || ' ' || event_type from streamseal.gap_reports where action = 'would_request' order by id")
		if err != nil {
			t.Fatal(err)
		}
		order, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		served := map[string]int{}
		for i, lane := range order {
			served[lane]++
			if served[lane] == 2 && len(served) < len(types)*len(tenants) {
				t.Fatalf("lane %s served a second time (request %d of %v) before every lane was served once", lane, i+1, order)
			}
		}
		if len(order) > 5 || len(served) < len(types)*len(tenants) {
			t.Fatalf("served %v over five capped rounds; want at most one a round, every lane once", order)
		}
	})
}
