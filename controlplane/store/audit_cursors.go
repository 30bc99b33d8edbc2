// audit_cursors.go: where each (origin, event_type) drill-down resumes in the next audit, and
// when it was last drilled (streamseal.audit_cursors).

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuditCursor is where a type's drill-down resumes ("" at the first stream) and when it last
// ran.
type AuditCursor struct {
	After     string
	DrilledAt time.Time
}

// AuditCursors returns origin's drill-down cursors of eventTypes, by type (a type never drilled
// has none).
func AuditCursors(ctx context.Context, db Querier, origin string, eventTypes []string) (map[string]AuditCursor, error) {
	rows, err := db.Query(ctx, "select event_type, after_stream, updated_at from streamseal.audit_cursors where origin = $1 and event_type = any($2)",
		origin, eventTypes)
	if err != nil {
		return nil, classify("read audit cursors of "+origin, err)
	}
	out := map[string]AuditCursor{}
	var eventType string
	var c AuditCursor
	if _, err := pgx.ForEachRow(rows, []any{&eventType, &c.After, &c.DrilledAt}, func() error {
		out[eventType] = c
		return nil
	}); err != nil {
		return nil, classify("read audit cursors of "+origin, err)
	}
	return out, nil
}

// AuditCursorSet records that the drill-down of origin's eventTypes ran now and resumes after
// the stream after ("": its pages were all compared; the next starts at the first stream).
func AuditCursorSet(ctx context.Context, db Querier, origin string, eventTypes []string, after string) error {
	if _, err := db.Exec(ctx, `
		insert into streamseal.audit_cursors (origin, event_type, after_stream)
		select $1, t, $3 from unnest($2::text[]) t
		on conflict (origin, event_type) do update set after_stream = excluded.after_stream, updated_at = now()`,
		origin, eventTypes, after); err != nil {
		return classify("record audit cursor of "+origin, err)
	}
	return nil
}

// AuditRangeCursor returns the tenant key at which the next drill into origin's tenant ranges
// starts (streamseal.audit_range_cursors; 0 when none is recorded).
func AuditRangeCursor(ctx context.Context, db Querier, origin string) (int64, error) {
	var key int64
	err := db.QueryRow(ctx, "select coalesce((select resume_key from streamseal.audit_range_cursors where origin = $1), 0)", origin).Scan(&key)
	if err != nil {
		return 0, classify("read audit range cursor of "+origin, err)
	}
	return key, nil
}

// AuditRangeCursorSet records the tenant key at which the next drill into origin's tenant ranges
// starts (0: the last drill finished). A key outside [0, TenantKeyEnd) is ErrInvalidInput.
func AuditRangeCursorSet(ctx context.Context, db Querier, origin string, key int64) error {
	if _, err := db.Exec(ctx, `
		insert into streamseal.audit_range_cursors (origin, resume_key) values ($1, $2)
		on conflict (origin) do update set resume_key = excluded.resume_key, updated_at = now()`, origin, key); err != nil {
		return classify("record audit range cursor of "+origin, err)
	}
	return nil
}
