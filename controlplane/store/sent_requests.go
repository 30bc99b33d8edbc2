// sent_requests.go: a consumer's record of the redelivery requests it sent
// (streamseal.sent_requests): what a truncated answer continues, and which answers were asked for.

package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Sources of a sent request.
const (
	SourceCheckpoint = "checkpoint"
	SourceAudit      = "audit"
	SourceOperator   = "operator"
	SourceFollowUp   = "follow_up"
)

// SentRequest is one recorded request.
type SentRequest struct {
	RequestID uuid.UUID
	Origin    string
	Source    string
	Request   []byte // the request body as sent (JSON)
	Follows   uuid.UUID
}

// SentRequestRecord records a request this service sent (before or as it is published: a request
// recorded and then lost is what re-asking is for).
func SentRequestRecord(ctx context.Context, db Querier, r SentRequest) error {
	_, err := SentRequestRecordNew(ctx, db, r)
	return err
}

// SentRequestRecordNew is SentRequestRecord that also says whether this call recorded the request
// (false: its id was recorded already, e.g. a follow-up whose id derives from the request it
// follows, sent once ahead of its summary's turn).
func SentRequestRecordNew(ctx context.Context, db Querier, r SentRequest) (bool, error) {
	var recorded bool
	err := db.QueryRow(ctx, `
		with recorded as (
		    insert into streamseal.sent_requests (request_id, origin, source, request, follows, backfill)
		    values ($1, $2, $3, $4, $5,
		            -- A backfill's broadcast roots it; a follow-up continues the backfill it follows.
		            case when $3 = 'backfill' then $1
		                 else (select s.backfill from streamseal.sent_requests s where s.request_id = $5) end)
		    on conflict (request_id) do nothing
		    returning 1
		)
		select exists (select from recorded)`,
		r.RequestID, r.Origin, r.Source, r.Request, nullUUID(r.Follows)).Scan(&recorded)
	if err != nil {
		return false, classify("record sent request", err)
	}
	return recorded, nil
}

// SentRequestAnswered marks the request answered by origin and returns it; ok is false when this
// service sent no such request to origin. A broadcast (a backfill's) is returned for any origin
// and stays open for the others.
func SentRequestAnswered(ctx context.Context, db Querier, requestID uuid.UUID, origin string) (r SentRequest, ok bool, err error) {
	var follows *uuid.UUID
	err = db.QueryRow(ctx, `
		update streamseal.sent_requests
		-- A broadcast (origin '_all') stays open for the other origins (broadcast_answers).
		set answered_at = case when origin = '_all' then answered_at else coalesce(answered_at, now()) end
		where request_id = $1 and origin in ($2, '_all')
		returning request_id, origin, source, request, follows`, requestID, origin).
		Scan(&r.RequestID, &r.Origin, &r.Source, &r.Request, &follows)
	if errors.Is(err, pgx.ErrNoRows) {
		return SentRequest{}, false, nil
	}
	if err != nil {
		return SentRequest{}, false, classify("mark request answered", err)
	}
	if follows != nil {
		r.Follows = *follows
	}
	return r, true, nil
}

// SentRequestGet returns the request this service sent origin (or broadcast) under requestID,
// changing nothing; ok is false when there is none.
func SentRequestGet(ctx context.Context, db Querier, requestID uuid.UUID, origin string) (r SentRequest, ok bool, err error) {
	var follows *uuid.UUID
	err = db.QueryRow(ctx, `
		select request_id, origin, source, request, follows from streamseal.sent_requests
		where request_id = $1 and origin in ($2, '_all')`, requestID, origin).
		Scan(&r.RequestID, &r.Origin, &r.Source, &r.Request, &follows)
	if errors.Is(err, pgx.ErrNoRows) {
		return SentRequest{}, false, nil
	}
	if err != nil {
		return SentRequest{}, false, classify("read sent request", err)
	}
	if follows != nil {
		r.Follows = *follows
	}
	return r, true, nil
}

// SentRequestsPrune forgets the requests sent before now - olderThan and returns how many.
func SentRequestsPrune(ctx context.Context, db Querier, olderThan time.Duration) (int64, error) {
	tag, err := db.Exec(ctx, "delete from streamseal.sent_requests where sent_at < now() - make_interval(secs => $1)", olderThan.Seconds())
	if err != nil {
		return 0, classify("prune sent requests", err)
	}
	return tag.RowsAffected(), nil
}

// SentRequestsUnanswered counts the requests sent to origin whose answer has not come (yet).
func SentRequestsUnanswered(ctx context.Context, db Querier, origin string) (int, error) {
	var n int
	if err := db.QueryRow(ctx, "select count(*)::int from streamseal.sent_requests where origin = $1 and answered_at is null", origin).Scan(&n); err != nil {
		return 0, classify("count unanswered requests to "+origin, err)
	}
	return n, nil
}

// AnswerItem is one thing a redelivery answer carries, checked against the request it answers:
// a bundled event (its type_seq range [ts, ts+1)) or a "cannot re-deliver" entry. Nil fields are
// not stated and not checked.
type AnswerItem struct {
	Tenant                   string
	EventType, StreamID      *string
	OriginSeqLo, OriginSeqHi *int64
	TypeSeqLo, TypeSeqHi     *int64
}

// SentRequestCheckAnswer asks SQL (streamseal.check_redelivery_answer) whether an answer from
// origin answers an open request this service sent it, within its scope: "" when it does, else
// the drop reason (unsolicited, replayed, out_of_scope). final (a summary) marks the request
// answered, so a later summary for it is a replay, and so is a later bundle unless it comes less
// than grace after the summary (zero: no grace) and no history change of its lane was applied
// since the request was sent: then it is checked as if the request were open. lane, when not empty
// and not origin, says the items are forwarded copies of lane's events: they answer a backfill's
// request only.
func SentRequestCheckAnswer(ctx context.Context, db Querier, requestID uuid.UUID, origin, lane string, final bool, grace time.Duration,
	items []AnswerItem) (string, error) {
	n := len(items)
	tenants, types, streams := make([]string, n), make([]*string, n), make([]*string, n)
	osLo, osHi, tsLo, tsHi := make([]*int64, n), make([]*int64, n), make([]*int64, n), make([]*int64, n)
	for i, it := range items {
		tenants[i], types[i], streams[i] = it.Tenant, it.EventType, it.StreamID
		osLo[i], osHi[i], tsLo[i], tsHi[i] = it.OriginSeqLo, it.OriginSeqHi, it.TypeSeqLo, it.TypeSeqHi
	}
	var graceSeconds *float64 // null: no grace (make_interval is strict)
	if grace > 0 {
		secs := grace.Seconds()
		graceSeconds = &secs
	}
	var reason *string
	if err := db.QueryRow(ctx, `select streamseal.check_redelivery_answer($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, lane => $11,
		                                                              grace => make_interval(secs => $12))`,
		requestID, origin, final, tenants, types, streams, osLo, osHi, tsLo, tsHi, textOrNull(lane), graceSeconds).Scan(&reason); err != nil {
		return "", classify("check the answer to request "+requestID.String(), err)
	}
	if reason == nil {
		return "", nil
	}
	return *reason, nil
}
