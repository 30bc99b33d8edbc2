// consumed_types.go: the consumed-type registry (streamseal.consumed_types) and the backfills of
// its expansions: reconcile with the subscriptions, what is due, what was requested, and each
// origin's answers (streamseal.broadcast_answers).

package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Consumed-type statuses (streamseal.consumed_types.status).
const (
	ConsumedBaseline  = "baseline"
	ConsumedPending   = "pending"
	ConsumedRequested = "requested"
	ConsumedComplete  = "complete"
)

// SourceBackfill is the source of a broadcast backfill request (sent_requests).
const SourceBackfill = "backfill"

// BroadcastOrigin is the origin a broadcast request is recorded under (wire.BroadcastInbox).
const BroadcastOrigin = "_all"

// ConsumedTypeChange is one change a reconcile made: Change is "baseline", "expansion" or
// "dropped".
type ConsumedTypeChange struct {
	EventType, Change string
}

// ConsumedTypesReconcile brings the registry in line with the subscriptions
// (streamseal.consumed_types_reconcile): atStart says a control plane is starting (only a start
// takes the first baseline).
func ConsumedTypesReconcile(ctx context.Context, db Querier, atStart bool) ([]ConsumedTypeChange, error) {
	rows, err := db.Query(ctx, "select event_type, change from streamseal.consumed_types_reconcile($1)", atStart)
	if err != nil {
		return nil, classify("reconcile consumed types", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ConsumedTypeChange])
	if err != nil {
		return nil, classify("reconcile consumed types", err)
	}
	return out, nil
}

