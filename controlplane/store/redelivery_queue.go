// redelivery_queue.go: an origin's accepted redelivery requests not yet served
// (streamseal.redelivery_queue): acknowledged on the broker once here, removed once served, so a
// crash between the two rebuilds the request instead of losing it. A build holds a session
// advisory lock on its request (on a connection it keeps for the build): a crashed build's lock
// frees with its connection, so another replica, or the restarted process, takes the request
// over at once.

package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// QueuedRequest is one accepted request.
type QueuedRequest struct {
	RequestID uuid.UUID
	Requester string
	Request   []byte // the request body (JSON)
	StateOnly bool   // a backfill's request (served after plain repairs)
	Attempts  int    // builds started, this one included once counted
}

// Outcomes of RedeliveryQueueAdd.
const (
	QueueAdded     = "added"     // accepted now
	QueueDuplicate = "duplicate" // this request id waits already
	QueueFull      = "full"      // the queue holds its maximum: leave the request on the broker
	QueueServed    = "served"    // this request id was served already: a replay, never rebuilt
)

// RedeliveryQueueAdd accepts a request unless its id was served already (streamseal.served_requests:
// an origin serves a request id once) or the queue already holds max requests.
func RedeliveryQueueAdd(ctx context.Context, db Querier, q QueuedRequest, max int) (string, error) {
	var outcome string
	if err := db.QueryRow(ctx, `
		with served as (
		    select from streamseal.served_requests where request_id = $1),
		added as (
		    insert into streamseal.redelivery_queue (request_id, requester, request, state_only)
		    select $1, $2, $3, $5 where (select count(*) from streamseal.redelivery_queue) < $4
		        and not exists (select from served)
		    on conflict (request_id) do nothing
		    returning 1)
		select case when exists (select from added) then 'added'
		            when exists (select from served) then 'served'
		            when exists (select from streamseal.redelivery_queue where request_id = $1) then 'duplicate'
		            else 'full' end`,
		q.RequestID, q.Requester, q.Request, max, q.StateOnly).Scan(&outcome); err != nil {
		return "", classify("queue redelivery request", err)
	}
	return outcome, nil
}

// RedeliveryQueueNext lists up to n queued requests in the order they are served: plain
// repairs before backfills (state-only requests, whose answers are paced), each oldest first
// (migration 044).
func RedeliveryQueueNext(ctx context.Context, db Querier, n int) ([]QueuedRequest, error) {
	rows, err := db.Query(ctx, `
		select request_id, requester, request, state_only, attempts from streamseal.redelivery_queue
		order by state_only, accepted_at, request_id limit $1`, n)
	if err != nil {
		return nil, classify("read redelivery queue", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[QueuedRequest])
	if err != nil {
		return nil, classify("read redelivery queue", err)
	}
	return out, nil
}

// redeliveryLockSQL is the advisory lock key of one queued request.
const redeliveryLockSQL = "hashtextextended('streamseal.redelivery_queue:' || $1::text, 0)"

// RedeliveryQueueLock takes a queued request's build lock on conn if no other build holds it.
func RedeliveryQueueLock(ctx context.Context, conn *pgx.Conn, requestID uuid.UUID) (bool, error) {
	var locked bool
	if err := conn.QueryRow(ctx, "select pg_try_advisory_lock("+redeliveryLockSQL+")", requestID).Scan(&locked); err != nil {
		return false, classify("lock redelivery request", err)
	}
	return locked, nil
}

// RedeliveryQueueUnlock releases a request's build lock held on conn.
func RedeliveryQueueUnlock(ctx context.Context, conn *pgx.Conn, requestID uuid.UUID) error {
	if _, err := conn.Exec(ctx, "select pg_advisory_unlock("+redeliveryLockSQL+")", requestID); err != nil {
		return classify("unlock redelivery request", err)
	}
	return nil
}

// RedeliveryQueueAttempt counts a build of a request and returns its attempts so far; ok is
// false when the request is no longer queued (another build served it).
func RedeliveryQueueAttempt(ctx context.Context, db Querier, requestID uuid.UUID) (attempts int, ok bool, err error) {
	err = db.QueryRow(ctx, "update streamseal.redelivery_queue set attempts = attempts + 1 where request_id = $1 returning attempts",
		requestID).Scan(&attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, classify("count redelivery attempt", err)
	}
	return attempts, true, nil
}

// RedeliveryQueueRemove forgets a served (or given up) request and records its id as served
// (streamseal.served_requests) with the summary sent for it (JSON; nil when none was sent: a
// request given up), so a replay of it is never rebuilt but answered by that summary again
// (ServedRequestSummary); served ids older than retention are pruned in the same statement.
func RedeliveryQueueRemove(ctx context.Context, db Querier, q QueuedRequest, summary []byte, retention time.Duration) error {
	if _, err := db.Exec(ctx, `
		with removed as (
		    delete from streamseal.redelivery_queue where request_id = $1),
		recorded as (
		    insert into streamseal.served_requests (request_id, requester, summary) values ($1, $2, $4)
		    on conflict (request_id) do nothing)
		delete from streamseal.served_requests
		where served_at < now() - make_interval(secs => $3) and request_id <> $1`,
		q.RequestID, q.Requester, retention.Seconds(), summary); err != nil {
		return classify("remove served redelivery request", err)
	}
	return nil
}

// ServedRequestSummary returns the summary this origin sent for request id when it served it to
// requester (streamseal.served_requests); ok is false when it served no such request to that
// requester or sent no summary for it (given up, or served before summaries were kept).
func ServedRequestSummary(ctx context.Context, db Querier, requestID uuid.UUID, requester string) (summary []byte, ok bool, err error) {
	err = db.QueryRow(ctx, `
		select summary from streamseal.served_requests
		where request_id = $1 and requester = $2 and summary is not null`, requestID, requester).Scan(&summary)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, classify("read served request summary", err)
	}
	return summary, true, nil
}
