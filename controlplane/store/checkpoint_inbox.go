// checkpoint_inbox.go: a consumer's received checkpoints waiting for verification
// (streamseal.checkpoint_inbox, migration 029). The inbox records a run of checkpoint messages in
// one statement and acknowledges them, so live events behind them on the same subject are stored
// at once; the inbox's verifier loop takes the oldest rows, verifies them and removes them in the
// transaction that took them (a crash leaves them to be taken again: verification is repeatable,
// as a broker redelivery always made it).

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// QueuedCheckpoint is one checkpoint message waiting for verification.
type QueuedCheckpoint struct {
	ID       int64
	Subject  string
	Payload  []byte
	Ordered  bool // the inbox's proof of order when it recorded the message
	Attempts int  // failed verifications so far
}

// CheckpointInboxEntry is one checkpoint message to record: its origin and subject as the door
// admitted them, its payload as received, the type_seq range its lane announces (nil on a
// heartbeat), whether a later checkpoint of its lane carries all it does (false when it
// accepts at-most-once occurrences), and its lane's tenant and event type (while it waits, a
// listed round of that lane it would lower the birth of stays unaccounted for: the feed's
// lane-set mark, lane_rounds.sql).
type CheckpointInboxEntry struct {
	Origin, Subject   string
	Payload           []byte
	First, Last       *int64
	Coalescible       bool
	Tenant, EventType string
}

// CheckpointInboxOverflow is an origin a record reached the cap of: how many of its waiting
// checkpoints were dropped as superseded by a later one of their lane, how many wait now, and the
// positions (0-based, in the entries given) of the checkpoints refused, which were not recorded.
type CheckpointInboxOverflow struct {
	Origin     string
	Superseded int64
	Waiting    int64
	Refused    []int
}

// CheckpointInboxRecord records checkpoint messages, in order, with the inbox's proof of order
// for all of them, holding at most maxPerOrigin waiting per origin
// (streamseal.checkpoint_inbox_record): it returns the origins that reached the cap, and the
// entries refused, which the caller must record as rejected.
func CheckpointInboxRecord(ctx context.Context, db Querier, entries []CheckpointInboxEntry, ordered bool, maxPerOrigin int) ([]CheckpointInboxOverflow, error) {
	n := len(entries)
	origins, subjects, payloads := make([]string, n), make([]string, n), make([][]byte, n)
	firsts, lasts, coalescible := make([]*int64, n), make([]*int64, n), make([]bool, n)
	tenants, types := make([]string, n), make([]string, n)
	for i, e := range entries {
		origins[i], subjects[i], payloads[i] = e.Origin, e.Subject, e.Payload
		firsts[i], lasts[i], coalescible[i] = e.First, e.Last, e.Coalescible
		tenants[i], types[i] = e.Tenant, e.EventType
	}
	rows, err := db.Query(ctx, `
		select origin, superseded, waiting, refused
		from streamseal.checkpoint_inbox_record($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		origins, subjects, payloads, firsts, lasts, coalescible, ordered, maxPerOrigin, tenants, types)
	if err != nil {
		return nil, classify("record received checkpoints", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CheckpointInboxOverflow, error) {
		var o CheckpointInboxOverflow
		var refused []int32
		if err := row.Scan(&o.Origin, &o.Superseded, &o.Waiting, &refused); err != nil {
			return o, err
		}
		for _, p := range refused {
			o.Refused = append(o.Refused, int(p)-1)
		}
		return o, nil
	})
	if err != nil {
		return nil, classify("record received checkpoints", err)
	}
	return out, nil
}

// CheckpointInboxTake locks and returns up to max waiting checkpoints, oldest first, skipping
// rows another verifier holds and rows whose retry is not due. Call it in a transaction that
// removes (CheckpointInboxDone) or reschedules (CheckpointInboxRetry) what it took.
func CheckpointInboxTake(ctx context.Context, tx pgx.Tx, max int) ([]QueuedCheckpoint, error) {
	rows, err := tx.Query(ctx, `
		select id, subject, payload, ordered, attempts
		from streamseal.checkpoint_inbox
		where not_before <= now()
		order by id
		limit $1
		for update skip locked`, max)
	if err != nil {
		return nil, classify("take received checkpoints", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueuedCheckpoint, error) {
		var q QueuedCheckpoint
		err := row.Scan(&q.ID, &q.Subject, &q.Payload, &q.Ordered, &q.Attempts)
		return q, err
	})
	if err != nil {
		return nil, classify("take received checkpoints", err)
	}
	return out, nil
}

// CheckpointInboxDone removes verified (or rejected) checkpoints.
func CheckpointInboxDone(ctx context.Context, db Querier, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, "delete from streamseal.checkpoint_inbox where id = any($1)", ids); err != nil {
		return classify("remove verified checkpoints", err)
	}
	return nil
}

// CheckpointInboxRetry counts one more failed verification of a checkpoint and delays its next
// one by after.
func CheckpointInboxRetry(ctx context.Context, db Querier, id int64, after time.Duration) error {
	if _, err := db.Exec(ctx, `
		update streamseal.checkpoint_inbox
		set attempts = attempts + 1, not_before = now() + make_interval(secs => $2)
		where id = $1`, id, after.Seconds()); err != nil {
		return classify("reschedule a checkpoint's verification", err)
	}
	return nil
}

// CheckpointInboxWaiting counts the checkpoints waiting for verification and the age of the
// oldest (zero when none): how far the verifier is behind.
func CheckpointInboxWaiting(ctx context.Context, db Querier) (int64, time.Duration, error) {
	var n int64
	var ageS float64
	if err := db.QueryRow(ctx, `
		select count(*), coalesce(extract(epoch from now() - min(received_at)), 0)::float8
		from streamseal.checkpoint_inbox`).Scan(&n, &ageS); err != nil {
		return 0, 0, classify("count waiting checkpoints", err)
	}
	return n, time.Duration(ageS * float64(time.Second)), nil
}
