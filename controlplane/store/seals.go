// seals.go: a consumer's per-origin seals (sql/functions/seals.sql, close_stream.sql): how far
// each origin's lane is audited complete, the generation guard, and the origin's closes applied
// to the copies.

package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Seal guard verdicts (streamseal.seal_generation_guard).
const (
	SealProceed = "proceed" // the origin's generation is unchanged
	SealSkip    = "skip"    // it changed: the seal was reset once; skip this round
)

// SealGenerationGuard checks origin's generation against the one recorded with its seal.
func SealGenerationGuard(ctx context.Context, db Querier, origin string, generation int64) (string, error) {
	var verdict string
	if err := db.QueryRow(ctx, "select streamseal.seal_generation_guard($1, $2)", origin, generation).Scan(&verdict); err != nil {
		return "", classify("seal generation guard of "+origin, err)
	}
	return verdict, nil
}

// SealedThrough returns the end of origin's sealed prefix [0, sealed_through), 0 without a seal.
func SealedThrough(ctx context.Context, db Querier, origin string) (int64, error) {
	var through int64
	if err := db.QueryRow(ctx, "select coalesce((select sealed_through from streamseal.seals where origin = $1), 0)", origin).Scan(&through); err != nil {
		return 0, classify("read seal of "+origin, err)
	}
	return through, nil
}

// SealAdvance moves origin's seal to through, never back (streamseal.advance_seal), and returns
// the seal after the call.
func SealAdvance(ctx context.Context, db Querier, origin string, through int64) (int64, error) {
	var sealed int64
	if err := db.QueryRow(ctx, "select streamseal.advance_seal($1, $2)", origin, through).Scan(&sealed); err != nil {
		return 0, classify("advance seal of "+origin, err)
	}
	return sealed, nil
}

// Seals returns every origin's seal.
func Seals(ctx context.Context, db Querier) (map[string]int64, error) {
	rows, err := db.Query(ctx, "select origin, sealed_through from streamseal.seals")
	if err != nil {
		return nil, classify("read seals", err)
	}
	out := map[string]int64{}
	var origin string
	var sealed int64
	if _, err := pgx.ForEachRow(rows, []any{&origin, &sealed}, func() error {
		out[origin] = sealed
		return nil
	}); err != nil {
		return nil, classify("read seals", err)
	}
	return out, nil
}

// StreamClosesApply applies origin's close-the-books floors to this store's copies
// (streamseal.apply_stream_closes) and returns how many copies it removed.
func StreamClosesApply(ctx context.Context, db Querier, origin string, closes []StreamClose) (int64, error) {
	body, err := json.Marshal(closes)
	if err != nil {
		return 0, fmt.Errorf("apply stream closes: %w", err)
	}
	var removed int64
	if err := db.QueryRow(ctx, "select streamseal.apply_stream_closes($1, $2::jsonb)", origin, body).Scan(&removed); err != nil {
		return 0, classify("apply stream closes of "+origin, err)
	}
	return removed, nil
}
