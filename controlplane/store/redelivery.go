// redelivery.go: the origin's redelivery selection (sql/functions/redelivery.sql): keyset pages
// of its own lane under conjunctive filters, and which requested sequences it cannot serve; and
// the consumer's count of what a repair has brought so far.

package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// RedeliverySelection is one request's filters; an empty filter is not applied.
type RedeliverySelection struct {
	Tenants, EventTypes []string
	Streams             []string
	FromSeq, ToSeq      *int64     // origin_seq window [from, to)
	TypeSeqRanges       [][2]int64 // type_seq ranges
	// Requester, when set, is the service the selection is for: only the (tenant, type) pairs
	// it is granted are selected, and nil Tenants then means its granted tenants (invariant 11).
	Requester string
	// StateOnly is a backfill's selection: ephemeral events are left out.
	StateOnly bool
	// AtMostOnceTypes (StateOnly only) are the types whose at-most-once occurrences are selected.
	AtMostOnceTypes []string
}

// RedeliveryCursor continues a selection strictly after (stream, version); nil fields start it.
type RedeliveryCursor struct {
	AfterStream  *string
	AfterVersion *int64
}

// RedeliveryPage reads the next keyset page of sel from this service's own lane, at most max
// events and never beyond cap for the whole request (streamseal.select_redelivery). The copies
// carry origin.
func RedeliveryPage(ctx context.Context, db Querier, origin string, sel RedeliverySelection, after RedeliveryCursor, max, cap int) ([]EventCopy, error) {
	rows, err := db.Query(ctx, `
		select event_id, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags,
		       payload, metadata, occurred_at
		from streamseal.select_redelivery(
		    tenants => $1, event_types => $2, streams => $3, from_seq => $4, to_seq => $5,
		    type_seq_ranges => $6::int8multirange, after_stream => $7, after_version => $8,
		    max_events => $9, cap => $10, requester => $11, state_only => $12, at_most_once_types => $13)`,
		textsOrNull(sel.Tenants), sel.EventTypes, textsOrNull(sel.Streams), sel.FromSeq, sel.ToSeq, multirangeOrNull(sel.TypeSeqRanges),
		after.AfterStream, after.AfterVersion, max, cap, textOrNull(sel.Requester), sel.StateOnly, textsOrNull(sel.AtMostOnceTypes))
	if err != nil {
		return nil, classify("select redelivery page", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (EventCopy, error) {
		e := EventCopy{Origin: origin}
		err := row.Scan(&e.EventID, &e.OriginSeq, &e.TypeSeq, &e.Tenant, &e.StreamID, &e.StreamVersion, &e.EventType,
			&e.Flags, &e.Payload, &e.Metadata, &e.OccurredAt)
		return e, err
	})
	if err != nil {
		return nil, classify("select redelivery page", err)
	}
	return out, nil
}

// Unservable is a part of a request the origin cannot serve, and why.
type Unservable struct {
	Tenant, EventType, Reason string
	TypeSeqs, OriginSeqs      [][2]int64
}

// RedeliveryUnservable names the requested sequences of sel this origin cannot serve
// (streamseal.redelivery_unservable). The streams filter plays no part.
func RedeliveryUnservable(ctx context.Context, db Querier, sel RedeliverySelection) ([]Unservable, error) {
	rows, err := db.Query(ctx, `
		select coalesce(tenant, ''), coalesce(event_type, ''), reason, `+rangesSQL("type_seqs")+`, `+rangesSQL("origin_seqs")+`
		from streamseal.redelivery_unservable(tenants => $1, event_types => $2, from_seq => $3, to_seq => $4,
		                                      type_seq_ranges => $5::int8multirange, requester => $6)`,
		textsOrNull(sel.Tenants), sel.EventTypes, sel.FromSeq, sel.ToSeq, multirangeOrNull(sel.TypeSeqRanges), textOrNull(sel.Requester))
	if err != nil {
		return nil, classify("find unservable sequences", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Unservable, error) {
		var u Unservable
		var typeSeqs, originSeqs [][]int64
		err := row.Scan(&u.Tenant, &u.EventType, &u.Reason, &typeSeqs, &originSeqs)
		u.TypeSeqs, u.OriginSeqs = rangePairs(typeSeqs), rangePairs(originSeqs)
		return u, err
	})
	if err != nil {
		return nil, classify("find unservable sequences", err)
	}
	return out, nil
}

// EventsHeldCount counts the copies of origin's events of tenants and eventTypes, within the
// origin_seq window [from, to) (nil: open), that this store holds.
func EventsHeldCount(ctx context.Context, db Querier, origin string, tenants, eventTypes []string, from, to *int64) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, `
		select count(*) from streamseal.events
		where origin = $1 and tenant = any($2) and event_type = any($3)
		  and ($4::bigint is null or origin_seq >= $4) and ($5::bigint is null or origin_seq < $5)`,
		origin, tenants, eventTypes, from, to).Scan(&n); err != nil {
		return 0, classify("count held events of "+origin, err)
	}
	return n, nil
}
