// backfill_answers.go: the origin side of a backfill beyond its own lane
// (sql/functions/backfill_answers.sql): the copies it holds of other origins' events, paged by
// lane, and how many events a whole answer is expected to ship.

package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// CopiesCursor continues select_forwarded_copies strictly after (Lane, Stream, Version); a Lane
// alone starts at that lane; all empty starts at the first lane.
type CopiesCursor struct {
	Lane    string
	Stream  *string
	Version *int64
}

// RedeliveryCopiesPage reads the next page of the copies this service holds of other origins'
// events of eventTypes that requester is granted here (streamseal.select_forwarded_copies), at
// most max events and never beyond cap; atMostOnceTypes' at-most-once occurrences are included.
// The copies carry their own origin (the lane).
func RedeliveryCopiesPage(ctx context.Context, db Querier, requester string, eventTypes []string, after CopiesCursor,
	max, cap int, atMostOnceTypes []string) ([]EventCopy, error) {
	rows, err := db.Query(ctx, `
		select origin, event_id, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags,
		       payload, metadata, occurred_at
		from streamseal.select_forwarded_copies(requester => $1, event_types => $2, after_lane => $3,
		    after_stream => $4, after_version => $5, max_events => $6, cap => $7, at_most_once_types => $8)`,
		requester, eventTypes, textOrNull(after.Lane), after.Stream, after.Version, max, cap, textsOrNull(atMostOnceTypes))
	if err != nil {
		return nil, classify("select forwarded copies", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (EventCopy, error) {
		var e EventCopy
		err := row.Scan(&e.Origin, &e.EventID, &e.OriginSeq, &e.TypeSeq, &e.Tenant, &e.StreamID, &e.StreamVersion, &e.EventType,
			&e.Flags, &e.Payload, &e.Metadata, &e.OccurredAt)
		return e, err
	})
	if err != nil {
		return nil, classify("select forwarded copies", err)
	}
	return out, nil
}

// BackfillTotal estimates how many events a whole state-only answer to requester for eventTypes
// ships: the own lane's, plus the forwarded copies' when copies are served
// (streamseal.backfill_total, from the maintained digests).
func BackfillTotal(ctx context.Context, db Querier, requester string, eventTypes []string, copies bool) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, "select streamseal.backfill_total($1, $2, $3)", requester, eventTypes, copies).Scan(&n); err != nil {
		return 0, classify("estimate the backfill answer for "+requester, err)
	}
	return n, nil
}
