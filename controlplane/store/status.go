// status.go: what `streamseal status` reads of each known origin: liveness, generation, seal.

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// OriginState is one known origin's liveness, generation and seal.
type OriginState struct {
	Origin         string
	LastCheckpoint time.Time
	Silent         bool
	Generation     int64
	SealedThrough  int64
}

// OriginStates lists every known origin's state by name.
func OriginStates(ctx context.Context, db Querier) ([]OriginState, error) {
	rows, err := db.Query(ctx, `
		select k.origin, k.last_checkpoint_at, k.silent_since is not null, coalesce(k.generation, 0),
		       coalesce(s.sealed_through, 0)
		from streamseal.known_origins k
		left join streamseal.seals s on s.origin = k.origin
		order by k.origin`)
	if err != nil {
		return nil, classify("read known origins", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[OriginState])
	if err != nil {
		return nil, classify("read known origins", err)
	}
	return out, nil
}
