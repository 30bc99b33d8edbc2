// quarantine.go: own events the relay could not publish (streamseal.quarantine_*), set aside
// with their reason so the events behind them flow, and re-queued by an operator.

package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Quarantined is one own event set aside by a pipeline stage.
type Quarantined struct {
	EventID       uuid.UUID
	OriginSeq     int64
	Tenant        string
	EventType     string
	StreamID      string
	PayloadBytes  int64
	Stage         string
	Reason        string
	QuarantinedAt time.Time
	RequeuedAt    *time.Time
}

// QuarantineEvent sets a stamped own event aside with the stage that could not process it and
// why (streamseal.quarantine_event).
func QuarantineEvent(ctx context.Context, db Querier, eventID uuid.UUID, stage, reason string) error {
	if _, err := db.Exec(ctx, "select streamseal.quarantine_event($1, $2, $3)", eventID, stage, reason); err != nil {
		return classify("quarantine event", err)
	}
	return nil
}

// QuarantineRequeue marks the given quarantined events (all of them when ids is nil) for the
// relay to publish again, and returns the ids marked.
func QuarantineRequeue(ctx context.Context, db Querier, ids []uuid.UUID) ([]uuid.UUID, error) {
	var arg any
	if ids != nil {
		arg = ids
	}
	return collectIDs(ctx, db, "requeue quarantined events", "select streamseal.quarantine_requeue($1)", arg)
}

// QuarantineRequeued reads up to max re-queued events, in origin_seq order, for the relay.
func QuarantineRequeued(ctx context.Context, db Querier, max int) ([]EventCopy, error) {
	rows, err := db.Query(ctx, `
		select `+eventCopySQL+`
		from streamseal.quarantine_requeued($1) e`, max)
	if err != nil {
		return nil, classify("read re-queued events", err)
	}
	out, err := pgx.CollectRows(rows, eventCopyRow)
	if err != nil {
		return nil, classify("read re-queued events", err)
	}
	return out, nil
}

// QuarantineRelease ends an event's quarantine once its publish was acknowledged.
func QuarantineRelease(ctx context.Context, db Querier, eventID uuid.UUID) error {
	if _, err := db.Exec(ctx, "select streamseal.quarantine_release($1)", eventID); err != nil {
		return classify("release quarantined event", err)
	}
	return nil
}

// QuarantineList lists every quarantined event in origin_seq order.
func QuarantineList(ctx context.Context, db Querier) ([]Quarantined, error) {
	rows, err := db.Query(ctx, `
		select q.event_id, q.origin_seq, e.tenant, e.event_type, e.stream_id, octet_length(e.payload)::bigint,
		       q.stage, q.reason, q.quarantined_at, q.requeued_at
		from streamseal.quarantine q
		join streamseal.events e on e.event_id = q.event_id
		order by q.origin_seq`)
	if err != nil {
		return nil, classify("list quarantined events", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Quarantined])
	if err != nil {
		return nil, classify("list quarantined events", err)
	}
	return out, nil
}

// QuarantineCount counts the quarantined events (readiness and the gauge).
func QuarantineCount(ctx context.Context, db Querier) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, "select count(*) from streamseal.quarantine").Scan(&n); err != nil {
		return 0, classify("count quarantined events", err)
	}
	return n, nil
}
