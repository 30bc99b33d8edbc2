package harness_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// sighting is what a consumer had done when it finished verifying one checkpoint message.
type sighting struct {
	from, to  int64
	ordered   bool
	beat      bool // the origin's beat of the round (quiet pairs are not checkpointed), not a checkpoint
	requested int  // repair requests sent (sent_requests rows) once the verification returned
}

// sightings records, for every checkpoint of one type a consumer verifies, whether the inbox
// proved its order and how many repair requests the consumer had sent when it returned.
type sightings struct {
	mu   sync.Mutex
	seen []sighting
}

func (w *sightings) wrap(eventType string) func(*harness.Service) {
	return func(s *harness.Service) {
		inner := s.Inbox.OnCheckpoint
		s.Inbox.OnCheckpoint = func(ctx context.Context, cps []wire.Checkpoint, ordered bool) error {
			if err := inner(ctx, cps, ordered); err != nil {
				return err
			}
			var n int
			if err := s.Pool.QueryRow(ctx, "select count(*) from streamseal.sent_requests").Scan(&n); err != nil {
				return err
			}
			w.mu.Lock()
			for _, cp := range cps {
				if cp.Type == eventType {
					w.seen = append(w.seen, sighting{from: cp.From, to: cp.To, ordered: ordered, requested: n})
				}
			}
			w.mu.Unlock()
			return nil
		}
		// Beats re-evaluate the lanes holding holes each round, as quiet checkpoints once did.
		innerBeat := s.Inbox.OnBeat
		s.Inbox.OnBeat = func(ctx context.Context, b wire.Beat) error {
			if err := innerBeat(ctx, b); err != nil {
				return err
			}
			var n int
			if err := s.Pool.QueryRow(ctx, "select count(*) from streamseal.sent_requests").Scan(&n); err != nil {
				return err
			}
			w.mu.Lock()
			w.seen = append(w.seen, sighting{from: b.From, to: b.To, beat: true, requested: n})
			w.mu.Unlock()
			return nil
		}
	}
}

// covering returns the verified checkpoints (not beats) whose window covers originSeq, in arrival order.
func (w *sightings) covering(originSeq int64) []sighting {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []sighting
	for _, s := range w.seen {
		if !s.beat && s.from <= originSeq && originSeq < s.to {
			out = append(out, s)
		}
	}
	return out
}

// after returns the verified checkpoints and beats whose window ends beyond originSeq (they cover
// it or come after it).
func (w *sightings) after(originSeq int64) []sighting {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []sighting
	for _, s := range w.seen {
		if s.to > originSeq {
			out = append(out, s)
		}
	}
	return out
}

// Invariant 1, detection in one interval: a delivery lost at the receive seam, in a lane the
// consumer already follows, is requested by the first checkpoint that covers it (the inbox
// proved every message before that checkpoint committed), not one checkpoint later; the repair
// then heals it.
func TestCheckpoint_RequestsALossAfterOneCheckpoint(t *testing.T) {
	t.Parallel()
	requestsALossAfterOneCheckpoint(t, 0)
}

// Invariant 1, detection in one interval after a quiet spell (issue 21 item 3): the pair is not
// checkpointed while quiet (only the origin's beats go out); when it speaks again and loses a
// delivery, the first checkpoint covering the loss still requests it.
func TestCheckpoint_RequestsALossAfterOneCheckpointAfterAQuietSpell(t *testing.T) {
	t.Parallel()
	requestsALossAfterOneCheckpoint(t, 3)
}