// BackfillClaim marks every expansion due (pending, or requested and unanswered by every origin
// for reaskAfter) requested by requestID and returns them (streamseal.backfill_claim): of
// several replicas, one claims each type.
func BackfillClaim(ctx context.Context, db Querier, reaskAfter time.Duration, requestID uuid.UUID) ([]string, error) {
	rows, err := db.Query(ctx, "select streamseal.backfill_claim(make_interval(secs => $1), $2)", reaskAfter.Seconds(), requestID)
	if err != nil {
		return nil, classify("claim due backfills", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify("claim due backfills", err)
	}
	return out, nil
}

// StalledFollowUp is the last follow-up of a backfill answer that stalled, to send again: its
// recorded id and body, and the origin it goes to.
type StalledFollowUp struct {
	RequestID uuid.UUID
	Origin    string
	Request   []byte
}

// BackfillReaskStalled claims the backfill answers that made no progress for reaskAfter (backing
// off) and returns the follow-up to send again for each
// (streamseal.backfill_reask_stalled): of several replicas, one claims each.
func BackfillReaskStalled(ctx context.Context, db Querier, reaskAfter time.Duration) ([]StalledFollowUp, error) {
	rows, err := db.Query(ctx, "select request_id, origin, request from streamseal.backfill_reask_stalled(make_interval(secs => $1))",
		reaskAfter.Seconds())
	if err != nil {
		return nil, classify("claim stalled backfill answers", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[StalledFollowUp])
	if err != nil {
		return nil, classify("claim stalled backfill answers", err)
	}
	return out, nil
}

// BackfillRequested marks eventTypes requested by the broadcast requestID
// (streamseal.backfill_requested). A type not consumed is ErrInvalidInput.
func BackfillRequested(ctx context.Context, db Querier, eventTypes []string, requestID uuid.UUID) error {
	if _, err := db.Exec(ctx, "select streamseal.backfill_requested($1, $2)", eventTypes, requestID); err != nil {
		return classify("mark backfill requested", err)
	}
	return nil
}

// BackfillAnswered records origin's summary of requestID (a backfill's broadcast or follow-up)
// and returns the backfill it belongs to; ok is false when requestID is not a backfill's
// (streamseal.backfill_answered).
// total is what the origin said its whole answer holds (0: not said).
func BackfillAnswered(ctx context.Context, db Querier, requestID uuid.UUID, origin string, shipped int64, truncated bool, total int64) (backfill uuid.UUID, ok bool, err error) {
	var root *uuid.UUID
	var stated *int64
	if total > 0 {
		stated = &total
	}
	if err := db.QueryRow(ctx, "select streamseal.backfill_answered($1, $2, $3, $4, $5)", requestID, origin, shipped, truncated, stated).Scan(&root); err != nil {
		return uuid.Nil, false, classify("record backfill answer of "+origin, err)
	}
	if root == nil {
		return uuid.Nil, false, nil
	}
	return *root, true, nil
}

// ConsumedType is one row of the registry.
type ConsumedType struct {
	EventType       string           `json:"event_type"`
	Status          string           `json:"status"`
	BornAt          time.Time        `json:"born_at"`
	BirthPositions  map[string]int64 `json:"birth_positions"`
	BackfillRequest *uuid.UUID       `json:"backfill_request"`
	RequestedAt     *time.Time       `json:"requested_at"`
	CompletedAt     *time.Time       `json:"completed_at"`
}

// ConsumedTypes lists the registry by type.
func ConsumedTypes(ctx context.Context, db Querier) ([]ConsumedType, error) {
	rows, err := db.Query(ctx, `
		select event_type, status, born_at, birth_positions, backfill_request, requested_at, completed_at
		from streamseal.consumed_types order by event_type`)
	if err != nil {
		return nil, classify("read consumed types", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ConsumedType])
	if err != nil {
		return nil, classify("read consumed types", err)
	}
	return out, nil
}

// BackfillOriginProgress is one origin's answers to one backfill: events shipped so far, done
// once it said nothing more, the total its whole answer holds (nil: not stated), and the rate
// since its first answer.
type BackfillOriginProgress struct {
	Backfill  uuid.UUID `json:"backfill"`
	Origin    string    `json:"origin"`
	Shipped   int64     `json:"shipped"`
	Done      bool      `json:"done"`
	FirstAt   time.Time `json:"first_answer_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Total     *int64    `json:"total"`
}

// Fraction is Shipped over Total (1 once done; -1 when no total was stated).
func (p BackfillOriginProgress) Fraction() float64 {
	if p.Done {
		return 1
	}
	if p.Total == nil || *p.Total <= 0 {
		return -1
	}
	return min(1, float64(p.Shipped)/float64(*p.Total))
}

// Rate is events shipped per second between the first answer and the latest.
func (p BackfillOriginProgress) Rate() float64 {
	if d := p.UpdatedAt.Sub(p.FirstAt).Seconds(); d > 0 {
		return float64(p.Shipped) / d
	}
	return 0
}

// BackfillProgress lists the answers of the backfills still referenced by the registry, by
// backfill and origin.
func BackfillProgress(ctx context.Context, db Querier) ([]BackfillOriginProgress, error) {
	rows, err := db.Query(ctx, `
		select a.backfill, a.origin, a.shipped, a.done, a.first_answer_at, a.updated_at, a.total
		from streamseal.broadcast_answers a
		where exists (select from streamseal.consumed_types c where c.backfill_request = a.backfill)
		order by a.backfill, a.origin`)
	if err != nil {
		return nil, classify("read backfill progress", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[BackfillOriginProgress])
	if err != nil {
		return nil, classify("read backfill progress", err)
	}
	return out, nil
}

// BackfillAtMostOnceTypes returns which of eventTypes opted in to at-most-once occurrences in
// backfills (streamseal.backfill_at_most_once_types): what a backfill request names.
func BackfillAtMostOnceTypes(ctx context.Context, db Querier, eventTypes []string) ([]string, error) {
	var out []string
	if err := db.QueryRow(ctx, "select streamseal.backfill_at_most_once_types($1)", eventTypes).Scan(&out); err != nil {
		return nil, classify("read the at-most-once opt-ins", err)
	}
	return out, nil
}

// BackfillIncludeAtMostOnce opts eventTypes in (include) or out of at-most-once occurrences in
// their backfills (streamseal.backfill_include_at_most_once) and returns how many changed.
func BackfillIncludeAtMostOnce(ctx context.Context, db Querier, eventTypes []string, include bool) (int, error) {
	var n int
	if err := db.QueryRow(ctx, "select streamseal.backfill_include_at_most_once($1, $2)", eventTypes, include).Scan(&n); err != nil {
		return 0, classify("set the at-most-once opt-in", err)
	}
	return n, nil
}
