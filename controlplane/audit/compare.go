// compare.go: comparing an origin's answer with this store: type level first, then stream-level
// pages of the mismatched types, each page compared, ledgered and healed in one transaction.

package audit

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// compareFolds returns the event types of scope whose folds over every tenant of it differ from
// the origin's fold answer (compare_type_folds), any reason: the healthy audit's one comparison.
func (a *Auditor) compareFolds(ctx context.Context, origin string, from, to int64, digests []wire.ManifestDigest, scope store.FoldScope) ([]string, error) {
	started := time.Now()
	folds := make([]store.TypeDigest, 0, len(digests))
	for _, d := range digests {
		folds = append(folds, store.TypeDigest{EventType: d.Type, X0: d.X0, X1: d.X1, N: d.N})
	}
	mismatched, err := store.TypeFoldsCompare(ctx, a.Pool, origin, from, to, folds, scope)
	if err == nil {
		a.Metrics.ManifestCompared(wire.LevelFolds, time.Since(started))
	}
	return mismatched, err
}

// keyRange is one range [lo, hi) of the tenant key space a drill-down still has to compare, for
// the types whose folds differed over it; list means it holds few enough pairs to list.
type keyRange struct {
	lo, hi int64
	types  []string
	list   bool
}

// drillRanges finds, per type of scope (the mismatched types), the tenants whose (tenant, type)
// folds differ, by bisecting the tenant key space (range_folds.sql): it asks the origin for the
// folds of Limits.RangeParts sub-ranges of a range, compares them with this store's, and recurses
// only into the sub-ranges that differ, until one holds at most Limits.RangeListPairs pairs on
// either side, which it asks listed. One damaged tenant among N costs O(parts × log_parts N)
// digests on the wire, wherever it sorts. Ranges are taken in key order, at most
// Limits.MaxRangeAsks requests an audit; what the budget leaves is reported (complete false) and
// the next audit of the origin starts at the first range left, then comes around from key 0
// (streamseal.audit_range_cursors: durable, so a restart does not start over).
func (a *Auditor) drillRanges(ctx context.Context, origin string, from, to, generation int64, scope store.FoldScope) (map[string][]string, bool, error) {
	types := make([]string, 0, len(scope))
	for _, t := range scope {
		types = append(types, t.EventType)
	}
	resume, err := store.AuditRangeCursor(ctx, a.Pool, origin)
	if err != nil {
		return nil, false, err
	}
	// A stack taken from its end: the range at the resume key first, then around from key 0.
	stack := []keyRange{{lo: store.TenantKeyStart, hi: store.TenantKeyEnd, types: types}}
	if resume > store.TenantKeyStart && resume < store.TenantKeyEnd {
		stack = []keyRange{{lo: store.TenantKeyStart, hi: resume, types: types}, {lo: resume, hi: store.TenantKeyEnd, types: types}}
	}
	found := map[string][]string{}
	asks := 0
	for len(stack) > 0 && asks < a.Limits.MaxRangeAsks {
		r := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		asks++
		if r.list {
			if err := a.listRange(ctx, origin, from, to, generation, r, scope.Only(r.types), found); err != nil {
				return nil, false, err
			}
			continue
		}
		children, err := a.splitRange(ctx, origin, from, to, generation, r, scope.Only(r.types))
		if err != nil {
			return nil, false, err
		}
		for i := len(children) - 1; i >= 0; i-- {
			stack = append(stack, children[i])
		}
	}
	next := int64(0)
	if len(stack) > 0 {
		next = stack[len(stack)-1].lo
		a.Logger.Warn("audit: tenant ranges capped; the next audit resumes where this one stopped", "origin", origin,
			"ranges_left", len(stack), "resume_key", next)
		a.Metrics.PagesCapped(origin)
	}
	if err := store.AuditRangeCursorSet(ctx, a.Pool, origin, next); err != nil {
		return nil, false, err
	}
	for t := range found {
		slices.Sort(found[t])
		found[t] = slices.Compact(found[t])
	}
	return found, len(stack) == 0, nil
}

