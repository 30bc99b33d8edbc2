package redelivery_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// TestMeasureTwoReplicas (measurement only, STREAMSEAL_MEASURE_REPLICAS=rounds): two receivers of
// billing share the control durable and one database, as two `streamseal run` replicas do; an
// answer of many bundles and its summary is published, and the events stored and the bundles
// dropped as replayed are counted, grace 0 and the default alternating.
func TestMeasureTwoReplicas(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("STREAMSEAL_MEASURE_REPLICAS"))
	if rounds == 0 {
		t.Skip("measurement: set STREAMSEAL_MEASURE_REPLICAS=rounds")
	}
	ctx := context.Background()
	const bundles, perBundle = 300, 5
	for i := 0; i < 2*rounds; i++ {
		grace := []time.Duration{0, redelivery.AnswerGraceDefault}[i%2]
		pool := dbtest.NewPool(t, "billing")
		srv := natstest.Start(t)
		_, orders := srv.Connect(t, "orders")
		var controls []*wire.Control
		var receivers []*redelivery.Receiver
		for range 2 {
			_, js := srv.Connect(t, "billing")
			c := natstest.Control(t, js, "billing")
			r := &redelivery.Receiver{Pool: pool, Service: "billing", Logger: testrun.Logger(t), AnswerGrace: grace}
			r.Register(c)
			controls, receivers = append(controls, c), append(receivers, r)
		}
		_, js := srv.Connect(t, "billing-ask")
		id, err := redelivery.Request(ctx, pool, js, "billing", "orders", wire.RedeliveryRequest{Tenants: []string{"acme"}, Types: eventTypes[:1]})
		if err != nil {
			t.Fatal(err)
		}
		publish := func(kind string, body any, attachment []byte) {
			env, err := wire.NewEnvelope(kind, "orders", "billing", body)
			if err != nil {
				t.Fatal(err)
			}
			if err := wire.Publish(ctx, orders, env, attachment); err != nil {
				t.Fatal(err)
			}
		}
		for c := range controls {
			testrun.Go(t, "replica", controls[c].Run)
		}
		for b := range bundles {
			bundle, bytes := bundleOf(id, false, ordersCopies("s"+strconv.Itoa(b), int64(1+b*perBundle), perBundle))
			publish(wire.KindRedeliveryBundle, bundle, bytes)
		}
		publish(wire.KindRedeliverySummary, wire.RedeliverySummary{RequestID: id, Origin: "orders", Shipped: bundles * perBundle, Bundles: bundles}, nil)
		testrun.WaitFor(t, "every message handled", func() bool {
			return controls[0].Finished()+controls[1].Finished() >= bundles+1
		})
		stored := len(lane(t, pool, "orders"))
		replayed := controls[0].Seam.Dropped()[wire.DropReplayed] + controls[1].Seam.Dropped()[wire.DropReplayed]
		_, s0, _ := receivers[0].Counts()
		_, s1, _ := receivers[1].Counts()
		t.Logf("MEASURE round %d grace=%v stored=%d/%d replayed_bundles=%d split=%d/%d", i/2, grace, stored, bundles*perBundle, replayed, s0, s1)
	}
}
