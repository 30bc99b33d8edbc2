// Package stamper runs the commit-order stamper loop: it calls streamseal.stamp() until the
// backlog is empty, then sleeps until an own insert's NOTIFY (channel streamseal_unstamped) or a
// failsafe poll wakes it. Inserts notify only while a loop sleeps holding the sleep lock
// (sql/functions/stamper_sleep.sql), so a busy loop is not signalled per commit. The numbering
// rule itself lives in SQL (sql/functions/stamp.sql); this package owns only the waking and the
// retrying, and the upkeep of the queue stamp() claims from (keepQueueLean). Several replicas
// may run it at once: the SQL serializes them on an advisory lock.
package stamper

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
)

// Channel is the NOTIFY channel an insert of an own (unstamped) event signals while a loop sleeps.
const Channel = store.ChannelUnstamped

// Loop is a stamper loop. Zero values of the tuning fields take the defaults.
type Loop struct {
	Pool *pgxpool.Pool
	// BatchSize caps the events one stamp() call numbers. Default 10000.
	BatchSize int
	// PollInterval is the failsafe wake-up for a lost notification (a dropped LISTEN
	// connection). Default 1s.
	PollInterval time.Duration
	// RetryDelay is the pause after a failed stamp or a lost LISTEN connection. Default 1s.
	RetryDelay time.Duration
	// Coalesce is how long a wake-up waits for more commits before stamping, so a stream of
	// small transactions is numbered in a few large batches instead of one call per commit
	// (each stamp() call has a fixed cost: lock, state, trigger). Default 5ms; negative = none.
	Coalesce time.Duration
	// BusyPoll is how soon a loop looks again when appends in flight kept it from taking the
	// sleep lock (they will not notify: sql/functions/stamper_sleep.sql). Default 5ms.
	BusyPoll time.Duration
	// Yield, when set and true, makes the loop stand aside: it still takes its wake-ups (so its
	// notifications never pile up) but leaves the stamping to another loop of this process, the
	// leading relay, which stamps as it publishes (relay.Relay.Stamping). Asked at every wake-up.
	Yield  func() bool
	Logger *slog.Logger
	// OnStamp, when set, observes every call that numbered events (metrics, demo output).
	OnStamp func(store.StampResult)
	// OnSleep, when set, observes every wait, with what the sleep lock answered before it
	// (store.SleepArmed too when the loop kept it from its last wait). Tests' witness.
	OnSleep func(store.StamperSleep)
	Metrics *metrics.Instruments // nil: not measured
	// UpkeepInterval is how often the loop looks at its queue's dead rows, and UpkeepDeadRows
	// how many make it vacuum the queue, when its role may (store.QueueUpkeepAllowed): each
	// claim walks every dead row's index entry (store/unstamped.go). Defaults 1s and 10 000.
	UpkeepInterval time.Duration
	UpkeepDeadRows int64
}

// Defaults of a Loop's tunables, used where a field is left zero.
const (
	BatchSizeDefault      = 10000                // events one stamp() call numbers at most
	PollIntervalDefault   = time.Second          // failsafe wake-up for a lost notification
	RetryDelayDefault     = time.Second          // wait after a failed stamp() call
	CoalesceDefault       = 5 * time.Millisecond // gathering window for a burst of small commits
	BusyPollDefault       = 5 * time.Millisecond // next look while appends in flight hold the sleep lock
	UpkeepIntervalDefault = time.Second          // how often the queue's dead rows are looked at
	UpkeepDeadRowsDefault = 10000                // dead rows that make the loop vacuum its queue
)

func (l *Loop) defaults() {
	if l.BatchSize <= 0 {
		l.BatchSize = BatchSizeDefault
	}
	if l.PollInterval <= 0 {
		l.PollInterval = PollIntervalDefault
	}
	if l.RetryDelay <= 0 {
		l.RetryDelay = RetryDelayDefault
	}
	if l.BusyPoll <= 0 {
		l.BusyPoll = BusyPollDefault
	}
	if l.Coalesce == 0 {
		l.Coalesce = CoalesceDefault
	}
	if l.Logger == nil {
		l.Logger = slog.Default()
	}
	if l.UpkeepInterval <= 0 {
		l.UpkeepInterval = UpkeepIntervalDefault
	}
	if l.UpkeepDeadRows <= 0 {
		l.UpkeepDeadRows = UpkeepDeadRowsDefault
	}
}

// Run stamps until ctx ends, returning nil on cancellation. Database errors are logged and
// retried: a stamper that gives up would stop the service's events from ever being published.
func (l *Loop) Run(ctx context.Context) error {
	l.defaults()
	upkeep := make(chan struct{})
	go func() { defer close(upkeep); l.keepQueueLean(ctx) }()
	defer func() { <-upkeep }()
	for ctx.Err() == nil {
		err := l.listenAndStamp(ctx)
		if ctx.Err() != nil {
			return nil
		}
		l.Logger.Warn("stamper: restarting after error", "err", err, "retry_in", l.RetryDelay)
		select {
		case <-ctx.Done():
		case <-time.After(l.RetryDelay):
		}
	}
	return nil
}

