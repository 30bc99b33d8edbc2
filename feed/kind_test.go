package feed_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/feed"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Go handlers (issue 19; invariant 2: no trigger fires where nothing was missing): a Projection
// subscriber receives state-only (backfilled) copies, a Reactor never, and its token moves past
// them; a plain (live or repaired) copy reaches both, once.
func TestFeed_AReactorNeverReceivesStateOnlyCopies(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "billing")
	ctx := context.Background()
	type seen struct {
		mu  sync.Mutex
		ids map[int64]int
	}
	record := func(s *seen) feed.Handler {
		return func(_ context.Context, _ pgx.Tx, b feed.Batch) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, e := range b.Events {
				s.ids[e.OriginSeq]++
			}
			return nil
		}
	}
	has := func(s *seen, seq int64) int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.ids[seq]
	}
	projection, reactor := &seen{ids: map[int64]int{}}, &seen{ids: map[int64]int{}}
	ps := feed.NewSubscriber(pool, feed.Options{Kind: feed.Projection, Types: []string{placed}})
	rs := feed.NewSubscriber(pool, feed.Options{Kind: feed.Reactor, Types: []string{placed}})
	testrun.Go(t, "projection", func(ctx context.Context) error { return ps.Run(ctx, record(projection)) })
	testrun.Go(t, "reactor", func(ctx context.Context) error { return rs.Run(ctx, record(reactor)) })

	backfilled := copyOf(1)
	backfilled.Flags = store.StateOnly
	if _, err := store.EventsIngest(ctx, pool, []store.EventCopy{backfilled}); err != nil {
		t.Fatal(err)
	}
	ingest(t, pool, 2)
	testrun.WaitFor(t, "both subscribers reach the live copy", func() bool { return has(projection, 2) == 1 && has(reactor, 2) == 1 })
	// Token and Delivered move once the batch is acknowledged, after the handler saw it.
	testrun.WaitFor(t, "both batches acknowledged", func() bool { return ps.Delivered() >= 2 && rs.Delivered() >= 1 })
	if has(projection, 1) != 1 {
		t.Error("the projection did not receive the state-only copy once")
	}
	if has(reactor, 1) != 0 {
		t.Error("the reactor received the state-only copy: backfill re-fired a trigger")
	}
	if ps.Delivered() != 2 || rs.Delivered() != 1 {
		t.Errorf("delivered: projection %d, reactor %d; want 2 and 1", ps.Delivered(), rs.Delivered())
	}
	b, err := feed.Read(ctx, pool, feed.Options{Kind: feed.Reactor, Types: []string{placed}}, rs.Token(), 10)
	if err != nil || len(b.Events) != 0 {
		t.Fatalf("reading on from the reactor's token: %d events, %v; want none (its token passed the state-only copy)", len(b.Events), err)
	}
}
