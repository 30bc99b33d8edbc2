// events.go: the store itself: own events in (append), copies in (ingest), numbering (stamp).

package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// NewEvent is one own event for EventsAppend. A zero EventID gets a random one; a zero OccurredAt
// means now.
type NewEvent struct {
	EventID       uuid.UUID
	Tenant        string
	StreamID      string
	StreamVersion int64
	EventType     string
	Flags         Flags
	Payload       []byte
	Metadata      []byte // JSON, or nil
	OccurredAt    time.Time
}

// IsNull implements pgtype.CompositeIndexGetter.
func (e NewEvent) IsNull() bool { return false }

// Index implements pgtype.CompositeIndexGetter, in streamseal.new_event's field order.
func (e NewEvent) Index(i int) any {
	switch i {
	case 0:
		return nullUUID(e.EventID)
	case 1:
		return e.Tenant
	case 2:
		return nullString(e.StreamID)
	case 3:
		return e.StreamVersion
	case 4:
		return nullString(e.EventType)
	case 5:
		return int32(e.Flags)
	case 6:
		return nullBytes(e.Payload)
	case 7:
		return nullBytes(e.Metadata)
	case 8:
		return nullTime(e.OccurredAt)
	}
	panic(fmt.Sprintf("streamseal.new_event has no field %d", i))
}

// EventCopy is one copy of another origin's event for EventsIngest, identity included.
type EventCopy struct {
	EventID       uuid.UUID
	Origin        string
	OriginSeq     int64
	TypeSeq       int64
	Tenant        string
	StreamID      string
	StreamVersion int64
	EventType     string
	Flags         Flags
	Payload       []byte
	Metadata      []byte
	OccurredAt    time.Time
}

// IsNull implements pgtype.CompositeIndexGetter.
func (c EventCopy) IsNull() bool { return false }

// Index implements pgtype.CompositeIndexGetter, in streamseal.event_copy's field order.
func (c EventCopy) Index(i int) any {
	switch i {
	case 0:
		return nullUUID(c.EventID)
	case 1:
		return nullString(c.Origin)
	case 2:
		return nullInt(c.OriginSeq)
	case 3:
		return nullInt(c.TypeSeq)
	case 4:
		return c.Tenant
	case 5:
		return nullString(c.StreamID)
	case 6:
		return c.StreamVersion
	case 7:
		return nullString(c.EventType)
	case 8:
		return int32(c.Flags)
	case 9:
		return nullBytes(c.Payload)
	case 10:
		return nullBytes(c.Metadata)
	case 11:
		return nullTime(c.OccurredAt)
	}
	panic(fmt.Sprintf("streamseal.event_copy has no field %d", i))
}

func nullUUID(id uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: id, Valid: id != uuid.Nil} }
func nullString(s string) pgtype.Text   { return pgtype.Text{String: s, Valid: s != ""} }
func nullInt(n int64) pgtype.Int8       { return pgtype.Int8{Int64: n, Valid: n != 0} }
func nullTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// nullBytes keeps nil (absent) apart from an empty, present value.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// EventsAppend stores own events (unstamped) and returns their ids in order. A bad event refuses the
// whole batch with ErrInvalidInput.
func EventsAppend(ctx context.Context, db Querier, events []NewEvent) ([]uuid.UUID, error) {
	return collectIDs(ctx, db, "append", "select streamseal.append($1::streamseal.new_event[])", events)
}

// EventsIngest stores copies of other origins' events, skipping ids already held, and returns the ids
// it added. A bad copy refuses the whole batch with ErrInvalidInput.
func EventsIngest(ctx context.Context, db Querier, copies []EventCopy) ([]uuid.UUID, error) {
	return collectIDs(ctx, db, "ingest", "select streamseal.ingest($1::streamseal.event_copy[])", copies)
}

func collectIDs(ctx context.Context, db Querier, op, sql string, arg any) ([]uuid.UUID, error) {
	rows, err := db.Query(ctx, sql, arg)
	if err != nil {
		return nil, classify(op, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, classify(op, err)
	}
	return ids, nil
}

// StampResult is what one stamp call did.
type StampResult struct {
	Stamped       int           // events numbered by this call
	LastOriginSeq int64         // the lane's highest origin_seq after it
	OldestWait    time.Duration // how long the batch's oldest event waited to be numbered
}

// EventsStamp numbers up to max committed own events in commit order (streamseal.stamp).
func EventsStamp(ctx context.Context, db Querier, max int) (StampResult, error) {
	var r StampResult
	var wait *float64
	if err := db.QueryRow(ctx, "select stamped, last_origin_seq, oldest_wait_seconds from streamseal.stamp($1)", max).Scan(&r.Stamped, &r.LastOriginSeq, &wait); err != nil {
		return StampResult{}, classify("stamp", err)
	}
	if wait != nil {
		r.OldestWait = time.Duration(*wait * float64(time.Second))
	}
	return r, nil
}

// eventCopySQL is the select list eventCopyRow reads: a stored event with its whole identity.
const eventCopySQL = `e.event_id, e.origin, e.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version,
		       e.event_type, e.flags, e.payload, e.metadata, e.occurred_at`

// eventCopyRow reads one row of eventCopySQL.
func eventCopyRow(row pgx.CollectableRow) (EventCopy, error) {
	var e EventCopy
	err := row.Scan(&e.EventID, &e.Origin, &e.OriginSeq, &e.TypeSeq, &e.Tenant, &e.StreamID, &e.StreamVersion,
		&e.EventType, &e.Flags, &e.Payload, &e.Metadata, &e.OccurredAt)
	return e, err
}
