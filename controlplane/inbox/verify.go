package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// verifyLoop hands the recorded checkpoints (streamseal.checkpoint_inbox) to OnCheckpoint until
// ctx ends: woken when a consumer loop records a run, and every verifyPoll for what it was not
// woken for. It runs beside the consumer loops, so verifying a round never holds a live event.
func (in *Inbox) verifyLoop(ctx context.Context) {
	poll := time.NewTicker(verifyPoll)
	defer poll.Stop()
	for ctx.Err() == nil {
		n, err := in.verifyRecorded(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			in.Logger.Warn("inbox: verifying recorded checkpoints failed; retrying", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		if n > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-in.wake:
		case <-poll.C:
		}
	}
}

// recorded is one recorded checkpoint, decoded.
type recorded struct {
	row     store.QueuedCheckpoint
	cp      wire.Checkpoint
	ordered bool
}

// verifyRecorded takes the oldest recorded checkpoints that are due (up to VerifyBatch, in one
// transaction), hands the leading ones that share an order proof to OnCheckpoint in one call, and
// removes them; the rest of what it took is left for the next call. It returns how many it took.
// A checkpoint handed over again after a failed verification is unordered.
func (in *Inbox) verifyRecorded(ctx context.Context) (int, error) {
	tx, err := in.Pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := store.CheckpointInboxTake(ctx, tx, in.VerifyBatch)
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, tx.Commit(ctx)
	}
	var done []int64
	var group []recorded
	for _, row := range rows {
		cp, err := wire.DecodeCheckpoint(row.Payload)
		if err != nil {
			// Admitted at the door, so this is a stored row gone bad: recorded, never a wedge.
			if err := in.rejectRecorded(ctx, tx, row, err.Error()); err != nil {
				return 0, err
			}
			done = append(done, row.ID)
			continue
		}
		r := recorded{row: row, cp: cp, ordered: row.Ordered && row.Attempts == 0}
		if len(group) > 0 && r.ordered != group[0].ordered {
			break
		}
		group = append(group, r)
	}
	if len(group) > 0 {
		verified, err := in.verifyGroup(ctx, tx, group)
		if err != nil {
			return 0, err
		}
		done = append(done, verified...)
	}
	if err := store.CheckpointInboxDone(ctx, tx, done); err != nil {
		return 0, err
	}
	return len(rows), tx.Commit(ctx)
}

// verifyGroup hands group to OnCheckpoint in one call and returns the ids to remove. On an error
// each checkpoint is handed over again alone: verified ones are removed, refused ones recorded in
// inbox_rejects and removed, and the others rescheduled (or given up after MaxDeliver attempts).
// An error returned means the transaction must roll back (stopping, or the database failed).
func (in *Inbox) verifyGroup(ctx context.Context, tx pgx.Tx, group []recorded) ([]int64, error) {
	call := func(rs []recorded) error {
		cps := make([]wire.Checkpoint, len(rs))
		for i, r := range rs {
			cps[i] = r.cp
		}
		if rs[0].ordered {
			in.ordered.Add(int64(len(rs)))
		} else {
			in.unordered.Add(int64(len(rs)))
		}
		return in.OnCheckpoint(ctx, cps, rs[0].ordered)
	}
	ids := make([]int64, 0, len(group))
	err := call(group)
	if err == nil {
		for _, r := range group {
			ids = append(ids, r.row.ID)
		}
		return ids, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if len(group) > 1 {
		in.Logger.Warn("inbox: checkpoint run not verified, each checkpoint again alone", "checkpoints", len(group), "err", err)
	}
	for _, r := range group {
		if len(group) > 1 {
			if err = call([]recorded{r}); err == nil {
				ids = append(ids, r.row.ID)
				continue
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
		attempts := r.row.Attempts + 1
		switch {
		case wire.Permanent(err):
			// A checkpoint SQL refuses will be refused again: recorded, and those behind it go
			// on (invariant 13).
			if err := in.rejectRecorded(ctx, tx, r.row, "checkpoint refused: "+err.Error()); err != nil {
				return nil, err
			}
			in.Metrics.DeadMessage("inbox", "permanent")
			ids = append(ids, r.row.ID)
		case attempts >= in.MaxDeliver:
			if err := in.rejectRecorded(ctx, tx, r.row, fmt.Sprintf("given up after %d verifications: %v", attempts, err)); err != nil {
				return nil, err
			}
			in.Metrics.DeadMessage("inbox", "max_deliver")
			ids = append(ids, r.row.ID)
		default:
			in.Logger.Warn("inbox: checkpoint not verified, will be verified again", "subject", r.row.Subject,
				"origin", r.cp.Origin, "type", r.cp.Type, "attempt", attempts, "err", err)
			if err := store.CheckpointInboxRetry(ctx, tx, r.row.ID, wire.RetryDelay(time.Second, uint64(attempts))); err != nil {
				return nil, err
			}
		}
	}
	return ids, nil
}

// rejectRecorded records a recorded checkpoint the verifier refused in inbox_rejects, in the
// transaction that removes it.
func (in *Inbox) rejectRecorded(ctx context.Context, tx pgx.Tx, row store.QueuedCheckpoint, reason string) error {
	r := store.InboxReject{Subject: row.Subject, Reason: reason, Headers: map[string]string{wire.HdrKind: wire.KindCheckpoint}, Payload: row.Payload}
	if err := store.InboxRejectRecord(ctx, tx, r); err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return fmt.Errorf("record a refused checkpoint: %w", err)
	}
	in.rejected.Add(1)
	in.Logger.Error("inbox: checkpoint rejected and recorded", "subject", row.Subject, "reason", reason)
	return nil
}
