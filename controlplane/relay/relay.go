// Package relay publishes this service's stamped events to JetStream in origin_seq order, one
// active relay per service across replicas (a session advisory lock elects it). It owns the
// relay_state cursor and nothing else: what is published, and in which order, SQL decides.
//
// After a crash the relay resumes above the cursor, which only ever records what JetStream
// acknowledged: it never skips. Events published but not yet recorded are published again;
// JetStream drops them by message id within its duplicate window and ingest skips them after.
//
// An event the broker refuses for good (above its max_payload or the events stream's max message
// size) is quarantined with the broker's reason (streamseal.quarantine), alarmed and counted, and
// the cursor passes it: one event never holds the events behind it (invariant 13). Checkpoints
// then count it as emitted, so consumers name its type_seq as a hole. An operator re-queues it
// (`streamseal quarantine requeue`) once the cause is fixed; the relay publishes re-queued events
// before new ones and ends their quarantine on acknowledgement.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
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
		if err := r.publishRequeued(ctx); err != nil {
			return err
		}
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

// Permanent reports whether a publish error will repeat for the same message whatever the
// relay does: the broker refuses its size (the connection's max_payload, or the events stream's
// max message size). Anything else (timeouts, a disconnected broker) is retried.
func Permanent(err error) bool {
	if errors.Is(err, nats.ErrMaxPayload) {
		return true
	}
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
}

// quarantine sets e aside with the broker's reason, loudly, so the cursor may pass it.
func (r *Relay) quarantine(ctx context.Context, e store.EventCopy, cause error) error {
	if err := store.QuarantineEvent(ctx, r.Pool, e.EventID, "relay", cause.Error()); err != nil {
		return fmt.Errorf("quarantine event %s (origin_seq %d): %w", e.EventID, e.OriginSeq, err)
	}
	r.Metrics.Quarantined("relay")
	r.Logger.Error("relay: ALARM event quarantined: the broker refuses it; the events behind it go on. Fix the cause, then run streamseal quarantine requeue",
		"event_id", e.EventID, "origin_seq", e.OriginSeq, "tenant", e.Tenant, "event_type", e.EventType,
		"stream_id", e.StreamID, "payload_bytes", len(e.Payload), "reason", cause.Error())
	return nil
}

// publishRequeued publishes the events an operator re-queued, one at a time (they are few), and
// ends each one's quarantine on acknowledgement; one the broker still refuses is quarantined
// again with the new reason.
func (r *Relay) publishRequeued(ctx context.Context) error {
	events, err := store.QuarantineRequeued(ctx, r.Pool, r.Batch)
	if err != nil {
		return err
	}
	for _, e := range events {
		if _, err := r.JS.PublishMsg(ctx, wire.EventMessage(e)); err != nil {
			if Permanent(err) {
				if err := r.quarantine(ctx, e, err); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("publish re-queued event %s (origin_seq %d): %w", e.EventID, e.OriginSeq, err)
		}
		if err := store.QuarantineRelease(ctx, r.Pool, e.EventID); err != nil {
			return err
		}
		r.Logger.Info("relay: re-queued event published", "event_id", e.EventID, "origin_seq", e.OriginSeq)
	}
	return nil
}

// publishBatch publishes the next events above the cursor and advances the cursor to the last
// one JetStream acknowledged (or the relay quarantined) in order. It returns how many it read.
func (r *Relay) publishBatch(ctx context.Context) (int, error) {
	events, err := store.RelayPending(ctx, r.Pool, r.Batch)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	futures := make([]jetstream.PubAckFuture, len(events))
	refused := make([]error, len(events)) // a permanent refusal at publish time
	for i, e := range events {
		if futures[i], err = r.JS.PublishMsgAsync(wire.EventMessage(e)); err != nil {
			if !Permanent(err) {
				return 0, fmt.Errorf("publish event %s (origin_seq %d): %w", e.EventID, e.OriginSeq, err)
			}
			refused[i] = err
		}
	}
	acked := int64(0)
	var failed error
	for i, f := range futures {
		if refused[i] == nil {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				refused[i] = err
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		if failed != nil {
			continue
		}
		if refused[i] != nil {
			if !Permanent(refused[i]) {
				failed = fmt.Errorf("publish event origin_seq %d: %w", events[i].OriginSeq, refused[i])
				continue
			}
			// Recorded before the cursor passes it: a crash in between publishes it again.
			if err := r.quarantine(ctx, events[i], refused[i]); err != nil {
				return 0, err
			}
		}
		acked = events[i].OriginSeq
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
