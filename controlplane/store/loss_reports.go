// loss_reports.go: a consumer's record of the losses its lanes accepted instead of repairing
// (streamseal.loss_reports; sql/functions/loss_reports.sql): at-most-once occurrences that never
// arrived, and what an origin answered it cannot serve (reaped_ephemeral, absent, never_existed).

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// LossReport is one accepted loss of a lane as status shows it; TypeSeqs is int8multirange text.
type LossReport struct {
	ReportedAt time.Time `json:"reported_at"`
	Tenant     string    `json:"tenant"`
	EventType  string    `json:"event_type"`
	Reason     string    `json:"reason"`
	TypeSeqs   string    `json:"type_seqs"`
	N          int64     `json:"n"`
	// WindowFrom and WindowTo are the checkpoint window that announced the loss (nil: an
	// origin's answer to a request).
	WindowFrom *int64 `json:"window_from,omitempty"`
	WindowTo   *int64 `json:"window_to,omitempty"`
}

// LossReportsByOrigin lists origin's most recent loss reports, newest first, at most limit.
func LossReportsByOrigin(ctx context.Context, db Querier, origin string, limit int) ([]LossReport, error) {
	rows, err := db.Query(ctx, `
		select reported_at, tenant, event_type, reason, type_seqs::text, n, window_from, window_to
		from streamseal.loss_reports where origin = $1 order by id desc limit $2`, origin, limit)
	if err != nil {
		return nil, classify("read loss reports of "+origin, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[LossReport])
	if err != nil {
		return nil, classify("read loss reports of "+origin, err)
	}
	return out, nil
}

// LossKey names one total of LossTotals.
type LossKey struct{ Origin, Reason string }

// LossTotals sums the accepted losses (events) per origin and reason: what the loss counters
// export. Reports are never pruned, so the totals only grow.
func LossTotals(ctx context.Context, db Querier) (map[LossKey]int64, error) {
	rows, err := db.Query(ctx, "select origin, reason, sum(n)::bigint from streamseal.loss_reports group by origin, reason")
	if err != nil {
		return nil, classify("sum loss reports", err)
	}
	defer rows.Close()
	out := map[LossKey]int64{}
	for rows.Next() {
		var k LossKey
		var n int64
		if err := rows.Scan(&k.Origin, &k.Reason, &n); err != nil {
			return nil, classify("sum loss reports", err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		return nil, classify("sum loss reports", err)
	}
	return out, nil
}
