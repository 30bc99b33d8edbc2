// range_folds.go: the audit's drill into a mismatched type by bisecting the tenant key space
// (sql/functions/range_folds.sql): the origin's folds of the sub-ranges of a key range and its
// listing of a small range, and the consumer's comparisons of both with its copy.

package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// TenantKeyStart is the first tenant key.
const TenantKeyStart int64 = 0

// TenantKeyEnd is the exclusive end of the tenant key space (streamseal.tenant_key_end(), 2^62):
// [0, TenantKeyEnd) holds every tenant.
const TenantKeyEnd int64 = 1 << 62

// RangeFoldMaxParts is the most sub-ranges one range fold may split a range into
// (streamseal.range_fold_max_parts()).
const RangeFoldMaxParts = 64

// RangeFold is the fold of one event type over the tenants of one sub-range (Part) of a split
// key range, and the number of (tenant, type) pairs it folds.
type RangeFold struct {
	Part             int
	EventType        string
	X0, X1, N, Pairs int64
}

// RangeAnswer is an origin's range folds of one key range over [from, Watermark).
type RangeAnswer struct {
	Folds     []RangeFold
	Watermark int64
}

// AnswerRangeFolds answers this origin's lane over [from, to) to requester: [lo, hi) of the tenant
// key space split into parts sub-ranges, per (part, type of scope) the fold over the tenants it
// is granted (streamseal.answer_range_folds). A bad range or split is ErrInvalidInput.
func AnswerRangeFolds(ctx context.Context, db Querier, requester, lane string, from, to int64, scope FoldScope,
	lo, hi int64, parts int) (RangeAnswer, error) {
	types, tenants := scope.arrays()
	rows, err := db.Query(ctx, `
		select part, event_type, x0, x1, n, pairs, watermark
		from streamseal.answer_range_folds($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		requester, lane, from, to, types, tenants, lo, hi, parts)
	if err != nil {
		return RangeAnswer{}, classify("range folds", err)
	}
	defer rows.Close()
	var answer RangeAnswer
	for rows.Next() {
		var part *int
		var eventType *string
		var f RangeFold
		if err := rows.Scan(&part, &eventType, &f.X0, &f.X1, &f.N, &f.Pairs, &answer.Watermark); err != nil {
			return RangeAnswer{}, classify("range folds", err)
		}
		if eventType == nil {
			continue // nothing in range: the watermark only
		}
		f.Part, f.EventType = *part, *eventType
		answer.Folds = append(answer.Folds, f)
	}
	if err := rows.Err(); err != nil {
		return RangeAnswer{}, classify("range folds", err)
	}
	return answer, nil
}

// AnswerRangeTenantDigests answers the (tenant, type) folds of scope requester is granted whose
// tenant key lies in [lo, hi) (streamseal.answer_range_tenant_digests): the drill-down's listing
// of a range its folds found small.
func AnswerRangeTenantDigests(ctx context.Context, db Querier, requester, lane string, from, to int64, scope FoldScope,
	lo, hi int64) (TypeAnswer, error) {
	types, tenants := scope.arrays()
	rows, err := db.Query(ctx, `
		select tenant, event_type, x0, x1, n, watermark
		from streamseal.answer_range_tenant_digests($1, $2, $3, $4, $5, $6, $7, $8)`,
		requester, lane, from, to, types, tenants, lo, hi)
	return typeAnswer(rows, err)
}

// RangeDiff is one (sub-range, type) whose folds differ: the sub-range [Lo, Hi), and how many
// (tenant, type) pairs each side folds in it.
type RangeDiff struct {
	Part                    int
	Lo, Hi                  int64
	EventType               string
	LocalPairs, OriginPairs int64
	Reason                  string
}

// RangeFoldsCompare returns the (sub-range, type) folds of [lo, hi) split into parts that differ
// from the origin's answer over [from, to) (streamseal.compare_range_folds), in (part, type)
// order. A bad range, split or answer row refuses the answer (ErrInvalidInput).
func RangeFoldsCompare(ctx context.Context, db Querier, origin string, from, to, lo, hi int64, parts int,
	folds []RangeFold, scope FoldScope) ([]RangeDiff, error) {
	n := len(folds)
	partsOf, eventTypes := make([]int32, n), make([]string, n)
	x0s, x1s, ns, pairs := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, f := range folds {
		partsOf[i], eventTypes[i], x0s[i], x1s[i], ns[i], pairs[i] = int32(f.Part), f.EventType, f.X0, f.X1, f.N, f.Pairs
	}
	types, tenants := scope.arrays()
	rows, err := db.Query(ctx, `
		select part, part_lo, part_hi, event_type, local_pairs, origin_pairs, reason
		from streamseal.compare_range_folds($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		origin, from, to, lo, hi, parts, partsOf, eventTypes, x0s, x1s, ns, pairs, types, tenants)
	if err != nil {
		return nil, classify("compare range folds", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[RangeDiff])
	if err != nil {
		return nil, classify("compare range folds", err)
	}
	return out, nil
}

// RangeTenantDigestsCompare returns the (tenant, type) pairs of scope whose tenant key lies in
// [lo, hi) whose folds over [from, to) differ from the origin's listing
// (streamseal.compare_range_tenant_digests), in (tenant, type) order.
func RangeTenantDigestsCompare(ctx context.Context, db Querier, origin string, from, to, lo, hi int64, digests []TypeDigest,
	scope FoldScope) ([]TenantType, error) {
	n := len(digests)
	tenantsOf, eventTypes, x0s, x1s, ns := make([]string, n), make([]string, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, d := range digests {
		tenantsOf[i], eventTypes[i], x0s[i], x1s[i], ns[i] = d.Tenant, d.EventType, d.X0, d.X1, d.N
	}
	types, tenants := scope.arrays()
	rows, err := db.Query(ctx, `
		select tenant, event_type from streamseal.compare_range_tenant_digests($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		origin, from, to, lo, hi, tenantsOf, eventTypes, x0s, x1s, ns, types, tenants)
	if err != nil {
		return nil, classify("compare range tenant digests", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[TenantType])
	if err != nil {
		return nil, classify("compare range tenant digests", err)
	}
	return out, nil
}
