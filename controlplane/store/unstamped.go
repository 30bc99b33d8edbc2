package store

import (
	"context"
	"fmt"
)

// The stamper's queue (streamseal.unstamped) gets a row per own event, deleted by the stamp that
// numbers it, and its claim reads the queue's key from the left. A deleted row's index entry
// stays on its leaf page until VACUUM: nothing is ever inserted to the left of the right edge,
// so no page split clears it. Every claim (and the look a loop takes before it sleeps) walks all
// of them, so a stamp's cost grows with the events stamped since the last vacuum (invariant 8),
// and autovacuum visits at most once a naptime (a minute by default). Measured (2026-12-02):
// after 1M events stamped, stamper lag p99 at 5 000 events/s 110-177 ms; vacuumed, 17-25 ms.

// QueueUpkeepAllowed reports whether the connected role may VACUUM the queue: a superuser, a
// member of its owner or of the database's owner (PostgreSQL 15 lets no one else; the control
// role owns nothing, and there autovacuum alone keeps the queue).
func QueueUpkeepAllowed(ctx context.Context, db Querier) (bool, error) {
	var allowed bool
	if err := db.QueryRow(ctx, `
		select r.rolsuper
		       or pg_has_role(c.relowner, 'USAGE')
		       or pg_has_role(d.datdba, 'USAGE')
		from pg_class c, pg_roles r, pg_database d
		where c.oid = 'streamseal.unstamped'::regclass
		  and r.rolname = current_user
		  and d.datname = current_database()`).Scan(&allowed); err != nil {
		return false, fmt.Errorf("may this role vacuum the stamper's queue: %w", err)
	}
	return allowed, nil
}

// QueueDeadRows is the queue's dead row count as the statistics have it (what autovacuum acts
// on; a busy backend reports its deletes at least once a second).
func QueueDeadRows(ctx context.Context, db Querier) (int64, error) {
	var dead int64
	if err := db.QueryRow(ctx, `
		select coalesce(s.n_dead_tup, 0) from pg_stat_user_tables s
		where s.relid = 'streamseal.unstamped'::regclass`).Scan(&dead); err != nil {
		return 0, fmt.Errorf("count the stamper's queue's dead rows: %w", err)
	}
	return dead, nil
}

// QueueVacuum vacuums the queue, skipping it when another vacuum holds it (an autovacuum, or a
// replica's loop): either one clears the same rows. db must not be inside a transaction.
func QueueVacuum(ctx context.Context, db Querier) error {
	if _, err := db.Exec(ctx, `vacuum (skip_locked) streamseal.unstamped`); err != nil {
		return fmt.Errorf("vacuum the stamper's queue: %w", err)
	}
	return nil
}
