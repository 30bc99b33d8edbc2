// Package migrate brings a service database to the schema this binary was built with: it applies
// the numbered migrations, then re-installs the SQL code package atomically. It owns the
// schema_version table and nothing else; the SQL itself lives in the sql/ directory.
package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	streamsql "github.com/streamseal/streamseal/sql"
)

// VersionTable is where tern records how many migrations a database has applied.
const VersionTable = "streamseal.schema_version"

// ErrNewerDatabase is returned when a database was migrated by a newer streamseal than this one.
// Running older code against a newer schema could write rows the newer rules forbid.
var ErrNewerDatabase = errors.New("database was migrated by a newer streamseal")

// Result says what a Migrate call did.
type Result struct {
	From, To int32 // schema versions before and after
}

// Migrate applies pending migrations and re-installs the function package. It is idempotent and
// safe to run concurrently from several processes (tern serializes on an advisory lock).
func Migrate(ctx context.Context, conn *pgx.Conn) (Result, error) {
	if _, err := conn.Exec(ctx, "create schema if not exists streamseal"); err != nil {
		return Result{}, fmt.Errorf("create schema streamseal: %w", err)
	}
	migrator, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return Result{}, fmt.Errorf("prepare migrator: %w", err)
	}
	if err := migrator.LoadMigrations(streamsql.Migrations()); err != nil {
		return Result{}, fmt.Errorf("load embedded migrations: %w", err)
	}
	known := int32(len(migrator.Migrations))
	from, err := migrator.GetCurrentVersion(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("read schema version: %w", err)
	}
	if from > known {
		return Result{}, fmt.Errorf("%w: it is at schema version %d and this binary knows versions up to %d; run the newer streamseal binary",
			ErrNewerDatabase, from, known)
	}
	if err := migrator.Migrate(ctx); err != nil {
		return Result{}, fmt.Errorf("apply migrations: %w", err)
	}
	code, err := migrate.LoadCodePackage(streamsql.Functions())
	if err != nil {
		return Result{}, fmt.Errorf("load embedded code package: %w", err)
	}
	if err := migrate.InstallCodePackage(ctx, conn, map[string]any{}, code); err != nil {
		return Result{}, fmt.Errorf("install code package: %w", err)
	}
	return Result{From: from, To: known}, nil
}

// MigrateURL connects to databaseURL, migrates it and disconnects.
func MigrateURL(ctx context.Context, databaseURL string) (Result, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return Result{}, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return Migrate(ctx, conn)
}
