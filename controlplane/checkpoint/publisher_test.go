package checkpoint_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/checkpoint"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestPublisher(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// publishedThrough is the origin's checkpoint watermark: how far rounds were published.
	publishedThrough := func(t *testing.T, db store.Querier) int64 {
		t.Helper()
		var through int64
		if err := db.QueryRow(ctx, "select published_through from streamseal.checkpoint_state").Scan(&through); err != nil {
			t.Fatal(err)
		}
		return through
	}

	// Invariants 13 and 14: a round whose publication the broker does not acknowledge (an outage)
	// gives up within the publisher's deadline, releases the window (nothing is marked
	// published) and lets the next round publish it; before the deadline, the round held the
	// window's row lock until River's job timeout while other replicas' rounds published nothing.
	t.Run("GivesTheRoundBackWhenTheBrokerDoesNotAnswer", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "orders")
		if _, err := store.EventsAppend(ctx, pool, []store.NewEvent{
			{Tenant: "acme", StreamID: "s", StreamVersion: 1, EventType: "order.placed", Payload: []byte(`{}`)},
			{Tenant: "acme", StreamID: "s", StreamVersion: 2, EventType: "order.paid", Payload: []byte(`{}`)},
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.EventsStamp(ctx, pool, 100); err != nil {
			t.Fatal(err)
		}
		down := natstest.Start(t)
		_, js := down.Connect(t, "orders")
		down.Embedded.Shutdown() // the broker is gone: the connection reconnects, acks never come
		p := &checkpoint.Publisher{Pool: pool, JS: js, Service: "orders", Interval: time.Second,
			Timeout: 200 * time.Millisecond, Logger: testrun.Logger(t)}
		// The round runs as River runs it: in a job whose context ends only at the job's timeout
		// (far off here, so only the publisher's own deadline can end it).
		jobCtx, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		done := make(chan error, 1)
		go func() { _, err := p.Publish(jobCtx); done <- err }()
		if err := testrun.Receive(t, "the round's end during the outage", done); err == nil {
			t.Fatal("a round published during the outage")
		}
		if through := publishedThrough(t, pool); through != 0 {
			t.Fatalf("the watermark moved to %d during the outage; want the window given back", through)
		}

		// The broker is back (another server here): the next round publishes the same window.
		up := natstest.Start(t)
		_, js = up.Connect(t, "orders")
		p.JS = js
		n, err := p.Publish(ctx)
		if err != nil || n != 2 {
			t.Fatalf("the round after the outage: %d messages, %v; want one per type", n, err)
		}
		if through := publishedThrough(t, pool); through == 0 {
			t.Fatal("the watermark did not move after the round")
		}
	})
}
