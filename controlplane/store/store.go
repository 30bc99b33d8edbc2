// Package store is the thin pgx layer over streamseal's SQL functions: one Go function per SQL
// entry point, no rule of its own. Every function takes a DB (a pool, a connection or a
// transaction), so callers choose the transaction boundaries.
//
// Connections must have streamseal's row types registered (RegisterTypes); Open does it for
// every pooled connection.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is what the store functions need: a *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrInvalidInput wraps a refusal of bad input by the SQL layer (SQLSTATE 22023). The message
// names the bad value; nothing was written.
var ErrInvalidInput = errors.New("invalid input")

// ErrNotNamed means the database has no service name yet (SQLSTATE 55000 from service_name()).
var ErrNotNamed = errors.New("service not named")

// Flags mark events the integrity folds treat specially. Unknown bits are refused.
type Flags int32

const (
	// Ephemeral events are checkpointed but stay out of digests and are reaped.
	Ephemeral Flags = 1
	// AtMostOnce marks an at-most-once occurrence: detected and reported, never re-delivered.
	AtMostOnce Flags = 2
	// StateOnly marks a backfilled event: stored and projected, its triggers not re-fired.
	StateOnly Flags = 4
)

// rowTypes are the composite types Go binds to; they live in migrations, so their OIDs survive
// code-package re-installs.
var rowTypes = []string{"streamseal.new_event", "streamseal._new_event", "streamseal.event_copy", "streamseal._event_copy"}

// RegisterTypes teaches conn streamseal's row types. Pools opened with Open do this themselves.
func RegisterTypes(ctx context.Context, conn *pgx.Conn) error {
	types, err := conn.LoadTypes(ctx, rowTypes)
	if err != nil {
		return fmt.Errorf("load streamseal row types (is the database migrated?): %w", err)
	}
	conn.TypeMap().RegisterTypes(types)
	return nil
}

// Open returns a pool on databaseURL whose connections know streamseal's row types.
func Open(ctx context.Context, databaseURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	cfg.AfterConnect = RegisterTypes
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

// classify maps SQL refusals onto the package's typed errors, keeping the SQL message.
func classify(op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "22023":
			return fmt.Errorf("%s: %w: %s", op, ErrInvalidInput, pgErr.Message)
		case "55000":
			return fmt.Errorf("%s: %w: %s", op, ErrNotNamed, pgErr.Message)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// SetServiceName names this database's service; the same name again is a no-op.
func SetServiceName(ctx context.Context, db DB, name string) error {
	if _, err := db.Exec(ctx, "select streamseal.set_service_name($1)", name); err != nil {
		return classify("set service name", err)
	}
	return nil
}

// ServiceName returns this database's service name.
func ServiceName(ctx context.Context, db DB) (string, error) {
	var name string
	if err := db.QueryRow(ctx, "select streamseal.service_name()").Scan(&name); err != nil {
		return "", classify("read service name", err)
	}
	return name, nil
}

// NewEvent is one own event for Append. A zero EventID gets a random one; a zero OccurredAt
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

// EventCopy is one copy of another origin's event for Ingest, identity included.
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

// Append stores own events (unstamped) and returns their ids in order. A bad event refuses the
// whole batch with ErrInvalidInput.
func Append(ctx context.Context, db DB, events []NewEvent) ([]uuid.UUID, error) {
	return collectIDs(ctx, db, "append", "select streamseal.append($1::streamseal.new_event[])", events)
}

// Ingest stores copies of other origins' events, skipping ids already held, and returns the ids
// it added. A bad copy refuses the whole batch with ErrInvalidInput.
func Ingest(ctx context.Context, db DB, copies []EventCopy) ([]uuid.UUID, error) {
	return collectIDs(ctx, db, "ingest", "select streamseal.ingest($1::streamseal.event_copy[])", copies)
}

func collectIDs(ctx context.Context, db DB, op, sql string, arg any) ([]uuid.UUID, error) {
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

// Stamp numbers up to max committed own events in commit order (streamseal.stamp).
func Stamp(ctx context.Context, db DB, max int) (StampResult, error) {
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

// Bucket names one digest bucket.
type Bucket struct {
	Origin, Tenant, EventType, StreamID string
}

// Digest is one bucket's fold.
type Digest struct {
	Bucket
	X0, X1, N int64
}

// StreamDigests returns the maintained digest table (non-empty buckets), in key order.
func StreamDigests(ctx context.Context, db DB) ([]Digest, error) {
	return collectDigests(ctx, db, "read stream digests", `
		select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests
		where (x0, x1, n) <> (0, 0, 0) order by 1, 2, 3, 4`)
}

// RecomputeDigests folds the store from scratch (streamseal.recompute_digests), in key order.
func RecomputeDigests(ctx context.Context, db DB) ([]Digest, error) {
	return collectDigests(ctx, db, "recompute digests", `
		select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.recompute_digests()
		order by 1, 2, 3, 4`)
}

func collectDigests(ctx context.Context, db DB, op, sql string) ([]Digest, error) {
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return nil, classify(op, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Digest, error) {
		var d Digest
		err := row.Scan(&d.Origin, &d.Tenant, &d.EventType, &d.StreamID, &d.X0, &d.X1, &d.N)
		return d, err
	})
	if err != nil {
		return nil, classify(op, err)
	}
	return out, nil
}

// Drift is one bucket where the maintained fold disagreed with the store.
type Drift struct {
	Bucket
	Kind           string // drift, missing or phantom
	Stored, Actual Digest
}

// VerifyStreamDigests compares the digest table with a recompute and, with heal, corrects it
// (streamseal.verify_stream_digests). Every row returned is an alarm.
func VerifyStreamDigests(ctx context.Context, db DB, heal bool) ([]Drift, error) {
	rows, err := db.Query(ctx, `
		select origin, tenant, event_type, stream_id, kind,
		       stored_x0, stored_x1, stored_n, actual_x0, actual_x1, actual_n
		from streamseal.verify_stream_digests($1)`, heal)
	if err != nil {
		return nil, classify("verify stream digests", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Drift, error) {
		var d Drift
		err := row.Scan(&d.Origin, &d.Tenant, &d.EventType, &d.StreamID, &d.Kind,
			&d.Stored.X0, &d.Stored.X1, &d.Stored.N, &d.Actual.X0, &d.Actual.X1, &d.Actual.N)
		d.Stored.Bucket, d.Actual.Bucket = d.Bucket, d.Bucket
		return d, err
	})
	if err != nil {
		return nil, classify("verify stream digests", err)
	}
	return out, nil
}
