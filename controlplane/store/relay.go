// relay.go: what the relay reads and writes: the stamped own events above its cursor
// (relay_state.published_through) and the cursor itself, and the advisory lock that makes one
// relay per database the active one.

package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// relayLeaderLock names the session advisory lock the active relay of a database holds.
const relayLeaderLock = "streamseal.relay"

// RelayLeaderTryLock takes the relay's leader lock on conn if it is free. The lock is held for
// the session's life, so a crashed leader's lock frees itself with its connection.
func RelayLeaderTryLock(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var leader bool
	if err := conn.QueryRow(ctx, "select pg_try_advisory_lock(hashtextextended($1, 0))", relayLeaderLock).Scan(&leader); err != nil {
		return false, classify("try relay leader lock", err)
	}
	return leader, nil
}

// RelaySession is the database session that holds the relay's leader lock: its backend pid and
// the application_name its client connected with (a replica's name, when the URL sets one).
type RelaySession struct {
	PID             int32
	ApplicationName string
}

// RelayLeaderSession returns the session holding the relay's leader lock in this database, and
// false when none does (no replica leads: between a leader's death and the next election). It
// lets an operator or the fault suite tell which replica's relay leads without asking the
// processes: the lock is the election, so its holder is the leader.
//
// A bigint advisory lock shows in pg_locks split in two: its high 32 bits as classid, its low
// ones as objid, with objsubid 1 (PostgreSQL's documented encoding).
func RelayLeaderSession(ctx context.Context, db Querier) (RelaySession, bool, error) {
	var s RelaySession
	err := db.QueryRow(ctx, `
		with lock as (select hashtextextended($1, 0) as k)
		select a.pid, coalesce(a.application_name, '')
		from lock, pg_catalog.pg_locks l
		join pg_catalog.pg_stat_activity a on a.pid = l.pid
		where l.locktype = 'advisory' and l.granted and l.objsubid = 1
		  and l.database = (select oid from pg_catalog.pg_database where datname = current_database())
		  and l.classid = ((lock.k >> 32) & 4294967295)::oid and l.objid = (lock.k & 4294967295)::oid`,
		relayLeaderLock).Scan(&s.PID, &s.ApplicationName)
	if errors.Is(err, pgx.ErrNoRows) {
		return RelaySession{}, false, nil
	}
	if err != nil {
		return RelaySession{}, false, classify("find the relay leader's session", err)
	}
	return s, true, nil
}

// RelayCursorAdvance moves the relay's cursor to acked (never back) and returns how long the
// acknowledged event waited between its store and now, in the database's clock (the relay lag);
// ok is false when that event is not held. The event is found by its number's key in own_numbers,
// then by event_id: two key probes, never a join the planner chooses.
func RelayCursorAdvance(ctx context.Context, db Querier, acked int64) (age time.Duration, ok bool, err error) {
	var seconds *float64
	if err := db.QueryRow(ctx, `
		update streamseal.relay_state set published_through = greatest(published_through, $1), updated_at = now()
		returning (select date_part('epoch', clock_timestamp() - e.stored_at) from streamseal.events e
		           where e.event_id = (select n.event_id from streamseal.own_numbers n
		                               where n.origin = streamseal.service_name() and n.origin_seq = $1))`, acked).Scan(&seconds); err != nil {
		return 0, false, classify("record relay cursor", err)
	}
	if seconds == nil {
		return 0, false, nil
	}
	return time.Duration(*seconds * float64(time.Second)), true, nil
}

// RelayPageResult is one relay_page round: what its stamp numbered and the page read after it.
type RelayPageResult struct {
	Stamped    int           // events this call numbered (0 when it did not stamp)
	OldestWait time.Duration // how long the oldest of them waited to be numbered (the stamper lag)
	Events     []EventCopy   // stamped own events above the position, in origin_seq order
}

// RelayPage stamps up to stampMax committed own events (none when stampMax is 0) and reads up to
// max stamped own events above after (the relay cursor when after is nil), in origin_seq order,
// in one statement (streamseal.relay_page). The statement's implicit transaction has committed
// when RelayPage returns without error, so what it returns may be published.
func RelayPage(ctx context.Context, db Querier, after *int64, max, stampMax int) (RelayPageResult, error) {
	var out RelayPageResult
	rows, err := db.Query(ctx, `
		select e.stamped, e.oldest_wait_seconds, `+eventCopySQL+`
		from streamseal.relay_page($1, $2, $3) e`, after, max, stampMax)
	if err != nil {
		return out, classify("stamp and read events to relay", err)
	}
	var wait *float64
	out.Events, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (EventCopy, error) {
		var e EventCopy
		err := row.Scan(&out.Stamped, &wait, &e.EventID, &e.Origin, &e.OriginSeq, &e.TypeSeq, &e.Tenant, &e.StreamID,
			&e.StreamVersion, &e.EventType, &e.Flags, &e.Payload, &e.Metadata, &e.OccurredAt)
		return e, err
	})
	if err != nil {
		// CollectRows reads to the end of the result: an error raised at commit lands here too.
		return RelayPageResult{}, classify("stamp and read events to relay", err)
	}
	if wait != nil {
		out.OldestWait = time.Duration(*wait * float64(time.Second))
	}
	return out, nil
}
