package harness_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/relay"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariant 1 (no silent loss) across a relay crash: a relay killed mid-stream, whose last
// cursor update was lost too, resumes from what JetStream acknowledged; every event reaches the
// consumer exactly once (re-published ones are deduplicated) and the digests agree.
func TestRelay_KilledMidStreamResumesWithoutLossOrDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	orders := start(t, h, "orders", harness.Options{NoRelay: true}, nil)
	billing := start(t, h, "billing", harness.Options{Consumes: eventTypes}, nil)
	services := []*harness.Service{orders, billing}
	appendOrders(t, orders, 2000, 40)
	waitFor(t, "the stamper numbered everything", services, func() bool {
		var n int64
		_ = orders.Pool.QueryRow(ctx, "select last_origin_seq from streamseal.stamp_state").Scan(&n)
		return n == 2000
	})

	killed := make(chan struct{})
	var once sync.Once
	relayCtx, kill := context.WithCancel(ctx)
	first := &relay.Relay{Pool: orders.Pool, JS: orders.JS, Batch: 50, OnPublished: func(through int64) {
		if through >= 600 {
			once.Do(func() { kill(); close(killed) })
		}
	}}
	done := make(chan error, 1)
	go func() { done <- first.Run(relayCtx) }()
	select {
	case <-killed:
	case <-time.After(failsafe):
		t.Fatal("the first relay never published 600 events")
	}
	if err := <-done; err != nil {
		t.Fatalf("killed relay returned %v", err)
	}
	var cursor int64
	if err := orders.Pool.QueryRow(ctx, "select published_through from streamseal.relay_state").Scan(&cursor); err != nil {
		t.Fatal(err)
	}
	if cursor >= 2000 || cursor < 600 {
		t.Fatalf("cursor %d: the relay was not killed mid-stream", cursor)
	}
	// The crash also lost the last cursor updates: those events will be published again.
	if _, err := orders.Pool.Exec(ctx, "update streamseal.relay_state set published_through = $1", cursor-250); err != nil {
		t.Fatal(err)
	}

	restartCtx, stop := context.WithCancel(ctx)
	defer stop()
	second := &relay.Relay{Pool: orders.Pool, JS: orders.JS, Batch: 50}
	go func() { _ = second.Run(restartCtx) }()
	waitFor(t, "billing stored all 2000", services, func() bool { return countFrom(t, billing.Pool, "orders") == 2000 })

	if received := billing.Inbox.Counts().Received; received != 2000 {
		t.Fatalf("billing's inbox received %d deliveries for 2000 events: re-published events were not deduplicated", received)
	}
	requireSameRows(t, rowsOf(t, orders.Pool, "orders"), rowsOf(t, billing.Pool, "orders"))
	if a, b := digestsOf(t, orders.Pool, "orders"), digestsOf(t, billing.Pool, "orders"); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("billing's digests of orders differ from the origin's")
	}
}

// Operations: JetStream keeps events for --event-retention (default 7 days; repairs come from the
// origin's store, so the broker need not hold history forever), applied when a node starts.
func TestEventRetention_IsAppliedToTheEventsStream(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	settings.EventRetention = 3 * time.Hour
	orders := start(t, h, "orders", harness.Options{Settings: settings}, nil)
	stream, err := orders.JS.Stream(context.Background(), wire.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxAge != 3*time.Hour {
		t.Fatalf("events stream MaxAge = %s, want the configured 3h", info.Config.MaxAge)
	}
}
