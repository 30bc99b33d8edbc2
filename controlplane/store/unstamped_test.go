package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
)

// Invariant 8 (bounded cost), the queue's upkeep: only a role PostgreSQL lets vacuum the queue is
// told it may (a superuser here, and the owner), so the loop of a control role, which owns
// nothing, never asks for a vacuum Postgres would skip with a warning; there autovacuum keeps the
// queue. The owner's vacuum of the queue runs.
func TestQueueUpkeep_OnlyARoleThatMayVacuumIsAllowed_Invariant8(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.New(t)
	owner, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)
	if may, err := store.QueueUpkeepAllowed(ctx, owner); err != nil || !may {
		t.Fatalf("the owner: allowed %v, err %v; want allowed", may, err)
	}

	login := fmt.Sprintf("upkeep_control_%d", rand.Uint32())
	if _, err := owner.Exec(ctx, fmt.Sprintf(`create role %s login; grant streamseal_control to %s`, login, login)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Exec(context.Background(), fmt.Sprintf(`drop owned by %s; drop role %s`, login, login)) }) //nolint:errcheck // best effort on a throwaway cluster
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User = login
	control, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close(ctx)
	if may, err := store.QueueUpkeepAllowed(ctx, control); err != nil || may {
		t.Fatalf("a control login: allowed %v, err %v; want refused without error", may, err)
	}
	if _, err := store.QueueDeadRows(ctx, control); err != nil {
		t.Fatalf("a control login reads the queue's dead rows: %v", err)
	}

	// The owner's vacuum runs: a stamp left dead rows, and the statistics count the vacuum.
	if err := store.ServiceNameSet(ctx, owner, "upkeep"); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `alter table streamseal.unstamped set (autovacuum_enabled = false);
		select streamseal.append(array(select row(null, 't', 's' || g, 1, 'placed', 0, '\x7b7d'::bytea, null, null)::streamseal.new_event
		                              from generate_series(1, 500) g));
		select streamseal.stamp(1000)`); err != nil {
		t.Fatal(err)
	}
	if err := store.QueueVacuum(ctx, owner); err != nil {
		t.Fatal(err)
	}
	var vacuums int64
	if err := owner.QueryRow(ctx, `select vacuum_count from pg_stat_user_tables where relid = 'streamseal.unstamped'::regclass`).Scan(&vacuums); err != nil {
		t.Fatal(err)
	}
	if vacuums != 1 {
		t.Fatalf("vacuum_count %d after QueueVacuum, want 1", vacuums)
	}
}
