// origins.go: the other services this one has heard from (streamseal.known_origins), learned
// from their checkpoints: control address, generation, last sighting, liveness.

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// KnownOrigin is one origin this service has heard from.
type KnownOrigin struct {
	Name       string
	Control    string // the control subject its checkpoints announced
	Generation int64
}

// OriginsKnown lists the known origins by name.
func OriginsKnown(ctx context.Context, db Querier) ([]KnownOrigin, error) {
	rows, err := db.Query(ctx, "select origin, control_subject, coalesce(generation, 0) from streamseal.known_origins order by origin")
	if err != nil {
		return nil, classify("read known origins", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[KnownOrigin])
	if err != nil {
		return nil, classify("read known origins", err)
	}
	return out, nil
}

// OriginSighting is what one checkpoint tells about its origin.
type OriginSighting struct {
	Origin     string
	Control    string
	IntervalS  int
	Generation int64
	To         int64 // the window's end
}

// OriginObserve records a sighting (streamseal.observe_origin); restored is true when the origin
// had been silent and its liveness alarm clears.
func OriginObserve(ctx context.Context, db Querier, s OriginSighting) (restored bool, err error) {
	if err := db.QueryRow(ctx, "select streamseal.observe_origin($1, $2, $3, $4, $5)",
		s.Origin, s.Control, s.IntervalS, s.Generation, s.To).Scan(&restored); err != nil {
		return false, classify("observe origin "+s.Origin, err)
	}
	return restored, nil
}

// SilentOrigin is an origin whose checkpoints stopped.
type SilentOrigin struct {
	Origin    string
	SilentFor time.Duration
	Newly     bool // the alarm is raised by this call
}

// OriginsSilent lists the origins silent for intervals of their checkpoint interval
// (streamseal.silent_origins), marking the newly silent.
func OriginsSilent(ctx context.Context, db Querier, intervals int) ([]SilentOrigin, error) {
	rows, err := db.Query(ctx, "select origin, silent_for, newly_silent from streamseal.silent_origins($1)", intervals)
	if err != nil {
		return nil, classify("check liveness", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SilentOrigin])
	if err != nil {
		return nil, classify("check liveness", err)
	}
	return out, nil
}

// OriginsLiveness says, per known origin, whether it is marked silent (the liveness alarm
// silent_origins raised and no checkpoint has cleared since).
func OriginsLiveness(ctx context.Context, db Querier) (map[string]bool, error) {
	rows, err := db.Query(ctx, "select origin, silent_since is not null from streamseal.known_origins")
	if err != nil {
		return nil, classify("read origin liveness", err)
	}
	out := map[string]bool{}
	var origin string
	var silent bool
	if _, err := pgx.ForEachRow(rows, []any{&origin, &silent}, func() error {
		out[origin] = silent
		return nil
	}); err != nil {
		return nil, classify("read origin liveness", err)
	}
	return out, nil
}
