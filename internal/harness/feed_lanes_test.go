package harness_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/feed"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariant 15 (readers never skip) with invariants 1 and 6, over the real wire: orders starts
// a new (tenant, type) pair, order.paid, and billing loses every delivery of it, so billing has
// no lane of it. The round that checkpoints it reaches billing, but billing's verifier gets to
// order.paid's checkpoint last (held at the verify seam, as a busy inbox would); its
// order.placed checkpoint, later in origin_seq, is verified first. A token taken on billing then
// must not certify orders past the lost events: resumed on shipping (another consumer of both
// types, which holds them) it delivers them. Once billing verifies the held checkpoint and the
// repair lands, the boundary rises again: the lane-set mark does not wedge, and a quiet lane
// certifies up to it (item 2).
func TestFeed_ATokenNeverPassesANewPairWhoseFirstEventsWereAllLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	placed, paid := eventTypes[0], eventTypes[1]
	scope := feed.Options{Types: []string{placed, paid}}
	orders := start(t, h, "orders", harness.Options{Grants: map[string][]string{"billing": eventTypes, "shipping": eventTypes}}, nil)
	var (
		holdPaid   atomic.Bool  // billing's verifier refuses order.paid checkpoints while set
		heldPaid   atomic.Int64 // order.paid checkpoints it refused
		beatsUpTo  atomic.Int64 // the window end of the latest beat billing handled to the end
		suppressed atomic.Int64
	)
	holdPaid.Store(true)
	billing := start(t, h, "billing", harness.Options{Consumes: []string{placed, paid},
		Suppress: func(e store.EventCopy) bool {
			if e.EventType == paid {
				suppressed.Add(1)
				return true
			}
			return false
		}}, func(s *harness.Service) {
		verify := s.Inbox.OnCheckpoint
		s.Inbox.OnCheckpoint = func(ctx context.Context, cps []wire.Checkpoint, ordered bool) error {
			for _, cp := range cps {
				if cp.Type == paid && holdPaid.Load() {
					heldPaid.Add(1)
					return errors.New("test: order.paid's checkpoint waits")
				}
			}
			return verify(ctx, cps, ordered)
		}
		beat := s.Inbox.OnBeat
		s.Inbox.OnBeat = func(ctx context.Context, b wire.Beat) error {
			if err := beat(ctx, b); err != nil {
				return err
			}
			if b.To > beatsUpTo.Load() {
				beatsUpTo.Store(b.To)
			}
			return nil
		}
	})
	shipping := start(t, h, "shipping", harness.Options{Consumes: []string{placed, paid}}, nil)
	services := []*harness.Service{orders, billing, shipping}
	waitForStartupCheckpoint(t, orders, services)

	event := func(eventType, stream string, v int64) store.NewEvent {
		return store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: stream, StreamVersion: v, EventType: eventType, Payload: []byte("{}")}
	}
	relayedTo := func(n int64) func() bool {
		return func() bool {
			var relayed int64
			_ = orders.Pool.QueryRow(ctx, "select published_through from streamseal.relay_state").Scan(&relayed)
			return relayed == n
		}
	}
	round := func() int64 {
		t.Helper()
		if _, err := orders.Publisher.Publish(ctx); err != nil {
			t.Fatal(err)
		}
		var to int64
		if err := orders.Pool.QueryRow(ctx, "select published_through from streamseal.checkpoint_state").Scan(&to); err != nil {
			t.Fatal(err)
		}
		return to
	}

	// order.placed has a lane on billing: origin_seq 1.
	if _, err := store.EventsAppend(ctx, orders.Pool, []store.NewEvent{event(placed, "a", 1)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "orders relayed 1", services, relayedTo(1))
	round()
	waitFor(t, "billing's order.placed lane born", services, func() bool { return laneFloor(t, billing, "orders", "acme", placed) == 1 })

	// A new pair, order.paid, whose first two events billing loses (origin_seq 2 and 3), then
	// order.placed again (4), which billing stores.
	lost := []store.NewEvent{event(paid, "b", 1), event(paid, "b", 2)}
	if _, err := store.EventsAppend(ctx, orders.Pool, lost); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsAppend(ctx, orders.Pool, []store.NewEvent{event(placed, "a", 2)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "orders relayed 4", services, relayedTo(4))
	waitFor(t, "billing stored 2 and lost 2; shipping stored 4", services, func() bool {
		return countFrom(t, billing.Pool, "orders") == 2 && suppressed.Load() == 2 && countFrom(t, shipping.Pool, "orders") == 4
	})
	through := round()
	waitFor(t, "billing verified order.placed's checkpoint and handled the round's beat, order.paid's checkpoint waiting", services, func() bool {
		return laneFloor(t, billing, "orders", "acme", placed) == 2 && beatsUpTo.Load() >= through && heldPaid.Load() > 0
	})

	// A token taken now, on billing, having read everything billing holds.
	read := func(s *harness.Service, token string) (string, map[uuid.UUID]bool) {
		t.Helper()
		got := map[uuid.UUID]bool{}
		for i := 0; ; i++ {
			if i > 100 {
				t.Fatalf("%s: the feed did not catch up", s.Name)
			}
			b, err := feed.Read(ctx, s.Pool, scope, token, 100)
			if err != nil {
				t.Fatalf("read %s's feed: %v", s.Name, err)
			}
			for _, e := range b.Events {
				got[e.EventID] = true
			}
			token = b.Token
			if len(b.Events) == 0 && b.Held == 0 {
				return token, got
			}
		}
	}
	boundary := func(s *harness.Service, token string) int64 {
		t.Helper()
		bounds, err := store.FeedTokenBoundaries(ctx, s.Pool, token)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bounds {
			if b.Origin == "orders" {
				return b.Boundary
			}
		}
		t.Fatalf("the token names no boundary for orders: %+v", bounds)
		return 0
	}
	token, _ := read(billing, "")
	lostSeq, _, _ := typeSeqOf(t, orders, lost[0].EventID)
	if b := boundary(billing, token); b > lostSeq {
		t.Errorf("billing's token certifies orders through %d, past order.paid's lost first event at origin_seq %d", b, lostSeq)
	}
	_, resumed := read(shipping, token)
	for _, e := range lost {
		if !resumed[e.EventID] {
			t.Errorf("billing's token resumed on shipping skipped the lost order.paid event %s", e.EventID)
		}
	}

	// Billing verifies order.paid's checkpoint; the next round's beat confirms the holes, the
	// repair lands, the one after re-evaluates the lane, and the boundary rises to the rounds'
	// end: the mark moved on, and both lanes (quiet, complete) certify up to it.
	holdPaid.Store(false)
	waitFor(t, "billing's order.paid lane born", services, func() bool { return laneFloor(t, billing, "orders", "acme", paid) >= 0 })
	round()
	waitFor(t, "the repair of order.paid landed on billing", services, func() bool { return countFrom(t, billing.Pool, "orders") == 4 })
	round()
	waitFor(t, "the next beat moved order.paid's floor over the repaired events", services, func() bool {
		return laneFloor(t, billing, "orders", "acme", paid) == 2
	})
	if token, _ = read(billing, token); boundary(billing, token) < through {
		t.Errorf("after the repair billing's token certifies orders through %d; want %d (the verified rounds' end)", boundary(billing, token), through)
	}
}
