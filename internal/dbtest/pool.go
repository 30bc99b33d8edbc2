package dbtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
)

// NewPool returns a pool (store.Open: streamseal's row types registered) on a fresh migrated
// database for t, whose service is named service. The pool closes when t ends, before the
// database is dropped; start the loops that use it after calling NewPool, so they stop first.
func NewPool(t testing.TB, service string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := store.Open(ctx, New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := store.ServiceNameSet(ctx, pool, service); err != nil {
		t.Fatal(err)
	}
	return pool
}
