// Package migrate brings a service database to the schema this binary was built with: it applies
// the numbered migrations, applies River's own migrations (in their own schema), and re-installs
// the SQL code package atomically, last, so its privileges cover River's tables too. It runs as
// the owner of the schema; `streamseal run` needs only the role streamseal_control. It owns the
// schema_version table and nothing else; the SQL itself lives in the sql/ directory.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/streamseal/streamseal/controlplane/store"
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
	// CodeVersion is what streamseal.version() answers once the code package is installed: the
	// version of the SQL surface applications see (scheme in sql/functions/version.sql).
	CodeVersion string
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
	// River's tables exist before the code package installs, so its privileges.sql grants the
	// control plane's role (streamseal_control) River's tables too, on every migrate.
	if err := migrateRiver(ctx, conn); err != nil {
		return Result{}, err
	}
	code, err := migrate.LoadCodePackage(streamsql.Functions())
	if err != nil {
		return Result{}, fmt.Errorf("load embedded code package: %w", err)
	}
	if err := migrate.InstallCodePackage(ctx, conn, map[string]any{}, code); err != nil {
		return Result{}, fmt.Errorf("install code package: %w", err)
	}
	var codeVersion string
	if err := conn.QueryRow(ctx, "select streamseal.version()").Scan(&codeVersion); err != nil {
		return Result{}, fmt.Errorf("read installed code package version: %w", err)
	}
	return Result{From: from, To: known, CodeVersion: codeVersion}, nil
}

// RiverSchema holds River's job tables, apart from streamseal's own.
const RiverSchema = "streamseal_river"

// migrateRiver applies River's own migrations (the job queue the control plane schedules its
// periodic work on) in RiverSchema. River runs each of its migrations in its own transaction
// (some add an enum value the next one uses), so it gets a small pool of its own.
func migrateRiver(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, "create schema if not exists "+RiverSchema); err != nil {
		return fmt.Errorf("create schema %s: %w", RiverSchema, err)
	}
	cfg, err := pgxpool.ParseConfig(conn.Config().ConnString())
	if err != nil {
		return err
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect for River migrations: %w", err)
	}
	defer pool.Close()
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: RiverSchema, Logger: quietLogger()})
	if err != nil {
		return fmt.Errorf("prepare River migrations: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("apply River migrations: %w", err)
	}
	return nil
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// MigrateURL connects to databaseURL, migrates it and disconnects.
func MigrateURL(ctx context.Context, databaseURL string) (Result, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return Result{}, fmt.Errorf("parse database URL: %w", err)
	}
	store.DefaultConnectTimeout(cfg)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return Result{}, fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return Migrate(ctx, conn)
}
