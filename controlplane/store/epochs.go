package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

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

// EpochsClose seals settled epochs (streamseal.close_epochs).
func EpochsClose(ctx context.Context, db Querier, o EpochOptions) ([]ClosedEpoch, error) {
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

// EpochsVerify re-checks up to max closed epochs, resuming where the last call stopped.
func EpochsVerify(ctx context.Context, db Querier, max int) ([]EpochCheck, error) {
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
