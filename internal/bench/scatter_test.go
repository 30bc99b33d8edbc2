package bench_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/streamseal/streamseal/internal/bench"
	"github.com/streamseal/streamseal/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// Invariant 14 (issue 12's "500 losses over 52 100 streams", at test size): 200 copies lost at
// the consumer, scattered over 5 000 streams below every lane floor, with caps so low that one
// audit compares a tenth of the store. Successive audits resume where the last stopped, so the
// damage converges within one pass over the mismatched types under the caps (plus the round
// that sees the last repairs land), and every audit before that reports the mismatch as
// unresolved (AuditScatter refuses a round reporting all-clear while digests differ).
func TestAuditScatter_ConvergesWithinBoundedRoundsReportingUnresolvedUntilThen(t *testing.T) {
	t.Parallel()
	opts := bench.ScatterOptions{Streams: 5_000, EventsPerStream: 4, Types: 20, Losses: []int{200}, MaxRounds: 40,
		MaxDrillDownTypes: 5, MaxPages: 2, MaxDigests: 250, MaxEventsPerRequest: 10}
	var out bytes.Buffer
	results, err := bench.AuditScatter(context.Background(), func(context.Context, string) (string, error) { return dbtest.New(t), nil }, opts, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	// One pass: the types take turns 5 at a time, each turn walks 5 types x 250 streams in pages
	// of 250 buckets, 2 pages an audit.
	perTurn := (opts.MaxDrillDownTypes*opts.Streams/opts.Types + opts.MaxPages*opts.MaxDigests - 1) / (opts.MaxPages * opts.MaxDigests)
	bound := opts.Types/opts.MaxDrillDownTypes*perTurn + 1
	r := results[0]
	if !r.Converged || r.Rounds > bound {
		t.Fatalf("%d losses: converged %v after %d audit rounds, want within %d", r.Losses, r.Converged, r.Rounds, bound)
	}
	if r.Rounds < 3 {
		t.Fatalf("converged in %d rounds: the caps were meant to need several", r.Rounds)
	}
	for i, round := range r.PerRound[:len(r.PerRound)-1] {
		if round.Differing == 0 || round.Unresolved == 0 {
			t.Fatalf("round %d of %d: %d types differing after it, %d reported unresolved; want both > 0 before convergence",
				i+1, r.Rounds, round.Differing, round.Unresolved)
		}
	}
	var followUps int
	for _, round := range r.PerRound {
		followUps += round.FollowUps
	}
	if followUps == 0 {
		t.Fatalf("no truncated answer was followed up: the per-request cap of %d events was meant to bind", opts.MaxEventsPerRequest)
	}
}
