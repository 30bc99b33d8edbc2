package checkpoint_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

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
}
