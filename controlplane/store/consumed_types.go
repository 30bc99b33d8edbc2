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
func BackfillAnswered(ctx context.Context, db Querier, requestID uuid.UUID, origin string, shipped int64, truncated bool) (backfill uuid.UUID, ok bool, err error) {
	var root *uuid.UUID
	if err := db.QueryRow(ctx, "select streamseal.backfill_answered($1, $2, $3, $4)", requestID, origin, shipped, truncated).Scan(&root); err != nil {
		return uuid.Nil, false, classify("record backfill answer of "+origin, err)
	}
	if root == nil {
		return uuid.Nil, false, nil
	}
	return *root, true, nil
}

// ConsumedType is one row of the registry.
type ConsumedType struct {
	EventType, Status string
	BornAt            time.Time
	BirthPositions    map[string]int64
	BackfillRequest   *uuid.UUID
	RequestedAt       *time.Time
	CompletedAt       *time.Time
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
// once it said nothing more, and the rate since its first answer.
type BackfillOriginProgress struct {
	Backfill           uuid.UUID
	Origin             string
	Shipped            int64
	Done               bool
	FirstAt, UpdatedAt time.Time
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
		select a.backfill, a.origin, a.shipped, a.done, a.first_answer_at, a.updated_at
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