// listenAndStamp holds one LISTEN connection and stamps on every wake-up until an error.
//
// Appends notify only while a sleeper holds the sleep lock (sql/functions/stamper_sleep.sql), so
// before a long wait the loop takes it (and then checks the backlog once more), and when it
// wakes to stamp it gives it back: while it works, appends send nothing (issue 16: their NOTIFY
// cost a fifth of the write path). Appends in flight hold the lock shared and will not notify, so
// a loop that cannot take it for them waits BusyPoll instead and looks again. A yielding loop
// takes it without checking and keeps it while it yields: it takes the wake-ups the relay needs.
func (l *Loop) listenAndStamp(ctx context.Context) error {
	armed := false
	// Registered before the connection's Close, so it runs after it: the lock has gone with the
	// connection when the other listeners look.
	defer func() {
		if armed {
			l.handOver(context.WithoutCancel(ctx))
		}
	}()
	pooled, err := l.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire listen connection: %w", err)
	}
	// The connection will carry a LISTEN: take it out of the pool for good.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if err := store.Listen(ctx, conn, Channel); err != nil {
		return err
	}
	for {
		// Listening before draining means an insert committed during the drain still wakes us.
		stamping := l.Yield == nil || !l.Yield()
		if stamping {
			if armed {
				if err := store.StamperSleepRelease(ctx, conn, false); err != nil {
					return err
				}
				armed = false
			}
			if err := l.Drain(ctx); err != nil {
				return err
			}
		}
		sleep := store.SleepArmed
		if !armed {
			if sleep, err = store.StamperSleepArm(ctx, conn, stamping); err != nil {
				return err
			}
			if sleep == store.SleepWork {
				continue
			}
			armed = sleep == store.SleepArmed
		}
		wait := l.PollInterval
		if sleep == store.SleepWriters && stamping {
			wait = l.BusyPoll
		}
		if l.OnSleep != nil {
			l.OnSleep(sleep)
		}
		woken, err := store.WaitNotification(ctx, conn, time.Now().Add(wait))
		if err != nil {
			return err
		}
		if woken && l.Coalesce > 0 && (l.Yield == nil || !l.Yield()) {
			// Let more commits arrive and swallow their notifications, then drain once for all.
			// The lock goes first: the drain after the window sees what commits in it, so those
			// commits need not notify.
			if armed {
				if err := store.StamperSleepRelease(ctx, conn, false); err != nil {
					return err
				}
				armed = false
			}
			if _, err := store.AbsorbNotifications(ctx, conn, time.Now().Add(l.Coalesce)); err != nil {
				return err
			}
		}
	}
}

// keepQueueLean vacuums the stamper's queue whenever its dead rows reach UpkeepDeadRows, looking
// every UpkeepInterval until ctx ends, so a claim's walk over them stays short whoever stamps
// (this loop, the relay, a caller of stamp()). A role that may not vacuum leaves it to
// autovacuum, said once. Failures are logged and the next look tries again: the queue only
// grows slower to read meanwhile.
func (l *Loop) keepQueueLean(ctx context.Context) {
	tick := time.NewTicker(l.UpkeepInterval)
	defer tick.Stop()
	allowed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !allowed {
			may, err := store.QueueUpkeepAllowed(ctx, l.Pool)
			if err != nil {
				if ctx.Err() == nil {
					l.Logger.Warn("stamper: queue upkeep", "err", err)
				}
				continue
			}
			if !may {
				l.Logger.Info("stamper: this role may not vacuum streamseal.unstamped: autovacuum alone clears the rows stamps delete")
				return
			}
			allowed = true
		}
		if err := l.vacuumQueueIfDead(ctx); err != nil && ctx.Err() == nil {
			l.Logger.Warn("stamper: queue upkeep", "err", err)
		}
	}
}

// vacuumQueueIfDead vacuums the queue when the statistics count UpkeepDeadRows dead rows in it.
func (l *Loop) vacuumQueueIfDead(ctx context.Context) error {
	dead, err := store.QueueDeadRows(ctx, l.Pool)
	if err != nil || dead < l.UpkeepDeadRows {
		return err
	}
	return store.QueueVacuum(ctx, l.Pool)
}

// handOver wakes the other listeners once this loop's sleep lock is gone with its connection: a
// relay that found the lock taken sleeps until an append notifies, and appends stop notifying.
// Best effort: at worst that relay waits for its failsafe poll.
func (l *Loop) handOver(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, l.RetryDelay)
	defer cancel()
	if err := store.UnstampedNotify(ctx, l.Pool); err != nil {
		l.Logger.Warn("stamper: could not wake the other listeners on leaving", "err", err)
	}
}

// Drain stamps until a call numbers less than a full batch: the backlog committed so far is done.
func (l *Loop) Drain(ctx context.Context) error {
	l.defaults()
	for {
		r, err := store.EventsStamp(ctx, l.Pool, l.BatchSize)
		if err != nil {
			return err
		}
		if r.Stamped > 0 {
			l.Metrics.Stamped(r.OldestWait)
			if l.OnStamp != nil {
				l.OnStamp(r)
			}
		}
		if r.Stamped < l.BatchSize {
			return nil
		}
	}
}
