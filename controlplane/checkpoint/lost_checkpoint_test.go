package checkpoint_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamseal/streamseal/internal/testrun"
)

// Invariant 15 (a token never allows a skip; issue 17, migration 042), through the real inbox and
// verifier: round R1's checkpoint of a new pair, [1, 10] (3 lost here), never reaches the store
// (its recording failed and the broker has not redelivered it yet; a replica fetched it and has
// not committed), so checkpoint_inbox holds no trace of it; R2's, [11, 20], is verified and births
// the lane at 10. A token taken then does not pass R1's window while the broker could still
// deliver R1 (_lane_rounds_hold); once that has passed (the test ages the hold), the next beat
// moves the origin's lane-set mark on: the mark never stalls on a checkpoint that never comes.
func TestLostCheckpointHoldsTheMarkForTheRedeliveryHorizon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newLaneMarkRig(t, nil)

	r.round(1, 10, r.at, true)
	r.round(11, 20, r.at.Add(time.Second), false)
	testrun.Go(t, "inbox", r.in.Run)
	testrun.WaitFor(t, "R2's checkpoint verified (the lane born at 10) and both beats recorded", func() bool {
		b := r.birth()
		return b != nil && *b == 10 && r.beatsDone.Load() == 2 && r.in.Counts().Stored == 19
	})
	if _, got := r.boundary(""); got > 1 {
		t.Fatalf("a token taken while R1's checkpoint could still be redelivered certifies orders through %d (mark %d): "+
			"past R1's window [1, 11), whose type_seq 3 was never checked; want at most 1", got, r.mark())
	}

	// The broker's redelivery horizon passes (aged here: the test does not wait it out).
	if _, err := r.pool.Exec(ctx, `update streamseal.lane_round_pairs
		set held_since = now() - streamseal._lane_rounds_hold() - interval '1 second' where origin = 'orders'`); err != nil {
		t.Fatal(err)
	}
	r.beat(21, 21, r.at.Add(2*time.Second), nil)
	testrun.WaitFor(t, "the next beat after the hold moves the lane-set mark over both rounds", func() bool {
		return r.mark() == 21
	})
}
