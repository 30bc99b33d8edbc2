package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/store"
)

// Invariant 2 under concurrency: two ingests of the same new copy race (a live delivery and a
// repair bundle that crossed it). The second waits on the first's uncommitted row; once the first
// commits, the second skips the copy — no error, no second row, no second fold — and still adds
// the rest of its batch. ingest tries a plain INSERT first and falls back to the conflict-skipping
// one on a unique violation: this is the path where the violation only appears after a wait.
func TestEventsIngest_ConcurrentSameCopyIsSkippedNotRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := lanePool(t, "ingest-race")
	shared, own := peerCopy(1), peerCopy(2)

	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	if added, err := store.EventsIngest(ctx, first, []store.EventCopy{shared}); err != nil || len(added) != 1 {
		t.Fatalf("first ingest = %v, %v; want the copy added", added, err)
	}

	type outcome struct {
		added []string
		err   error
	}
	second := make(chan outcome, 1)
	go func() {
		ids, err := store.EventsIngest(ctx, pool, []store.EventCopy{shared, own})
		var added []string
		for _, id := range ids {
			added = append(added, id.String())
		}
		second <- outcome{added, err}
	}()
	// Witness: the second ingest waits on the first's uncommitted row.
	deadline := time.Now().Add(failsafe)
	for {
		var waiting int
		if err := pool.QueryRow(ctx, "select count(*) from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second ingest never waited on the first")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	var o outcome
	select {
	case o = <-second:
	case <-time.After(failsafe):
		t.Fatal("the second ingest never returned after the first committed")
	}
	if o.err != nil {
		t.Fatalf("second ingest refused a copy another transaction had just stored: %v", o.err)
	}
	if !slices.Equal(o.added, []string{own.EventID.String()}) {
		t.Fatalf("second ingest added %v, want only %s (the shared copy skipped)", o.added, own.EventID)
	}
	var rows, n int64
	if err := pool.QueryRow(ctx, `select (select count(*) from streamseal.events where origin = 'peer'),
		(select sum(n) from streamseal.stream_digests where origin = 'peer')`).Scan(&rows, &n); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || n != 2 {
		t.Fatalf("after the race the peer lane holds %d rows folded as %d, want 2 and 2", rows, n)
	}
}