// splitRange asks the origin for the folds of r's sub-ranges, compares them with this store's,
// and returns the sub-ranges that differ, in key order, each with the types that differ in it
// and marked for listing when either side folds at most Limits.RangeListPairs pairs of it (or it
// can no longer be split).
func (a *Auditor) splitRange(ctx context.Context, origin string, from, to, generation int64, r keyRange, scope store.FoldScope) ([]keyRange, error) {
	parts := a.Limits.RangeParts
	answers, err := a.ask(ctx, origin, wire.ManifestRequest{Level: wire.LevelRanges, From: from, To: to, Scope: wireScope(scope),
		KeyLo: r.lo, KeyHi: r.hi, Parts: parts, MaxDigests: a.Limits.MaxDigests})
	if err != nil {
		return nil, err
	}
	var folds []store.RangeFold
	for _, ans := range answers {
		if ans.Generation != generation {
			return nil, errGenerationMoved
		}
		for _, f := range ans.Ranges {
			folds = append(folds, store.RangeFold{Part: f.Part, EventType: f.Type, X0: f.X0, X1: f.X1, N: f.N, Pairs: f.Pairs})
		}
	}
	started := time.Now()
	diffs, err := store.RangeFoldsCompare(ctx, a.Pool, origin, from, to, r.lo, r.hi, parts, folds, scope)
	if err != nil {
		return nil, err
	}
	a.Metrics.ManifestCompared(wire.LevelRanges, time.Since(started))
	var out []keyRange
	for _, d := range diffs { // in (part, type) order
		if len(out) == 0 || out[len(out)-1].lo != d.Lo {
			out = append(out, keyRange{lo: d.Lo, hi: d.Hi, list: d.Hi-d.Lo < int64(parts)})
		}
		c := &out[len(out)-1]
		c.types = append(c.types, d.EventType)
		if max(d.LocalPairs, d.OriginPairs) <= int64(a.Limits.RangeListPairs) {
			c.list = true
		}
	}
	return out, nil
}

// listRange asks the origin to list r's (tenant, type) digests, compares them with this store's,
// and adds the tenants that differ to found, by type.
func (a *Auditor) listRange(ctx context.Context, origin string, from, to, generation int64, r keyRange, scope store.FoldScope, found map[string][]string) error {
	answers, err := a.ask(ctx, origin, wire.ManifestRequest{Level: wire.LevelRangeTenants, From: from, To: to, Scope: wireScope(scope),
		KeyLo: r.lo, KeyHi: r.hi, MaxDigests: a.Limits.MaxDigests})
	if err != nil {
		return err
	}
	var digests []store.TypeDigest
	for _, ans := range answers {
		if ans.Generation != generation {
			return errGenerationMoved
		}
		for _, d := range ans.Digests {
			digests = append(digests, store.TypeDigest{Tenant: d.Tenant, EventType: d.Type, X0: d.X0, X1: d.X1, N: d.N})
		}
	}
	started := time.Now()
	diffs, err := store.RangeTenantDigestsCompare(ctx, a.Pool, origin, from, to, r.lo, r.hi, digests, scope)
	if err != nil {
		return err
	}
	a.Metrics.ManifestCompared(wire.LevelRangeTenants, time.Since(started))
	for _, d := range diffs {
		found[d.EventType] = append(found[d.EventType], d.Tenant)
	}
	return nil
}

// wireScope is a fold scope as a request names it.
func wireScope(scope store.FoldScope) []wire.TypeScope {
	out := make([]wire.TypeScope, 0, len(scope))
	for _, t := range scope {
		out = append(out, wire.TypeScope{Type: t.EventType, All: t.All, Tenants: t.Tenants})
	}
	return out
}

// drill is what one audit's drill-down found and where it stopped.
type drill struct {
	buckets   []Bucket
	decisions []store.LedgerDecision
	// walked are the types whose pages this audit compared (the page budget may run out first).
	walked map[string]bool
	// left is, per type whose pages were not all compared this audit, the stream after which
	// its next drill-down resumes ("": the first stream, for a type the budget did not reach).
	left map[string]string
}

// drillOrder returns the mismatched types least recently drilled first (never drilled before
// all), cut at the per-audit cap, so types beyond the cap take their turn at the next audits.
func drillOrder(mismatched []string, cursors map[string]store.AuditCursor, limit int) []string {
	order := slices.Clone(mismatched)
	slices.SortStableFunc(order, func(x, y string) int {
		cx, okx := cursors[x]
		cy, oky := cursors[y]
		switch {
		case okx != oky && !okx:
			return -1
		case okx != oky:
			return 1
		case !okx:
			return 0
		}
		return cx.DrilledAt.Compare(cy.DrilledAt)
	})
	if len(order) > limit {
		order = order[:limit]
	}
	return order
}

// drillDown walks stream-level pages of types, each type resuming after the stream where its
// last drill-down stopped (audit_cursors; types at one cursor walk together) and going around
// to it from the first stream, within one page budget for the audit, and records where each
// stopped ("" when it came full circle).
// errGenerationMoved stops a drill-down whose stream pages come from another origin generation
// than the type-level answer it drills into: the origin changed its history meanwhile, and a
// page of the new history compared with copies that have not applied the change would read as
// divergence (a removed event as a local extra).
var errGenerationMoved = errors.New("the origin's generation changed during the drill-down")

