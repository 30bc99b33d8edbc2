package harness_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariant 9 (storm bounds) with invariant 1: half of 20000 deliveries across 500 streams are
// lost. Each checkpoint cycle sends at most the cap of requests, the store converges over
// successive cycles, and no range is requested twice.
func TestCheckpoint_MassLossConvergesWithinTheCap(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 2)
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes,
		Suppress: func(e store.EventCopy) bool { return e.EventID[2]%2 == 0 }}, nil)
	services := []*harness.Service{orders, billing}
	appendOrders(t, orders, 20000, 500)
	// 20000 live events and 10000 repaired ones through -race on two shared cores: on a loaded
	// machine the honest duration approaches the default failsafe (seen: 60 s passed while the
	// inbox was still storing the live half), so this wait gets a longer one.
	waitWithin(t, 3*time.Minute, "billing converged to 20000", services, func() bool { return countFrom(t, billing.Pool, "orders") == 20000 })
	requireSameRows(t, rowsOf(t, orders.Pool, "orders"), rowsOf(t, billing.Pool, "orders"))

	perRound := map[time.Time]int{}
	requested := map[string][]string{}
	for _, g := range gapReports(t, billing) {
		if g.Action != "requested" {
			continue
		}
		perRound[g.Round]++
		if perRound[g.Round] > 2 {
			t.Fatalf("checkpoint round %s sent %d requests, cap 2", g.Round, perRound[g.Round])
		}
		requested[g.EventType] = append(requested[g.EventType], g.TypeSeqs)
	}
	if len(perRound) < 3 {
		t.Fatalf("requests went out in %d round(s); with 5 lanes and a cap of 2 they need at least 3", len(perRound))
	}
	for eventType, ranges := range requested {
		for i := range ranges {
			for j := i + 1; j < len(ranges); j++ {
				var overlap bool
				if err := billing.Pool.QueryRow(context.Background(), "select $1::int8multirange && $2::int8multirange", ranges[i], ranges[j]).Scan(&overlap); err != nil {
					t.Fatal(err)
				}
				if overlap {
					t.Fatalf("type %s: ranges %s and %s were both requested", eventType, ranges[i], ranges[j])
				}
			}
		}
	}
}

// windowLog records every checkpoint window a consumer verified, once per message.
type windowLog struct {
	mu    sync.Mutex
	seen  map[string]int
	empty map[string]bool // windows with From == To
}

func (w *windowLog) wrap(s *harness.Service) {
	inner := s.Inbox.OnCheckpoint
	s.Inbox.OnCheckpoint = func(ctx context.Context, cps []wire.Checkpoint, ordered bool) error {
		err := inner(ctx, cps, ordered)
		if err == nil { // recorded once verified: a witness of the verification's effects
			w.mu.Lock()
			if w.seen == nil {
				w.seen, w.empty = map[string]int{}, map[string]bool{}
			}
			for _, cp := range cps {
				window := fmt.Sprintf("%s %s [%d,%d)", cp.Origin, cp.Type, cp.From, cp.To)
				w.seen[window]++
				w.empty[window] = cp.From == cp.To
			}
			w.mu.Unlock()
		}
		return err
	}
}

// verified counts the messages of the window "origin type [from,to)" verified (one per tenant).
func (w *windowLog) verified(window string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[window]
}

func (w *windowLog) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

// saw reports whether the consumer verified the window named "origin type [from,to)".
func (w *windowLog) saw(window string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[window] > 0
}

// Two control-plane replicas of one origin publish exactly one checkpoint per window; a consumer
// whose control plane restarts raises no false gap.
func TestCheckpoint_ReplicasAndRestartsRaiseNothingFalse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	orders := start(t, h, "orders", harness.Options{Settings: settings}, nil)
	startReplica(t, h, orders, harness.Options{Settings: settings, NoRelay: true})
	var log windowLog
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes}, log.wrap)
	services := []*harness.Service{orders, billing}

	for round := range 4 {
		appendStreams(t, orders, 50, 5, fmt.Sprintf("r%d", round))
		before := log.count()
		waitFor(t, "billing verified more checkpoints", services, func() bool { return log.count() >= before+len(eventTypes) })
	}
	// A window with events is handed out once (the watermark's compare-and-swap); an empty one
	// ([w,w): a quiet round's liveness message) legitimately repeats in every quiet round, and on
	// a loaded machine several rounds pass between two appends.
	log.mu.Lock()
	for window, n := range log.seen {
		if n != 1 && !log.empty[window] {
			t.Errorf("checkpoint %s verified %d times: two replicas published it", window, n)
		}
	}
	log.mu.Unlock()

	billing.Stop()
	restarted := startReplica(t, h, billing, harness.Options{Settings: settings, Consumes: eventTypes})
	appendStreams(t, orders, 50, 5, "after-restart")
	waitFor(t, "the restarted consumer caught up", []*harness.Service{orders, restarted}, func() bool {
		return countFrom(t, restarted.Pool, "orders") == 250 && laneFloor(t, restarted, "orders", "acme", eventTypes[0]) == 50
	})
	if g := gapReports(t, restarted); len(g) != 0 {
		t.Fatalf("false gaps after a restart: %+v", g)
	}
}

