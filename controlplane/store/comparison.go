// comparison.go: a consumer's comparison of its copies with an origin's answer
// (sql/functions/comparison.sql): which types differ at type level, and each differing bucket of a
// stream page classified (deficit, identity_mismatch, local_extra) or skipped as in flight.

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// TypeComparison is an origin's type-level answer for a window, to compare with this store.
type TypeComparison struct {
	Origin   string
	From, To int64
	Digests  []TypeDigest
	Consumed []string      // the types this service consumes from the origin
	Settle   time.Duration // buckets updated within it on either side are skipped
}

// TypeDigestsCompare returns the consumed event types whose folds differ from the origin's, for
// any reason (streamseal.compare_type_digests), in name order.
func TypeDigestsCompare(ctx context.Context, db Querier, c TypeComparison) ([]string, error) {
	n := len(c.Digests)
	tenants, types := make([]string, n), make([]string, n)
	x0s, x1s, ns := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, d := range c.Digests {
		tenants[i], types[i], x0s[i], x1s[i], ns[i] = d.Tenant, d.EventType, d.X0, d.X1, d.N
	}
	rows, err := db.Query(ctx, `
		select distinct event_type
		from streamseal.compare_type_digests($1, $2, $3, $4, $5, $6, $7, $8, $9, make_interval(secs => $10), subscribed_tenants_only => true)
		order by 1`, c.Origin, c.From, c.To, tenants, types, x0s, x1s, ns, c.Consumed, c.Settle.Seconds())
	if err != nil {
		return nil, classify("compare type digests", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify("compare type digests", err)
	}
	return out, nil
}

// StreamComparison is one stream-level page of an origin's answer, to compare with this store.
type StreamComparison struct {
	Origin   string
	From, To int64
	Digests  []StreamDigest
	// Types are the drilled types: each is compared even with no bucket on the page, so this
	// store's extras of it in the page's range are found.
	Types          []string
	Settle         time.Duration
	After, Through string // the page's stream range (After, Through]; "" is open
	// Tenants (nil: every tenant) narrows the local side to the tenants the page was asked for.
	Tenants []string
}

// BucketDiff is one differing bucket of a stream comparison. Its JSON form is the one the ledger
// functions read (sql/functions/ledger.sql's header).
type BucketDiff struct {
	StreamID  string `json:"stream_id"`
	Tenant    string `json:"tenant"`
	EventType string `json:"event_type"`
	LocalX0   int64  `json:"local_x0"`
	LocalX1   int64  `json:"local_x1"`
	LocalN    int64  `json:"local_n"`
	OriginX0  int64  `json:"origin_x0"`
	OriginX1  int64  `json:"origin_x1"`
	OriginN   int64  `json:"origin_n"`
	Reason    string `json:"reason"`  // deficit, identity_mismatch or local_extra
	Skipped   bool   `json:"skipped"` // updated inside the settle window: in flight, not judged
}

// StreamDigestsCompare classifies every differing bucket of a page of the drilled types
// (streamseal.compare_stream_digests).
func StreamDigestsCompare(ctx context.Context, db Querier, c StreamComparison) ([]BucketDiff, error) {
	// One row per origin bucket, then one marker row per drilled type (null stream and tenant).
	var streams, tenants []*string
	var eventTypes []string
	var x0s, x1s, ns []*int64
	for _, d := range c.Digests {
		streams, tenants, eventTypes = append(streams, &d.StreamID), append(tenants, &d.Tenant), append(eventTypes, d.EventType)
		x0s, x1s, ns = append(x0s, &d.X0), append(x1s, &d.X1), append(ns, &d.N)
	}
	for _, t := range c.Types {
		streams, tenants, eventTypes = append(streams, nil), append(tenants, nil), append(eventTypes, t)
		x0s, x1s, ns = append(x0s, nil), append(x1s, nil), append(ns, nil)
	}
	rows, err := db.Query(ctx, `
		select stream_id, tenant, event_type, local_x0, local_x1, local_n, origin_x0, origin_x1, origin_n, reason, skipped
		from streamseal.compare_stream_digests($1, $2, $3, $4, $5, $6, $7, $8, $9, make_interval(secs => $10), $11, $12, subscribed_tenants_only => true,
		                                           tenants_only => $14)
		where event_type = any($13)`,
		c.Origin, c.From, c.To, streams, tenants, eventTypes, x0s, x1s, ns, c.Settle.Seconds(),
		textOrNull(c.After), textOrNull(c.Through), c.Types, tenantsOrNull(c.Tenants))
	if err != nil {
		return nil, classify("compare stream digests", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[BucketDiff])
	if err != nil {
		return nil, classify("compare stream digests", err)
	}
	return out, nil
}
