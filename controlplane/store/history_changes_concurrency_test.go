package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/store"
)

// Invariants 1 and 10 under concurrency (issue 15 item 2): a history change's id is handed out
// when its statement runs, not when it commits. A reader must never return a cursor past an id
// still uncommitted, or the consumer would skip that change for good. Mutation A records a change
// and stays open; mutation B must not take a higher id and commit meanwhile: it waits for A
// (witnessed in pg_stat_activity), a reader meanwhile sees nothing and keeps its cursor, and once
// A commits both are read, A's id below B's.
func TestHistoryChangesAfter_NeverPassesAnUncommittedChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := lanePool(t, "history-race")
	var events []store.NewEvent
	// Two streams: the mutations share no digest row, so only the recorders' ordering can make
	// the second wait.
	for _, stream := range []string{"s1", "s2"} {
		events = append(events, store.NewEvent{Tenant: "t", StreamID: stream, StreamVersion: 1, EventType: "e", Payload: []byte("{}")})
	}
	ids, err := store.EventsAppend(ctx, pool, events)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.GrantsAdd(ctx, pool, "reader", []string{"e"}, store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsStamp(ctx, pool, 100); err != nil {
		t.Fatal(err)
	}

	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	if _, err := first.Exec(ctx, "delete from streamseal.events where event_id = $1", ids[0]); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := pool.Exec(ctx, "delete from streamseal.events where event_id = $1", ids[1])
		second <- err
	}()
	// Witness: the second mutation waits on a lock the open first one holds.
	deadline := time.Now().Add(failsafe)
	for {
		var waiting int
		if err := pool.QueryRow(ctx, "select count(*) from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 1 {
			break
		}
		select {
		case err := <-second:
			t.Fatalf("the second mutation committed (%v) while the first's lower change id was uncommitted", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("failsafe: the second mutation never waited for the first")
		}
		time.Sleep(10 * time.Millisecond)
	}
	during, err := store.HistoryChangesAfter(ctx, pool, 0, "reader", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(during.Changes) != 0 || during.Through != 0 {
		t.Fatalf("page %+v read while a change was uncommitted; want nothing and the cursor kept at 0", during)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	after, err := store.HistoryChangesAfter(ctx, pool, 0, "reader", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Changes) != 2 || after.Changes[0].EventID != ids[0].String() || after.Changes[1].EventID != ids[1].String() ||
		after.Changes[0].ChangeID >= after.Changes[1].ChangeID || after.Through != after.Changes[1].ChangeID || after.More {
		t.Fatalf("page %+v; want both removals, the first mutation's id below the second's, through the last", after)
	}
}
