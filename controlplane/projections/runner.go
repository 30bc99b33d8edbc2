// Package projections runs the SQL projections and reactors registered in the database
// (streamseal.register_projection, register_reactor; sql/functions/projections.sql) from
// `streamseal run`. The rules live in SQL: run_handler reads a handler's feed from its token,
// calls it per event (a reactor never for a state-only one), folds a projection's cursors and
// moves its token in one transaction, and parks a stream whose handler raises. This package only
// schedules it: it wakes on the feed's NOTIFY (rows landed, a stamp batch, a registration) and on
// the earliest due retry, runs every handler until it has caught up, and waits again. It does
// not poll while idle; only while committed copies wait behind an open transaction does it look
// again after HeldRecheck (as the feed package does).
//
// It owns no table and touches no handler's state; the coverage audit is the jobs package's
// (a River job on the deep audit's schedule) and `streamseal audit --local`'s.
package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
)

// Defaults.
const (
	// BatchSizeDefault is how many feed events one run_handler call reads at most.
	BatchSizeDefault = 500
	// StepsPerPassDefault is how many batches one handler runs before the others get a turn.
	StepsPerPassDefault = 20
	// HeldRecheckDefault is how soon the runner looks again while copies wait behind an open
	// transaction (no notification announces its end).
	HeldRecheckDefault = 100 * time.Millisecond
	// ErrorRetryDefault is how soon the runner tries again when it could not list the handlers.
	ErrorRetryDefault = time.Second
	// IdleFailsafeDefault bounds one idle wait for a notification; a failsafe, not a poll.
	IdleFailsafeDefault = 10 * time.Minute
)

// Runner runs every registered SQL handler of one store.
type Runner struct {
	Pool   *pgxpool.Pool
	Logger *slog.Logger
	// BatchSize (1 to 10000; 0: BatchSizeDefault), StepsPerPass (0: StepsPerPassDefault),
	// HeldRecheck (0: HeldRecheckDefault).
	BatchSize    int
	StepsPerPass int
	HeldRecheck  time.Duration

	applied atomic.Int64
	errs    atomic.Int64
}

// Applied counts the events handlers applied through this runner.
func (r *Runner) Applied() int64 { return r.applied.Load() }

// Errors counts run_handler calls that failed as a whole (not a handler's raise, which SQL
// records and retries): a lost connection, a refused token.
func (r *Runner) Errors() int64 { return r.errs.Load() }

// Run runs the handlers until ctx ends (it returns ctx's error) or the listening connection fails.
func (r *Runner) Run(ctx context.Context) error {
	if r.BatchSize == 0 {
		r.BatchSize = BatchSizeDefault
	}
	if r.BatchSize < 1 || r.BatchSize > 10000 {
		return fmt.Errorf("projections: batch size %d is invalid: expected 1 to 10000", r.BatchSize)
	}
	if r.StepsPerPass <= 0 {
		r.StepsPerPass = StepsPerPassDefault
	}
	if r.HeldRecheck <= 0 {
		r.HeldRecheck = HeldRecheckDefault
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	pooled, err := r.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("projections: acquire the listening connection: %w", err)
	}
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if err := store.Listen(ctx, conn, store.ChannelHandlers); err != nil {
		return fmt.Errorf("projections: %w", err)
	}
	// The feed's channels are listened to only while a handler is registered: a store without
	// handlers pays nothing per landed row.
	listening := false
	for {
		busy, held, handlers := r.pass(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if handlers >= 0 && (handlers > 0) != listening {
			for _, channel := range []string{store.ChannelFeed, store.ChannelStamped} {
				if listening {
					err = store.ChannelUnlisten(ctx, conn, channel)
				} else {
					err = store.Listen(ctx, conn, channel)
				}
				if err != nil {
					return fmt.Errorf("projections: %w", err)
				}
			}
			listening = !listening
			if listening {
				continue // what landed before the LISTEN: one more pass
			}
		}
		if busy {
			continue
		}
		deadline := time.Now().Add(IdleFailsafeDefault)
		if handlers < 0 {
			deadline = time.Now().Add(ErrorRetryDefault) // the handler list could not be read
		}
		if held {
			deadline = time.Now().Add(r.HeldRecheck)
		}
		if at, ok, err := store.HandlerNextRetry(ctx, r.Pool); err == nil && ok && at.Before(deadline) {
			deadline = at
		}
		if _, err := store.WaitNotification(ctx, conn, deadline); err != nil {
			return err
		}
		if _, err := store.AbsorbNotifications(ctx, conn, time.Now()); err != nil {
			return err
		}
	}
}

// Pass runs every registered handler once, up to StepsPerPass batches each. busy: a handler had
// more to read; held: one found copies held back behind an open transaction. Errors are logged
// and counted: one handler's trouble never stops the others.
func (r *Runner) Pass(ctx context.Context) (busy, held bool) {
	busy, held, _ = r.pass(ctx)
	return busy, held
}

func (r *Runner) pass(ctx context.Context) (busy, held bool, handlers int) {
	names, err := store.HandlerNames(ctx, r.Pool)
	if err != nil {
		if ctx.Err() == nil {
			r.errs.Add(1)
			r.logger().Warn("projections: list handlers", "err", err)
		}
		return false, false, -1
	}
	batch, steps := r.BatchSize, r.StepsPerPass
	if batch == 0 {
		batch = BatchSizeDefault
	}
	if steps <= 0 {
		steps = StepsPerPassDefault
	}
	for _, name := range names {
		for i := 0; ; i++ {
			s, err := store.HandlerRun(ctx, r.Pool, name, batch)
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
					r.errs.Add(1)
					r.logger().Warn("projections: run handler", "handler", name, "err", err)
					if err := store.HandlerRunFailed(ctx, r.Pool, name, err.Error()); err != nil {
						r.logger().Warn("projections: record a failed run", "handler", name, "err", err)
					}
				}
				break
			}
			r.applied.Add(int64(s.Applied))
			if s.Failed > 0 {
				r.logger().Warn("projections: a handler raised; its stream waits and is retried with backoff (streamseal status)",
					"handler", name, "failed", s.Failed)
			}
			if s.Read == 0 {
				held = held || !s.CaughtUp
				break
			}
			if i+1 >= steps {
				busy = true
				break
			}
		}
	}
	return busy, held, len(names)
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}
