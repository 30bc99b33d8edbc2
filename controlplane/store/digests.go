// digests.go: the maintained per-bucket folds and their verification (stream_digests,
// recompute_digests, verify_stream_digests).

package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Bucket names one digest bucket.
type Bucket struct {
	Origin, Tenant, EventType, StreamID string
}

// Digest is one bucket's fold.
type Digest struct {
	Bucket
	X0, X1, N int64
}

// StreamDigests returns the maintained digest table (non-empty buckets), in key order.
func StreamDigests(ctx context.Context, db Querier) ([]Digest, error) {
	return collectDigests(ctx, db, "read stream digests", `
		select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests
		where (x0, x1, n) <> (0, 0, 0) order by 1, 2, 3, 4`)
}

// DigestsRecompute folds the store from scratch (streamseal.recompute_digests), in key order.
func DigestsRecompute(ctx context.Context, db Querier) ([]Digest, error) {
	return collectDigests(ctx, db, "recompute digests", `
		select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.recompute_digests()
		order by 1, 2, 3, 4`)
}

func collectDigests(ctx context.Context, db Querier, op, sql string) ([]Digest, error) {
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return nil, classify(op, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Digest, error) {
		var d Digest
		err := row.Scan(&d.Origin, &d.Tenant, &d.EventType, &d.StreamID, &d.X0, &d.X1, &d.N)
		return d, err
	})
	if err != nil {
		return nil, classify(op, err)
	}
	return out, nil
}

// Drift is one bucket where the maintained fold disagreed with the store.
type Drift struct {
	Bucket
	Kind           string // drift, missing or phantom
	Stored, Actual Digest
}

// StreamDigestsVerify compares the digest table with a recompute and, with heal, corrects it
// (streamseal.verify_stream_digests). Every row returned is an alarm.
func StreamDigestsVerify(ctx context.Context, db Querier, heal bool) ([]Drift, error) {
	rows, err := db.Query(ctx, `
		select origin, tenant, event_type, stream_id, kind,
		       stored_x0, stored_x1, stored_n, actual_x0, actual_x1, actual_n
		from streamseal.verify_stream_digests($1)`, heal)
	if err != nil {
		return nil, classify("verify stream digests", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Drift, error) {
		var d Drift
		err := row.Scan(&d.Origin, &d.Tenant, &d.EventType, &d.StreamID, &d.Kind,
			&d.Stored.X0, &d.Stored.X1, &d.Stored.N, &d.Actual.X0, &d.Actual.X1, &d.Actual.N)
		d.Stored.Bucket, d.Actual.Bucket = d.Bucket, d.Bucket
		return d, err
	})
	if err != nil {
		return nil, classify("verify stream digests", err)
	}
	return out, nil
}
