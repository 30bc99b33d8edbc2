// audit_cursors.go: where each (origin, event_type) drill-down resumes in the next audit
// (streamseal.audit_cursors).

package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// AuditCursors returns origin's drill-down cursors of eventTypes, by type (a type without one
// starts at the first stream).
func AuditCursors(ctx context.Context, db Querier, origin string, eventTypes []string) (map[string]string, error) {
	rows, err := db.Query(ctx, "select event_type, after_stream from streamseal.audit_cursors where origin = $1 and event_type = any($2)",
		origin, eventTypes)
	if err != nil {
		return nil, classify("read audit cursors of "+origin, err)
	}
	out := map[string]string{}
	var eventType, after string
	if _, err := pgx.ForEachRow(rows, []any{&eventType, &after}, func() error {
		out[eventType] = after
		return nil
	}); err != nil {
		return nil, classify("read audit cursors of "+origin, err)
	}
	return out, nil
}

// AuditCursorSet records where the drill-down of origin's eventTypes resumes; "" forgets the
// cursor (the pages were all compared: the next drill-down starts at the first stream).
func AuditCursorSet(ctx context.Context, db Querier, origin string, eventTypes []string, after string) error {
	var err error
	if after == "" {
		_, err = db.Exec(ctx, "delete from streamseal.audit_cursors where origin = $1 and event_type = any($2)", origin, eventTypes)
	} else {
		_, err = db.Exec(ctx, `
			insert into streamseal.audit_cursors (origin, event_type, after_stream)
			select $1, t, $3 from unnest($2::text[]) t
			on conflict (origin, event_type) do update set after_stream = excluded.after_stream, updated_at = now()`,
			origin, eventTypes, after)
	}
	if err != nil {
		return classify("record audit cursor of "+origin, err)
	}
	return nil
}
