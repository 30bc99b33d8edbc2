// compare.go: comparing an origin's answer with this store: type level first, then stream-level
// pages of the mismatched types, each page compared, ledgered and healed in one transaction.

package audit

import (
	"context"
	"slices"
	"time"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// compareTypes returns the event types whose type-level digests differ (any reason).
func (a *Auditor) compareTypes(ctx context.Context, origin string, from, to int64, digests []wire.ManifestDigest, consumed []string) ([]string, error) {
	started := time.Now()
	c := store.TypeComparison{Origin: origin, From: from, To: to, Consumed: consumed, Settle: a.Config.SettleWindow}
	for _, d := range digests {
		c.Digests = append(c.Digests, store.TypeDigest{Tenant: d.Tenant, EventType: d.Type, X0: d.X0, X1: d.X1, N: d.N})
	}
	mismatched, err := store.TypeDigestsCompare(ctx, a.Pool, c)
	if err == nil {
		a.Metrics.ManifestCompared(wire.LevelTypes, time.Since(started))
	}
	return mismatched, err
}

// drillDown walks stream-level pages of the mismatched types and returns the divergent buckets.
func (a *Auditor) drillDown(ctx context.Context, origin, control string, from, to int64, types []string, total int64) ([]Bucket, []store.LedgerDecision, error) {
	var out []Bucket
	var decided []store.LedgerDecision
	var done int64
	after := ""
	a.Metrics.DrillDown(origin)
	for page := 0; page < a.Limits.MaxPages; page++ {
		answers, err := a.ask(ctx, origin, control, wire.ManifestRequest{Level: wire.LevelStreams, From: from, To: to,
			Types: types, AfterStream: after, MaxDigests: a.Limits.MaxDigests})
		if err != nil {
			return nil, nil, err
		}
		var digests []wire.ManifestDigest
		for _, ans := range answers {
			digests = append(digests, ans.Digests...)
		}
		done += eventsOf(digests, types)
		if a.OnProgress != nil {
			a.OnProgress(Progress{Origin: origin, Done: done, Total: total, Pages: page + 1})
		}
		resume := answers[len(answers)-1].ResumeAfter
		buckets, decisions, err := a.compareStreams(ctx, origin, from, to, types, digests, after, resume)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, buckets...)
		decided = append(decided, decisions...)
		if resume == "" {
			return out, decided, nil
		}
		after = resume
	}
	a.Logger.Warn("audit: stream pages capped; the rest waits for the next audit", "origin", origin, "after", after)
	a.Metrics.PagesCapped(origin)
	return out, decided, nil
}

// compareStreams compares one stream-level page, feeds its divergent buckets to the ledger and
// heals the ledgered buckets of the page's range that now match, in one transaction.
func (a *Auditor) compareStreams(ctx context.Context, origin string, from, to int64, types []string, digests []wire.ManifestDigest, after, through string) ([]Bucket, []store.LedgerDecision, error) {
	started := time.Now()
	c := store.StreamComparison{Origin: origin, From: from, To: to, Types: types, Settle: a.Config.SettleWindow, After: after, Through: through}
	for _, d := range digests {
		c.Digests = append(c.Digests, store.StreamDigest{StreamID: d.Stream, Tenant: d.Tenant, EventType: d.Type, X0: d.X0, X1: d.X1, N: d.N})
	}
	tx, err := a.Pool.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback(ctx)
	diffs, err := store.StreamDigestsCompare(ctx, tx, c)
	if err != nil {
		return nil, nil, err
	}
	var decisions []store.LedgerDecision
	if len(diffs) > 0 {
		if decisions, err = store.LedgerObserve(ctx, tx, origin, diffs, a.ledgerPolicy(), a.now()); err != nil {
			return nil, nil, err
		}
	}
	// Ledgered buckets of this page's types and stream range that the comparison no longer
	// returned have healed (a skipped one is still in flight: not healed).
	if err := a.heal(ctx, tx, origin, types, diffs, after, through); err != nil {
		return nil, nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, nil, err
	}
	buckets := judged(diffs)
	for _, b := range buckets {
		a.Metrics.Divergence(origin, b.Type, b.Reason)
	}
	a.Metrics.ManifestCompared(wire.LevelStreams, time.Since(started))
	return buckets, decisions, nil
}

// judged returns the divergent buckets a comparison judged (the skipped ones are in flight).
func judged(diffs []store.BucketDiff) []Bucket {
	var out []Bucket
	for _, d := range diffs {
		if !d.Skipped {
			out = append(out, Bucket{Stream: d.StreamID, Tenant: d.Tenant, Type: d.EventType, Reason: d.Reason, LocalN: d.LocalN, OriginN: d.OriginN})
		}
	}
	return out
}

// eventsOf sums the event counts of digests of the given types.
func eventsOf(ds []wire.ManifestDigest, types []string) int64 {
	var n int64
	for _, d := range ds {
		if slices.Contains(types, d.Type) {
			n += d.N
		}
	}
	return n
}
