// Package store is the one door between Go and SQL: every statement the product runs is a named
// function here, noun first (LedgerObserve, CheckpointVerify), one file per concept, and no other
// product package holds SQL text (a test in internal/layout enforces it). A function holds no
// rule of its own: rules are the SQL functions'. Every function takes a Querier (a pool, a
// connection or a transaction), so callers choose the transaction boundaries.
//
// Connections must have streamseal's row types registered (RegisterTypes); Open does it for
// every pooled connection.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Querier is what the store functions need: a *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrInvalidInput wraps a refusal of bad input by the SQL layer (SQLSTATE 22023). The message
// names the bad value; nothing was written.
var ErrInvalidInput = errors.New("invalid input")

// ErrConstraint wraps a refusal by a table constraint (SQLSTATE class 23), e.g. a copy whose
// (origin, origin_seq) is held under another event id. The SQL error stays in the chain.
var ErrConstraint = errors.New("constraint violated")

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

// ConnectTimeoutDefault bounds one connection attempt when the database URL sets no
// connect_timeout: a server that accepts TCP and never answers once hung migrate and run for ever.
const ConnectTimeoutDefault = 10 * time.Second

// DefaultConnectTimeout gives cfg ConnectTimeoutDefault unless its URL set connect_timeout.
func DefaultConnectTimeout(cfg *pgx.ConnConfig) {
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = ConnectTimeoutDefault
	}
}

// Open returns a pool on databaseURL whose connections know streamseal's row types.
func Open(ctx context.Context, databaseURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	DefaultConnectTimeout(cfg.ConnConfig)
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
		if strings.HasPrefix(pgErr.Code, "23") {
			return fmt.Errorf("%s: %w: %w", op, ErrConstraint, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}