// Invariant 1 without false alarms: a consumer stopped while deliveries are in flight raises no
// gap after it restarts (three stops, at a quarter, half and three quarters of a burst). What its inbox had received and not stored (in the fetch buffer, in the
// client library's, on the wire before the unsubscribe) goes back to JetStream at the stop and
// reaches the restarted consumer at once. Dropped instead, it stayed pending, unseen, for the
// whole AckWait (a minute), and the restarted consumer's checkpoints confirmed it missing and
// requested a repair of events that were only held (seen under load in the test above).
func TestCheckpoint_AConsumerStoppedMidStreamRaisesNothingFalse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	orders := start(t, h, "orders", harness.Options{Settings: settings}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes}, nil)
	const events, perType = 3000, 600 // 5 types in turn
	appendStreams(t, orders, events, 50, "burst")
	restarted := billing
	for part := 1; part <= 3; part++ { // stopped three times, each time with part of the burst stored
		waitFor(t, fmt.Sprintf("billing stored %d/4 of the burst", part), []*harness.Service{orders, restarted}, func() bool {
			return countFrom(t, restarted.Pool, "orders") >= part*events/4
		})
		restarted.Stop()
		restarted = startReplica(t, h, billing, harness.Options{Settings: settings, Consumes: eventTypes})
	}
	waitWithin(t, 2*failsafe, "the restarted consumer holds the burst and verified every lane through it", []*harness.Service{orders, restarted}, func() bool {
		if countFrom(t, restarted.Pool, "orders") != events {
			return false
		}
		for _, eventType := range eventTypes {
			if laneFloor(t, restarted, "orders", "acme", eventType) != perType {
				return false
			}
		}
		return true
	})
	if g := gapReports(t, restarted); len(g) != 0 {
		t.Fatalf("false gaps after a stop mid-stream: %+v", g)
	}
}

// Invariant 9 (storm bounds) without starvation: with the per-round cap at one request and every
// lane (2 tenants x 2 types) losing a delivery every round, no lane keeps the slot: over the
// rounds that confirm gaps, each lane is served once before any is served twice. (Before: the lane verified first in every
// round, the alphabetically first type and tenant, took the slot every time while it kept losing.)
func TestCheckpoint_CappedRepairsServeEveryLaneInTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.ReportOnly, 1)
	settings.CheckpointInterval = time.Hour // rounds are published by the test
	types, tenants := eventTypes[:2], []string{"t1", "t2"}
	orders := start(t, h, "orders", harness.Options{Settings: settings}, nil)
	var log windowLog
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: types,
		Suppress: func(e store.EventCopy) bool { return e.StreamVersion == 2 }}, log.wrap)
	services := []*harness.Service{orders, billing}
	ctx := context.Background()
	waitForStartupCheckpoint(t, orders, services)
	for round := 1; round <= 5; round++ {
		// Every lane loses one delivery this round (version 2 of its stream).
		var events []store.NewEvent
		for _, tenant := range tenants {
			for _, eventType := range types {
				for v := int64(1); v <= 2; v++ {
					events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: tenant, StreamID: fmt.Sprintf("r%d-%s-%s", round, tenant, eventType),
						StreamVersion: v, EventType: eventType, Payload: []byte("{}")})
				}
			}
		}
		if _, err := store.EventsAppend(ctx, orders.Pool, events); err != nil {
			t.Fatal(err)
		}
		want := int64(round * len(events))
		waitFor(t, "billing settled the round's deliveries", services, func() bool {
			var relayed int64
			_ = orders.Pool.QueryRow(ctx, "select published_through from streamseal.relay_state").Scan(&relayed)
			return settled(billing) == want && relayed == want
		})
		if n, err := orders.Publisher.Publish(ctx); err != nil || n != len(types)*len(tenants) {
			t.Fatalf("round %d: published %d checkpoints, %v", round, n, err)
		}
		waitFor(t, "billing verified the round", services, func() bool {
			for _, eventType := range types {
				if log.verified(fmt.Sprintf("orders %s [%d,%d)", eventType, want-int64(len(events))+1, want+1)) < len(tenants) {
					return false
				}
			}
			return true
		})
	}
	served := map[string]int{}
	for _, g := range gapReports(t, billing) {
		if g.Action == "would_request" {
			served[g.Tenant+" "+g.EventType]++
		}
	}
	// Four or five rounds serve: the first round's gaps are confirmed at first sight when the inbox
	// proved that round's order (detection in one interval), else one round later. Either way
	// the cap holds (one a round) and no lane is served a second time before every lane was
	// served once.
	total, least, most := 0, 1<<30, 0
	for _, tenant := range tenants {
		for _, eventType := range types {
			n := served[tenant+" "+eventType]
			total, least, most = total+n, min(least, n), max(most, n)
		}
	}
	if total > 5 || least < 1 || most-least > 1 {
		t.Fatalf("lanes served over five capped rounds: %v; want at most one a round, each of the 4 lanes once before any twice", served)
	}
}

