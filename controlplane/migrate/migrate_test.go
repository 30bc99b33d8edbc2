package migrate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/migrate"
	"github.com/streamseal/streamseal/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("IsIdempotentAndReinstallsTheCodePackage", func(t *testing.T) {
		t.Parallel()
		conn := connect(t, dbtest.New(t))
		before := functionOIDs(t, conn)
		r, err := migrate.Migrate(ctx, conn)
		if err != nil {
			t.Fatalf("second migrate: %v", err)
		}
		if r.From != r.To {
			t.Fatalf("second migrate moved the schema from %d to %d; want no migration", r.From, r.To)
		}
		after := functionOIDs(t, conn)
		if len(after) != len(before) || len(after) == 0 {
			t.Fatalf("function count changed from %d to %d", len(before), len(after))
		}
		for name, oid := range after {
			if before[name] == oid {
				t.Fatalf("function %s kept oid %d: the code package was not re-installed", name, oid)
			}
		}
	})

	t.Run("ReportsTheInstalledCodeVersion", func(t *testing.T) {
		t.Parallel()
		conn := connect(t, dbtest.New(t))
		r, err := migrate.Migrate(ctx, conn)
		if err != nil {
			t.Fatalf("migrate: %v", err)
		}
		var installed string
		if err := conn.QueryRow(ctx, "select streamseal.version()").Scan(&installed); err != nil {
			t.Fatal(err)
		}
		if r.CodeVersion == "" || r.CodeVersion != installed {
			t.Fatalf("Result.CodeVersion = %q; want streamseal.version() = %q", r.CodeVersion, installed)
		}
	})

	t.Run("LeavesNoStaleFunctionBehind", func(t *testing.T) {
		t.Parallel()
		conn := connect(t, dbtest.New(t))
		mustExec(t, conn, "create function streamseal.renamed_away() returns int language sql as 'select 1'")
		mustExec(t, conn, "create type streamseal._old_shape as (a int)")
		if _, err := migrate.Migrate(ctx, conn); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		var stale int
		if err := conn.QueryRow(ctx, `
			select (select count(*) from pg_proc where proname = 'renamed_away')
			     + (select count(*) from pg_type where typname = '_old_shape')`).Scan(&stale); err != nil {
			t.Fatal(err)
		}
		if stale != 0 {
			t.Fatalf("%d stale objects survived the code-package install", stale)
		}
	})

	t.Run("RefusesADatabaseMigratedByANewerBinary", func(t *testing.T) {
		t.Parallel()
		conn := connect(t, dbtest.New(t))
		mustExec(t, conn, "update "+migrate.VersionTable+" set version = version + 1")
		_, err := migrate.Migrate(ctx, conn)
		if !errors.Is(err, migrate.ErrNewerDatabase) {
			t.Fatalf("migrate of a newer database: got %v, want ErrNewerDatabase", err)
		}
	})
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func functionOIDs(t *testing.T, conn *pgx.Conn) map[string]uint32 {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		select p.oid::regprocedure::text, p.oid::int8 from pg_proc p
		join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'streamseal'`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint32{}
	for rows.Next() {
		var name string
		var oid int64
		if err := rows.Scan(&name, &oid); err != nil {
			t.Fatal(err)
		}
		out[name] = uint32(oid)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
