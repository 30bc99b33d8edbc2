// checkpoints.go: both sides of the checkpoint exchange. The origin takes its next window
// (streamseal.next_checkpoint); a consumer verifies its lanes against one (verify_checkpoint).

package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// CheckpointRow is one (tenant, event_type) row of a checkpoint window. EventType is nil on the
// single row of an origin that never emitted anything (the window only).
type CheckpointRow struct {
	From, To          int64
	Tenant, EventType *string
	N                 int64
	First, Last       *int64     // the window's lowest and highest type_seq of the lane
	AtMostOnce        [][2]int64 // type_seq ranges of at-most-once occurrences in the window
}

// CheckpointNext advances the published window (streamseal.next_checkpoint). Call it in a
// transaction that commits only once the window is published: the advance is the commit. A
// replica that lost the window to another gets no rows.
func CheckpointNext(ctx context.Context, db Querier) ([]CheckpointRow, error) {
	rows, err := db.Query(ctx, `
		select window_from, window_to, tenant, event_type, n, first_type_seq, last_type_seq, `+rangesSQL("at_most_once")+`
		from streamseal.next_checkpoint()`)
	if err != nil {
		return nil, classify("next checkpoint", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CheckpointRow, error) {
		var r CheckpointRow
		var atMostOnce [][]int64
		err := row.Scan(&r.From, &r.To, &r.Tenant, &r.EventType, &r.N, &r.First, &r.Last, &atMostOnce)
		r.AtMostOnce = rangePairs(atMostOnce)
		return r, err
	})
	if err != nil {
		return nil, classify("next checkpoint", err)
	}
	return out, nil
}

// CheckpointTenant is one tenant's count in a received checkpoint.
type CheckpointTenant struct {
	Tenant      string
	N           int64
	First, Last *int64
	AtMostOnce  [][2]int64
}

// CheckpointWindow is one received checkpoint message: an origin's window for one event type.
type CheckpointWindow struct {
	Origin    string
	From, To  int64
	EventType string
	Tenants   []CheckpointTenant
	// Ordered says the inbox proved every message before this checkpoint on its subject was
	// committed (or deliberately dropped): holes in its own window are confirmed at first sight.
	// false is always safe (two-cycle confirmation).
	Ordered bool
}

// LaneVerdict is what verifying a checkpoint concluded about one lane.
type LaneVerdict struct {
	Tenant, EventType string
	Floor             int64
	NewlyConfirmed    [][2]int64 // holes confirmed by this checkpoint (two-cycle, or at first sight when ordered)
	Confirmed         [][2]int64 // every confirmed hole
	ToRequest         [][2]int64 // confirmed holes not requested, or whose request is past its deadline
	RequestAttempts   int        // asks of the lane's outstanding ranges so far
}

// CheckpointVerify compares this store with a checkpoint (streamseal.verify_checkpoint).
func CheckpointVerify(ctx context.Context, db Querier, w CheckpointWindow) ([]LaneVerdict, error) {
	n := len(w.Tenants)
	tenants, counts := make([]string, n), make([]int64, n)
	firsts, lasts := make([]*int64, n), make([]*int64, n)
	atMostOnce := make([]string, n)
	for i, t := range w.Tenants {
		tenants[i], counts[i], firsts[i], lasts[i] = t.Tenant, t.N, t.First, t.Last
		atMostOnce[i] = multirange(t.AtMostOnce)
	}
	rows, err := db.Query(ctx, `
		select tenant, event_type, floor, `+rangesSQL("newly_confirmed")+`, `+rangesSQL("confirmed")+`, `+rangesSQL("to_request")+`,
		       request_attempts
		from streamseal.verify_checkpoint($1, $2, $3, $4, $5, $6, $7, $8, $9::int8multirange[], ordered => $10)`,
		w.Origin, w.From, w.To, w.EventType, tenants, counts, firsts, lasts, atMostOnce, w.Ordered)
	if err != nil {
		return nil, classify("verify checkpoint of "+w.Origin+"/"+w.EventType, err)
	}
	out, err := pgx.CollectRows(rows, laneVerdictRow)
	if err != nil {
		return nil, classify("verify checkpoint of "+w.Origin+"/"+w.EventType, err)
	}
	return out, nil
}

// CheckpointVerifyBeat re-evaluates this store's lanes of origin that hold holes on one of its
// beats, window [from, to) (streamseal.verify_beat): quiet pairs are not checkpointed, so the beat
// confirms their suspected holes and offers their confirmed ones for request again.
func CheckpointVerifyBeat(ctx context.Context, db Querier, origin string, from, to int64) ([]LaneVerdict, error) {
	rows, err := db.Query(ctx, `
		select tenant, event_type, floor, `+rangesSQL("newly_confirmed")+`, `+rangesSQL("confirmed")+`, `+rangesSQL("to_request")+`,
		       request_attempts
		from streamseal.verify_beat($1, $2, $3)`, origin, from, to)
	if err != nil {
		return nil, classify("verify beat of "+origin, err)
	}
	out, err := pgx.CollectRows(rows, laneVerdictRow)
	if err != nil {
		return nil, classify("verify beat of "+origin, err)
	}
	return out, nil
}

func laneVerdictRow(row pgx.CollectableRow) (LaneVerdict, error) {
	var v LaneVerdict
	var newly, confirmed, toRequest [][]int64
	err := row.Scan(&v.Tenant, &v.EventType, &v.Floor, &newly, &confirmed, &toRequest, &v.RequestAttempts)
	v.NewlyConfirmed, v.Confirmed, v.ToRequest = rangePairs(newly), rangePairs(confirmed), rangePairs(toRequest)
	return v, err
}