// Invariant 1 at many tenants: a round publishes one checkpoint per (tenant, type) on that
// pair's own subject, so a round over many tenants is many small messages (none can outgrow
// NATS's payload limit, which a type's single message once did at 20 000 tenants), and the
// consumer verifies every tenant's lane from its own subject.
func TestCheckpoint_ManyTenantsGetOneMessageEachOnTheirOwnSubject(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	settings.CheckpointInterval = time.Hour // the round is published by the test
	orders := start(t, h, "orders", harness.Options{Settings: settings}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1]}, nil)
	services := []*harness.Service{orders, billing}
	ctx := context.Background()
	waitForStartupCheckpoint(t, orders, services)
	const tenants = 2000
	var events []store.NewEvent
	for i := range tenants {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: fmt.Sprintf("tenant-with-a-long-name-%05d", i),
			StreamID: fmt.Sprintf("s%05d", i), StreamVersion: 1, EventType: eventTypes[0], Payload: []byte("{}")})
	}
	if _, err := store.EventsAppend(ctx, orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "relayed and stored", services, func() bool {
		var relayed int64
		_ = orders.Pool.QueryRow(ctx, "select published_through from streamseal.relay_state").Scan(&relayed)
		return relayed == tenants && countFrom(t, billing.Pool, "orders") == tenants
	})
	n, err := orders.Publisher.Publish(ctx)
	if err != nil {
		t.Fatalf("publishing a round over %d tenants: %v", tenants, err)
	}
	if n != tenants {
		t.Fatalf("the round went out as %d message(s); want one per tenant's subject, %d", n, tenants)
	}
	// 2000 verifications, one transaction each, through -race: on two busy cores the honest
	// duration approaches the default failsafe, so this wait gets a longer one.
	waitWithin(t, 3*time.Minute, "billing verified every tenant's lane", services, func() bool {
		var lanes, atFloor int
		_ = billing.Pool.QueryRow(ctx, "select count(*), count(*) filter (where floor = 1 and suspected = '{}') from streamseal.lanes where origin = 'orders'").Scan(&lanes, &atFloor)
		return lanes == tenants && atFloor == tenants
	})
}

// waitForStartupCheckpoint waits until River ran origin's start-up checkpoint job (it runs once
// at start, then every interval): a test that publishes its own rounds with an hour-long
// interval then knows every round is exactly one publication of its own.
func waitForStartupCheckpoint(t *testing.T, origin *harness.Service, services []*harness.Service) {
	t.Helper()
	waitFor(t, origin.Name+"'s start-up checkpoint job done", services, func() bool {
		var done int
		_ = origin.Pool.QueryRow(context.Background(),
			"select count(*) from streamseal_river.river_job where kind = 'streamseal_checkpoint' and state = 'completed'").Scan(&done)
		return done == 1
	})
}
