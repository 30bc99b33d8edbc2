// lanes.go: a consumer's lanes, one per (origin, tenant, event_type): floor, holes, what was
// requested and what was accepted as lost (streamseal.lanes; sql/functions/lanes.sql).

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Gap is one confirmed gap a checkpoint round acted on, for the record (streamseal.record_gap).
type Gap struct {
	Origin, Tenant, EventType string
	TypeSeqs                  [][2]int64
	From, To                  int64     // the checkpoint window
	Action                    string    // requested, would_request or waiting_for_cap
	Request                   []byte    // the request sent, or that would be sent (JSON)
	Round                     time.Time // when the origin took the round
}

// LaneGapRecord records what a checkpoint did about a lane's confirmed gap.
func LaneGapRecord(ctx context.Context, db Querier, g Gap) error {
	if _, err := db.Exec(ctx, "select streamseal.record_gap($1, $2, $3, $4::int8multirange, $5, $6, $7, $8, $9)",
		g.Origin, g.Tenant, g.EventType, multirange(g.TypeSeqs), g.From, g.To, g.Action, g.Request, g.Round); err != nil {
		return classify("record gap", err)
	}
	return nil
}

// RequestBackoff is how a lane's unhealed request is asked again: the k-th ask waits
// Base × 2^(k-1), up to the MaxAttempts-th rung, where it stays (backoff.sql).
type RequestBackoff struct {
	Base        time.Duration
	MaxAttempts int
	// AnswersSince, when set (the process's start), keeps the origin's answer time (the re-ask
	// waits at least twice it) to requests sent since: answers a crash held back for the
	// broker's ack wait measure the crash, not how fast the origin answers now.
	AnswersSince time.Time
}

// LaneMarkRequested marks a lane's type_seq ranges as requested until their deadline
// (streamseal.mark_requested) and returns the lane's attempts so far; attempts >= MaxAttempts
// means the budget is spent.
func LaneMarkRequested(ctx context.Context, db Querier, origin, tenant, eventType string, typeSeqs [][2]int64, b RequestBackoff) (int, error) {
	var attempts int
	var since *time.Time
	if !b.AnswersSince.IsZero() {
		since = &b.AnswersSince
	}
	if err := db.QueryRow(ctx, "select streamseal.mark_requested($1, $2, $3, $4::int8multirange, make_interval(secs => $5), $6, answers_since => $7)",
		origin, tenant, eventType, multirange(typeSeqs), b.Base.Seconds(), b.MaxAttempts, since).Scan(&attempts); err != nil {
		return 0, classify("mark requested", err)
	}
	return attempts, nil
}

// LaneAcceptLoss records type_seq ranges an origin says it cannot serve as an accepted loss of
// the lane (streamseal.accept_loss), so its floor moves past them and nobody asks again.
func LaneAcceptLoss(ctx context.Context, db Querier, origin, tenant, eventType string, typeSeqs [][2]int64, reason string) error {
	if _, err := db.Exec(ctx, "select streamseal.accept_loss($1, $2, $3, $4::int8multirange, $5)",
		origin, tenant, eventType, multirange(typeSeqs), reason); err != nil {
		return classify("accept loss from "+origin, err)
	}
	return nil
}

// LaneState is one lane as status shows it; the range sets are int8multirange text ("{}" for
// none).
type LaneState struct {
	Tenant         string `json:"tenant"`
	EventType      string `json:"event_type"`
	Floor          int64  `json:"floor"`
	Suspected      string `json:"suspected"`
	Confirmed      string `json:"confirmed"`
	Requested      string `json:"requested"`
	AcceptedLosses string `json:"accepted_losses"` // type_seqs the origin cannot serve: gone, on record
	// RequestAttempts counts the asks of the requested ranges; NextRequestAt is when they are
	// asked again if still missing (RFC 3339, "" when nothing is requested).
	RequestAttempts int    `json:"request_attempts"`
	NextRequestAt   string `json:"next_request_at,omitempty"`
}

// LanesByOrigin lists origin's lanes by tenant and type.
func LanesByOrigin(ctx context.Context, db Querier, origin string) ([]LaneState, error) {
	rows, err := db.Query(ctx, `
		select tenant, event_type, floor, suspected::text, confirmed::text, requested::text, accepted_losses::text,
		       request_attempts, coalesce(to_char(next_request_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '')
		from streamseal.lanes where origin = $1 order by tenant, event_type`, origin)
	if err != nil {
		return nil, classify("read lanes of "+origin, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[LaneState])
	if err != nil {
		return nil, classify("read lanes of "+origin, err)
	}
	return out, nil
}

// LaneKey names one lane.
type LaneKey struct{ Origin, Tenant, EventType string }

// LanesPresent answers which of keys name lanes this store still holds, and which of origins
// hold any lane at all (a lane is forgotten when no subscription covers it any more).
func LanesPresent(ctx context.Context, db Querier, keys []LaneKey, origins []string) (present map[LaneKey]bool, holding map[string]bool, err error) {
	n := len(keys)
	os, tenants, types := make([]string, n), make([]string, n), make([]string, n)
	for i, k := range keys {
		os[i], tenants[i], types[i] = k.Origin, k.Tenant, k.EventType
	}
	// One row per present lane (tenant and type set), one per origin holding any (both null).
	rows, err := db.Query(ctx, `
		select k.origin, k.tenant, k.event_type
		from rows from (unnest($1::text[]), unnest($2::text[]), unnest($3::text[])) as k(origin, tenant, event_type)
		where exists (select from streamseal.lanes l
		              where l.origin = k.origin and l.tenant = k.tenant and l.event_type = k.event_type)
		union all
		select o.origin, null, null
		from unnest($4::text[]) as o(origin)
		where exists (select from streamseal.lanes l where l.origin = o.origin)`, os, tenants, types, origins)
	if err != nil {
		return nil, nil, classify("look up lanes", err)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LaneKey, error) {
		var k LaneKey
		var tenant, eventType *string
		err := row.Scan(&k.Origin, &tenant, &eventType)
		if tenant != nil && eventType != nil {
			k.Tenant, k.EventType = *tenant, *eventType
		}
		return k, err
	})
	if err != nil {
		return nil, nil, classify("look up lanes", err)
	}
	present, holding = map[LaneKey]bool{}, map[string]bool{}
	for _, k := range found {
		if k.EventType == "" {
			holding[k.Origin] = true
		} else {
			present[k] = true
		}
	}
	return present, holding, nil
}

// LanesWithConfirmedGapsCount counts the lanes holding a confirmed, not yet repaired gap, and
// among them those holding one since before (readiness's grace: a gap younger than it may still
// heal within a cycle).
func LanesWithConfirmedGapsCount(ctx context.Context, db Querier, before time.Time) (all, aged int64, err error) {
	if err := db.QueryRow(ctx, `
		select count(*), count(*) filter (where confirmed_since <= $1)
		from streamseal.lanes where confirmed <> '{}'`, before).Scan(&all, &aged); err != nil {
		return 0, 0, classify("count lanes with confirmed gaps", err)
	}
	return all, aged, nil
}