// requestsALossAfterOneCheckpoint: a lane is born, then quietBeats beats pass with no event
// (none of them checkpoints the pair), then a delivery is lost; the first checkpoint covering it
// requests it and the repair heals it.
func requestsALossAfterOneCheckpoint(t *testing.T, quietBeats int) {
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	lose := &suppressOnce{lose: map[uuid.UUID]bool{}}
	var seen sightings
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1], Suppress: lose.fn},
		seen.wrap(eventTypes[0]))
	services := []*harness.Service{orders, billing}

	// The lane is born first: a lane's first window waits a cycle (the consumer may have joined
	// mid-stream), so the loss must come after it.
	warmUp := store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "one", StreamVersion: 1, EventType: eventTypes[0], Payload: []byte("{}")}
	if _, err := store.EventsAppend(context.Background(), orders.Pool, []store.NewEvent{warmUp}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "billing's lane born", services, func() bool { return laneFloor(t, billing, "orders", "acme", eventTypes[0]) == 1 })
	if quietBeats > 0 {
		var bornAt int64
		_ = orders.Pool.QueryRow(context.Background(), "select origin_seq from streamseal.numbered_events where event_id = $1", warmUp.EventID).Scan(&bornAt)
		waitFor(t, fmt.Sprintf("%d beats of a quiet spell verified", quietBeats), services, func() bool {
			quiet := 0
			for _, s := range seen.after(bornAt) {
				if s.beat && s.from > bornAt {
					quiet++
				} else if !s.beat && s.from > bornAt {
					t.Fatalf("the quiet pair was checkpointed: %+v", s)
				}
			}
			return quiet >= quietBeats
		})
	}

	var events []store.NewEvent
	for v := int64(2); v <= 4; v++ {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "one", StreamVersion: v,
			EventType: eventTypes[0], Payload: []byte("{}")})
	}
	dropped := events[1]
	lose.mu.Lock()
	lose.lose[dropped.EventID] = true
	lose.mu.Unlock()
	if _, err := store.EventsAppend(context.Background(), orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the dropped event is stamped", services, func() bool {
		var n int
		_ = orders.Pool.QueryRow(context.Background(), "select count(*) from streamseal.numbered_events where event_id = $1", dropped.EventID).Scan(&n)
		return n == 1
	})
	originSeq, typeSeq, _ := typeSeqOf(t, orders, dropped.EventID)
	waitFor(t, "a checkpoint covering the loss verified", services, func() bool { return len(seen.covering(originSeq)) > 0 })

	first := seen.covering(originSeq)[0]
	if !first.ordered {
		t.Fatalf("the inbox could not prove the order of the first checkpoint covering the loss: %+v", first)
	}
	if first.requested != 1 {
		t.Fatalf("after the first checkpoint covering the loss billing had sent %d repair requests, want 1 (detection in one interval)", first.requested)
	}
	want := fmt.Sprintf("{[%d,%d)}", typeSeq, typeSeq+1)
	if g := gapReports(t, billing); len(g) != 1 || g[0].TypeSeqs != want || g[0].Action != "requested" ||
		g[0].WindowFrom != first.from || g[0].WindowTo != first.to {
		t.Fatalf("gap reports = %+v, want one request for %s in window [%d,%d)", g, want, first.from, first.to)
	}
	waitFor(t, "billing converged to 4", services, func() bool { return countFrom(t, billing.Pool, "orders") == 4 })
	waitFor(t, "the floor passes the repaired hole", services, func() bool {
		return laneFloor(t, billing, "orders", "acme", eventTypes[0]) == 4
	})
}

// Invariants 1 and 9: a run with no loss asks nothing. Traffic of every type in many small
// commits interleaves with checkpoints the inbox proves ordered; once several checkpoints past the
// last event were verified, no gap was reported and not one repair request was sent (counted on
// the consumer and at the origin).
func TestCheckpoint_HealthyRunSendsNoRepairRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	var seen sightings
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes}, seen.wrap(eventTypes[0]))
	services := []*harness.Service{orders, billing}

	// Enough traffic that the inbox's batches hold events and checkpoints together.
	events := streamEvents(3000, 50, "order")
	for i := range events {
		events[i].Tenant = []string{"acme", "globex"}[i%2]
	}
	for i := 0; i < len(events); i += 20 {
		if _, err := store.EventsAppend(context.Background(), orders.Pool, events[i:i+20]); err != nil {
			t.Fatal(err)
		}
	}
	last := events[len(events)-1].EventID
	waitFor(t, "the last event is stamped", services, func() bool {
		var n int
		_ = orders.Pool.QueryRow(context.Background(), "select count(*) from streamseal.numbered_events where event_id = $1", last).Scan(&n)
		return n == 1
	})
	lastSeq, _, _ := typeSeqOf(t, orders, last)
	waitFor(t, "billing holds everything and verified three checkpoints or beats past the last event", services, func() bool {
		return countFrom(t, billing.Pool, "orders") == len(events) && len(seen.after(lastSeq)) >= 3
	})
	ordered := 0
	for _, s := range seen.after(0) {
		if s.ordered {
			ordered++
		}
	}
	if ordered == 0 {
		t.Fatal("no checkpoint was verified as ordered: the run did not exercise detection at first sight")
	}
	_, gaps, requests := billing.Verifier.Counts()
	received, _, _ := orders.Redelivery.Counts()
	var sent int
	if err := billing.Pool.QueryRow(context.Background(), "select count(*) from streamseal.sent_requests").Scan(&sent); err != nil {
		t.Fatal(err)
	}
	if reports := gapReports(t, billing); gaps != 0 || requests != 0 || sent != 0 || received != 0 || len(reports) != 0 {
		first := ""
		if len(reports) > 0 {
			first = fmt.Sprintf(" (the first: %s %s %s in [%d,%d))", reports[0].Tenant, reports[0].EventType, reports[0].TypeSeqs,
				reports[0].WindowFrom, reports[0].WindowTo)
		}
		t.Fatalf("a run with no loss: %d gaps, %d requests counted, %d sent, %d received by the origin, %d gap reports%s; want none",
			gaps, requests, sent, received, len(reports), first)
	}
}
