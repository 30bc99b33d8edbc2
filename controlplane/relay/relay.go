// Package relay publishes this service's stamped events to JetStream in origin_seq order, one
// active relay per service across replicas (a session advisory lock elects it). It owns the
// relay_state cursor and nothing else: what is published, and in which order, SQL decides.
//
// After a crash the relay resumes above the cursor, which only ever records what JetStream
// acknowledged: it never skips. Events published but not yet recorded are published again;
// JetStream drops them by message id within its duplicate window and ingest skips them after.
package relay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Relay is one replica's relay loop. Zero tuning fields take defaults.
type Relay struct {
	Pool   *pgxpool.Pool
	JS     jetstream.JetStream
	Logger *slog.Logger
	// Batch caps the events read and published per round. Default 500.
	Batch int
	// PollInterval is the failsafe wake-up without a stamp notification. Default 1s.
	PollInterval time.Duration
	// OnPublished, when set, observes each acknowledged batch (its last origin_seq).
	OnPublished func(through int64)
	Metrics     *metrics.Instruments // nil: not measured
}

// Defaults of a Relay's tunables, used where a field is left zero.
const (
	BatchDefault        = 500         // events read and published per batch
	PollIntervalDefault = time.Second // failsafe wake-up when no notification arrives
)

func (r *Relay) defaults() {
	if r.Batch <= 0 {
		r.Batch = BatchDefault
	}
	if r.PollInterval <= 0 {
		r.PollInterval = PollIntervalDefault
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
}

// Run relays until ctx ends. A replica that does not hold the leader lock waits for it.
func (r *Relay) Run(ctx context.Context) error {
	r.defaults()
	for ctx.Err() == nil {
		err := r.lead(ctx)
		if ctx.Err() != nil {
			return nil
		}
		r.Logger.Warn("relay: restarting", "err", err)
		sleep(ctx, r.PollInterval)
	}
	return nil
}

// lead takes the leader lock on a dedicated connection (held for the connection's life, so a
// crashed leader's lock frees itself) and relays while it holds it.
func (r *Relay) lead(ctx context.Context) error {
	pooled, err := r.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire relay connection: %w", err)
	}
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	for {
		leader, err := store.RelayLeaderTryLock(ctx, conn)
		if err != nil {
			return err
		}
		if leader {
			break
		}
		sleep(ctx, r.PollInterval)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	r.Logger.Info("relay: leading")
	if err := store.Listen(ctx, conn, store.ChannelStamped); err != nil {
		return err
	}
	for {
		for {
			n, err := r.publishBatch(ctx)
			if err != nil {
				return err
			}
			if n < r.Batch {
				break
			}
		}
		if _, err := store.WaitNotification(ctx, conn, time.Now().Add(r.PollInterval)); err != nil {
			return err
		}
	}
}

// publishBatch publishes the next events above the cursor and advances the cursor to the last
// one JetStream acknowledged in order. It returns how many it read.
func (r *Relay) publishBatch(ctx context.Context) (int, error) {
	events, err := store.RelayPending(ctx, r.Pool, r.Batch)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	futures := make([]jetstream.PubAckFuture, len(events))
	for i, e := range events {
		if futures[i], err = r.JS.PublishMsgAsync(wire.EventMessage(e)); err != nil {
			return 0, fmt.Errorf("publish event %s (origin_seq %d): %w", e.EventID, e.OriginSeq, err)
		}
	}
	acked := int64(0)
	var failed error
	for i, f := range futures {
		select {
		case <-f.Ok():
			if failed == nil {
				acked = events[i].OriginSeq
			}
		case err := <-f.Err():
			if failed == nil {
				failed = fmt.Errorf("publish event origin_seq %d: %w", events[i].OriginSeq, err)
			}
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if acked > 0 {
		// The cursor's update also reads the acknowledged event's age: the relay lag, in the
		// database's clock, at work already done.
		age, held, err := store.RelayCursorAdvance(ctx, r.Pool, acked)
		if err != nil {
			return 0, err
		}
		if held {
			r.Metrics.Relayed(age)
		}
		if r.OnPublished != nil {
			r.OnPublished(acked)
		}
	}
	if failed != nil {
		return 0, failed
	}
	return len(events), nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
