package checkpoint_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestRetriedCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// Invariant 15 (a token never allows a skip; issue 17's last certification gap), through the
	// real inbox and verifier: round R1's checkpoint of a new pair, [1, 10] (3 lost here), fails
	// verification at the verify seam and waits in checkpoint_inbox to be retried; R2's, [11, 20],
	// is verified first and births the lane at 10. A feed token taken then (both rounds' beats
	// recorded) does not pass R1's window. Once R1's checkpoint is verified, the birth lowers,
	// the origin's lane-set mark moves on, and the token certifies up to the hole at 3, not past.
	t.Run("ATokenTakenWhileAnEarlierCheckpointIsRetriedDoesNotPassItsWindow", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		var failedR1 atomic.Int64
		r := newLaneMarkRig(t, func(ctx context.Context, cps []wire.Checkpoint, ordered bool,
			verify func(context.Context, []wire.Checkpoint, bool) error) error {
			for _, cp := range cps {
				if cp.From != 1 {
					continue
				}
				select {
				case <-release:
				default:
					failedR1.Add(1)
					return errors.New("the verify seam fails R1's checkpoint until the test releases it")
				}
			}
			return verify(ctx, cps, ordered)
		})

		r.round(1, 10, r.at, false)
		r.round(11, 20, r.at.Add(time.Second), false)
		testrun.Go(t, "inbox", r.in.Run)
		testrun.WaitFor(t, "R2's checkpoint verified first (the lane born at 10), both beats recorded, R1's checkpoint failed", func() bool {
			b := r.birth()
			return b != nil && *b == 10 && r.beatsDone.Load() == 2 && failedR1.Load() >= 1 && r.in.Counts().Stored == 19
		})
		token, between := r.boundary("")
		if between > 1 {
			t.Fatalf("a token taken while R1's checkpoint waits to be retried certifies orders through %d (mark %d): past R1's "+
				"window [1, 11), whose type_seq 3 was never checked; want at most 1", between, r.mark())
		}

		close(release)
		// The retry is due after its backoff; the test need not wait it out.
		if _, err := r.pool.Exec(ctx, "update streamseal.checkpoint_inbox set not_before = now()"); err != nil {
			t.Fatal(err)
		}
		testrun.WaitFor(t, "R1's checkpoint verified late and the lane-set mark moved over both rounds", func() bool {
			b := r.birth()
			return b != nil && *b == 0 && r.mark() == 21
		})
		if _, after := r.boundary(token); after != 3 {
			t.Fatalf("after R1's checkpoint was verified the token certifies orders through %d; want 3, just below the hole at 3", after)
		}
	})
}