// tenants (nil: every tenant) narrows the pages to the tenants whose tenant folds differed.
func (a *Auditor) drillDown(ctx context.Context, origin string, from, to, generation int64, types []string, cursors map[string]store.AuditCursor, total int64, tenants []string) (drill, error) {
	d := drill{walked: map[string]bool{}, left: map[string]string{}}
	groups := map[string][]string{}
	var starts []string
	for _, t := range types {
		after := cursors[t].After
		if _, ok := groups[after]; !ok {
			starts = append(starts, after)
		}
		groups[after] = append(groups[after], t)
	}
	a.Metrics.DrillDown(origin)
	var covered int64 // events of the drilled types on the pages compared (progress)
	pages := 0
	for _, start := range starts {
		group := groups[start]
		// From the cursor to the last stream, then around from the first stream back to the
		// cursor: a resumed drill-down still compares the whole lane when its budget allows.
		after, aroundFromStart, done, walked := start, start == "", false, false
		for !done && pages < a.Limits.MaxPages {
			answers, err := a.ask(ctx, origin, wire.ManifestRequest{Level: wire.LevelStreams, From: from, To: to,
				Types: group, AfterStream: after, MaxDigests: a.Limits.MaxDigests, Tenants: tenants})
			if err != nil {
				return drill{}, err
			}
			for _, ans := range answers {
				if ans.Generation != generation {
					return drill{}, errGenerationMoved
				}
			}
			pages, walked = pages+1, true
			var digests []wire.ManifestDigest
			for _, ans := range answers {
				digests = append(digests, ans.Digests...)
			}
			covered += eventsOf(digests, group)
			if a.OnProgress != nil {
				a.OnProgress(Progress{Origin: origin, Done: covered, Total: total, Pages: pages})
			}
			resume := answers[len(answers)-1].ResumeAfter
			buckets, decisions, err := a.compareStreams(ctx, origin, from, to, group, digests, after, resume, tenants)
			if err != nil {
				return drill{}, err
			}
			d.buckets = append(d.buckets, buckets...)
			d.decisions = append(d.decisions, decisions...)
			switch {
			case resume == "" && aroundFromStart, aroundFromStart && start != "" && resume >= start:
				done, after = true, ""
			case resume == "":
				aroundFromStart, after = true, ""
			default:
				after = resume
			}
		}
		if walked {
			if err := store.AuditCursorSet(ctx, a.Pool, origin, group, after); err != nil {
				return drill{}, err
			}
		}
		for _, t := range group {
			d.walked[t] = walked
			if !done {
				d.left[t] = after
			}
		}
	}
	if len(d.left) > 0 {
		a.Logger.Warn("audit: stream pages capped; the next audit resumes where this one stopped", "origin", origin,
			"resume_after", d.left)
		a.Metrics.PagesCapped(origin)
	}
	return d, nil
}

// compareStreams compares one stream-level page, feeds its divergent buckets to the ledger and
// heals the ledgered buckets of the page's range that now match, in one transaction.
func (a *Auditor) compareStreams(ctx context.Context, origin string, from, to int64, types []string, digests []wire.ManifestDigest, after, through string, tenants []string) ([]Bucket, []store.LedgerDecision, error) {
	started := time.Now()
	c := store.StreamComparison{Origin: origin, From: from, To: to, Types: types, Settle: a.Config.SettleWindow, After: after, Through: through, Tenants: tenants}
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
	// History older than an expansion's birth, missing while its backfill is outstanding, is
	// expected (consumed_types.sql): never ledgered, never divergence.
	ledgered := slices.DeleteFunc(slices.Clone(diffs), func(d store.BucketDiff) bool { return d.Reason == ReasonPendingBackfill })
	var decisions []store.LedgerDecision
	if len(ledgered) > 0 {
		if decisions, err = store.LedgerObserve(ctx, tx, origin, ledgered, a.ledgerPolicy(), a.now()); err != nil {
			return nil, nil, err
		}
	}
	// Ledgered buckets of this page's types and stream range that the comparison no longer
	// returned have healed (a skipped one is still in flight: not healed).
	if err := a.heal(ctx, tx, origin, types, ledgered, after, through, tenants...); err != nil {
		return nil, nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, nil, err
	}
	buckets := judged(diffs)
	for _, b := range buckets {
		if b.Reason != ReasonPendingBackfill {
			a.Metrics.Divergence(origin, b.Type, b.Reason)
		}
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
