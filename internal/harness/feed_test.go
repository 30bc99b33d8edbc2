package harness_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/feed"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariants 15, 1 and 6 over the real wire (the reference's leapfrog): orders' delivery of one
// event to billing is lost; a reader live on billing's feed passes the events after it; the
// token it holds then never passes the hole; checkpoint repair re-sends the lost event, which
// lands below the reader's position and reaches it; the token taken while the hole was open
// resumes to deliver it, on billing and on shipping (another consumer of orders).
func TestFeed_ARepairLandingBelowALiveReaderReachesItAndItsHoleToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	placed := eventTypes[:1]
	orders := start(t, h, "orders", harness.Options{Settings: settings,
		Grants: map[string][]string{"billing": eventTypes, "shipping": eventTypes}}, nil)
	lose := &suppressOnce{lose: map[uuid.UUID]bool{}}
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: placed, Suppress: lose.fn}, nil)
	shipping := start(t, h, "shipping", harness.Options{Settings: settings, Consumes: placed}, nil)
	services := []*harness.Service{orders, billing, shipping}

	event := func(v int64) store.NewEvent {
		return store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "one", StreamVersion: v, EventType: placed[0], Payload: []byte("{}")}
	}
	if _, err := store.EventsAppend(ctx, orders.Pool, []store.NewEvent{event(1)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "billing's lane born", services, func() bool { return laneFloor(t, billing, "orders", "acme", placed[0]) == 1 })

	var (
		mu      sync.Mutex
		seen    = map[uuid.UUID]int{}
		handled int64 // events handed to the handler; Delivered() reaches it once they are acknowledged
	)
	sub := feed.NewSubscriber(billing.Pool, feed.Options{Types: placed})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- sub.Run(runCtx, func(_ context.Context, _ pgx.Tx, b feed.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range b.Events {
				seen[e.EventID]++
			}
			handled += int64(len(b.Events))
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("subscriber: %v", err)
		}
	})
	got := func(id uuid.UUID) bool { mu.Lock(); defer mu.Unlock(); return seen[id] > 0 }

	events := []store.NewEvent{event(2), event(3), event(4)}
	dropped := events[1]
	lose.mu.Lock()
	lose.lose[dropped.EventID] = true
	lose.mu.Unlock()
	// The token in force while the hole is open: taken once the reader passed 4. The repair
	// needs a checkpoint covering the loss first; should it already have reached the reader, the
	// boundary may rightly pass it, and the check below says nothing (it is logged).
	if _, err := store.EventsAppend(ctx, orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	// The handler sees a batch before it is acknowledged and Token() moves: wait for both.
	waitFor(t, "the live reader passes the hole (4 read and acknowledged, 3 lost)", services, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen[events[2].EventID] > 0 && sub.Delivered() >= handled
	})
	holeToken := sub.Token()
	droppedSeq, _, _ := typeSeqOf(t, orders, dropped.EventID)
	bounds, err := store.FeedTokenBoundaries(ctx, billing.Pool, holeToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hole token: %+v (lost origin_seq %d, repair already read: %v)", bounds, droppedSeq, got(dropped.EventID))
	for _, b := range bounds {
		if b.Origin == "orders" && b.Boundary > droppedSeq && !got(dropped.EventID) {
			t.Fatalf("the token names orders at %d, past the lost origin_seq %d", b.Boundary, droppedSeq)
		}
	}

	waitFor(t, "checkpoint repair re-sends the lost event and the live reader gets it", services, func() bool { return got(dropped.EventID) })
	for name, pool := range map[string]*harness.Service{"billing": billing, "shipping": shipping} {
		waitFor(t, name+" holds all four", services, func() bool { return countFrom(t, pool.Pool, "orders") == 4 })
		token, found := holeToken, false
		for i := 0; i < 100 && !found; i++ {
			b, err := feed.Read(ctx, pool.Pool, feed.Options{Types: placed}, token, 100)
			if err != nil {
				t.Fatalf("resume the hole token on %s: %v", name, err)
			}
			for _, e := range b.Events {
				found = found || e.EventID == dropped.EventID
			}
			if len(b.Events) == 0 {
				break
			}
			token = b.Token
		}
		if !found {
			t.Fatalf("the token taken while the hole was open, resumed on %s, never delivered the repaired event", name)
		}
	}
}
