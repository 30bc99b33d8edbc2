package stamper_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/streamseal/streamseal/controlplane/stamper"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Invariant 8 (bounded cost): a stamp claims from the queue's key read from the left, over the
// index entry of every row the stamps before it deleted since the queue was last vacuumed, so
// left alone a stamp grows slower with history (1M stamped: lag p99 110-177 ms instead of
// 17-25). The loop vacuums the queue itself once the dead rows reach UpkeepDeadRows, instead of
// waiting up to a naptime for autovacuum, which is off on the queue here: only the loop can.
func TestLoop_VacuumsTheRowsItsStampsLeaveInTheQueue_Invariant8(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "upkeep")
	if _, err := b.pool.Exec(ctx, `alter table streamseal.unstamped set (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	testrun.Go(t, "stamper loop", (&stamper.Loop{Pool: b.pool}).Run)

	const events = stamper.UpkeepDeadRowsDefault + 2000
	for batch := range events / 1000 {
		page := make([]store.NewEvent, 1000)
		for i := range page {
			page[i] = event(fmt.Sprintf("s%d", i%50), int64(batch*20+i/50+1))
		}
		appendEvents(t, b.pool, page...)
	}
	count := func(sql string) int64 {
		var n int64
		if err := b.pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testrun.WaitFor(t, "every event stamped", func() bool {
		return count(`select count(*) from streamseal.own_numbers`) == events
	})
	testrun.WaitFor(t, "the loop vacuumed its queue", func() bool {
		return count(`select vacuum_count from pg_stat_user_tables where relid = 'streamseal.unstamped'::regclass`) > 0
	})
	dead, err := store.QueueDeadRows(ctx, b.pool)
	if err != nil {
		t.Fatal(err)
	}
	if dead >= stamper.UpkeepDeadRowsDefault {
		t.Fatalf("the queue holds %d dead rows after the loop's vacuum, want fewer than %d", dead, stamper.UpkeepDeadRowsDefault)
	}
}
