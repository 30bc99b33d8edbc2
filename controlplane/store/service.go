// service.go: the service this database belongs to (streamseal.set_service_name, service_name).

package store

import (
	"context"
	"errors"
)

// ServiceNameSet names this database's service; the same name again is a no-op.
func ServiceNameSet(ctx context.Context, db Querier, name string) error {
	if _, err := db.Exec(ctx, "select streamseal.set_service_name($1)", name); err != nil {
		return classify("set service name", err)
	}
	return nil
}

// ServiceName returns this database's service name.
func ServiceName(ctx context.Context, db Querier) (string, error) {
	var name string
	if err := db.QueryRow(ctx, "select streamseal.service_name()").Scan(&name); err != nil {
		return "", classify("read service name", err)
	}
	return name, nil
}

// OriginGeneration returns this service's origin generation (streamseal.origin_generation):
// bumped when a legitimate mutation changes its sealed history.
func OriginGeneration(ctx context.Context, db Querier) (int64, error) {
	var generation int64
	if err := db.QueryRow(ctx, "select streamseal.origin_generation()").Scan(&generation); err != nil {
		return 0, classify("read origin generation", err)
	}
	return generation, nil
}

// ErrNotMigrated means the database has no streamseal schema yet.
var ErrNotMigrated = errors.New("not migrated: run `streamseal migrate`")

// SchemaMigrated returns ErrNotMigrated when the database holds no migrated streamseal schema.
func SchemaMigrated(ctx context.Context, db Querier) error {
	var migrated bool
	if err := db.QueryRow(ctx, "select to_regclass('streamseal.events') is not null").Scan(&migrated); err != nil {
		return classify("check the schema", err)
	}
	if !migrated {
		return ErrNotMigrated
	}
	return nil
}
