package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// TypeDigest is one (tenant, event_type) fold of a window.
type TypeDigest struct {
	Tenant, EventType string
	X0, X1, N         int64
}

// TypeAnswer is a windowed type-level answer: the folds of [From, Watermark).
type TypeAnswer struct {
	Digests   []TypeDigest
	Watermark int64 // exclusive end actually covered; the next window's from
}

// TypeDigests answers lane's window [from, to) (streamseal.type_digests). settle applies to
// received lanes: rows stored within it lie beyond the watermark.
func TypeDigests(ctx context.Context, db Querier, lane string, from, to int64, settle time.Duration) (TypeAnswer, error) {
	var answer TypeAnswer
	rows, err := db.Query(ctx, `
		select tenant, event_type, x0, x1, n, watermark
		from streamseal.type_digests($1, $2, $3, make_interval(secs => $4))`, lane, from, to, settle.Seconds())
	if err != nil {
		return TypeAnswer{}, classify("type digests", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, eventType *string
		var d TypeDigest
		if err := rows.Scan(&tenant, &eventType, &d.X0, &d.X1, &d.N, &answer.Watermark); err != nil {
			return TypeAnswer{}, classify("type digests", err)
		}
		if eventType == nil {
			continue // the quiet-window row: watermark only
		}
		d.Tenant, d.EventType = *tenant, *eventType
		answer.Digests = append(answer.Digests, d)
	}
	if err := rows.Err(); err != nil {
		return TypeAnswer{}, classify("type digests", err)
	}
	return answer, nil
}

// ClosedEpoch is one epoch close_epochs sealed.
type ClosedEpoch struct {
	Origin  string
	Epoch   int64
	Buckets int
	Forced  bool
}

// EpochOptions tunes close_epochs; zero values take the SQL defaults.
type EpochOptions struct {
	MaxEpochs  int
	Width      int64
	Settle     time.Duration
	StallLimit time.Duration
}

// CloseEpochs seals settled epochs (streamseal.close_epochs).
func CloseEpochs(ctx context.Context, db Querier, o EpochOptions) ([]ClosedEpoch, error) {
	if o.MaxEpochs == 0 {
		o.MaxEpochs = 100
	}
	if o.Width == 0 {
		o.Width = 100000
	}
	if o.Settle == 0 {
		o.Settle = time.Hour
	}
	if o.StallLimit == 0 {
		o.StallLimit = time.Hour
	}
	rows, err := db.Query(ctx, `
		select origin, epoch, buckets, forced
		from streamseal.close_epochs($1, $2, make_interval(secs => $3), make_interval(secs => $4))`,
		o.MaxEpochs, o.Width, o.Settle.Seconds(), o.StallLimit.Seconds())
	if err != nil {
		return nil, classify("close epochs", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ClosedEpoch])
	if err != nil {
		return nil, classify("close epochs", err)
	}
	return out, nil
}

// EpochCheck is what verify_digest_epochs found in one lane.
type EpochCheck struct {
	Origin       string
	Checked      int
	Drifted      int
	PrefixHealed bool
}

// VerifyDigestEpochs re-checks up to max closed epochs, resuming where the last call stopped.
func VerifyDigestEpochs(ctx context.Context, db Querier, max int) ([]EpochCheck, error) {
	rows, err := db.Query(ctx, `select origin, checked, drifted, prefix_healed from streamseal.verify_digest_epochs($1)`, max)
	if err != nil {
		return nil, classify("verify digest epochs", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[EpochCheck])
	if err != nil {
		return nil, classify("verify digest epochs", err)
	}
	return out, nil
}
