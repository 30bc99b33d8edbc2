// lane_rounds.go: the consumer's lane-set mark (issue 17). The verifier records each listed beat
// of an origin (streamseal.record_lane_round); the feed certifies the origin no further than the
// mark the recorded rounds account for.

package store

import (
	"context"
	"time"
)

// LaneRound is one part of a listed beat: the round the origin took At over [From, To), part
// Part of Parts, listing in parallel the pairs it checkpointed and the last type_seq each reached.
type LaneRound struct {
	Origin      string
	At          time.Time
	From, To    int64
	Part, Parts int
	Tenants     []string
	Types       []string
	Lasts       []int64
}

// LaneRoundRecord records r and returns the origin's lane-set mark after it
// (known_origins.lanes_announced_through). An origin never observed, or a part that contradicts
// the round recorded, is ErrInvalidInput.
func LaneRoundRecord(ctx context.Context, db Querier, r LaneRound) (int64, error) {
	tenants, types, lasts := r.Tenants, r.Types, r.Lasts
	if tenants == nil {
		tenants, types, lasts = []string{}, []string{}, []int64{}
	}
	var mark int64
	err := db.QueryRow(ctx, `select streamseal.record_lane_round($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		r.Origin, r.At, r.From, r.To, r.Part, r.Parts, tenants, types, lasts).Scan(&mark)
	if err != nil {
		return 0, classify("record lane round of "+r.Origin, err)
	}
	return mark, nil
}

// LaneRoundsHold is how long a listed pair whose lane was born above its round's window holds
// the mark (streamseal._lane_rounds_hold): the longest the broker can still deliver the pair's
// earlier checkpoint.
func LaneRoundsHold(ctx context.Context, db Querier) (time.Duration, error) {
	var micros int64
	err := db.QueryRow(ctx, `select (extract(epoch from streamseal._lane_rounds_hold()) * 1000000)::bigint`).Scan(&micros)
	if err != nil {
		return 0, classify("read the lane-set mark's hold", err)
	}
	return time.Duration(micros) * time.Microsecond, nil
}
