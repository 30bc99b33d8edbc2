package stamper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/stamper"
	"github.com/streamseal/streamseal/controlplane/store"
)

func TestLoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		// The loop's tunables as its doc comment states them: stamp() numbers at most 10000 events
		// a call (the SQL function's own default), a failsafe poll and a retry pause of a second,
		// and 5 ms to gather a burst of small commits into one batch.
		for _, c := range []struct {
			name      string
			got, want any
		}{
			{"BatchSizeDefault", stamper.BatchSizeDefault, 10000},
			{"PollIntervalDefault", stamper.PollIntervalDefault, time.Second},
			{"RetryDelayDefault", stamper.RetryDelayDefault, time.Second},
			{"CoalesceDefault", stamper.CoalesceDefault, 5 * time.Millisecond},
		} {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}

		// A zero-valued Loop numbers in batches of BatchSizeDefault: a backlog of 10001 committed
		// events is drained by a full batch and then the one left, dense 1..10001 (invariant 7).
		b := setup(t, "defaults")
		events := make([]store.NewEvent, stamper.BatchSizeDefault+1)
		for i := range events {
			events[i] = event(fmt.Sprintf("s%d", i%13), int64(i)+1)
		}
		appendEvents(t, b.pool, events...)
		var calls []store.StampResult
		loop := &stamper.Loop{Pool: b.pool, OnStamp: func(r store.StampResult) { calls = append(calls, r) }}
		if err := loop.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if len(calls) != 2 || calls[0].Stamped != stamper.BatchSizeDefault || calls[1].Stamped != 1 || calls[1].LastOriginSeq != 10001 {
			t.Fatalf("stamp calls %+v; want a full batch of %d, then 1, ending at 10001", calls, stamper.BatchSizeDefault)
		}
		requireDenseLane(t, b.pool, stamper.BatchSizeDefault+1)
	})
}
