// Package inbox consumes other origins' events from JetStream into this service's store: a
// durable consumer over the subjects of the types this service subscribes to (the
// subscriptions table), batches into streamseal.ingest, acks only after commit. A message that
// cannot be stored is recorded in inbox_rejects with the reason and then terminated, never
// dropped silently. Identity rules live in SQL (ingest); this package only moves bytes.
package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Suppress is the fault injector at the receive seam: when it returns true the delivery is
// acknowledged and not stored, exactly like a receive-boundary defect that loses an event.
type Suppress func(e store.EventCopy) bool

// Inbox is one service's event consumer. Zero tuning fields take defaults.
type Inbox struct {
	Pool    *pgxpool.Pool
	JS      jetstream.JetStream
	Service string
	Logger  *slog.Logger
	// Batch caps messages fetched and ingested per transaction. Default 500.
	Batch int
	// Suppress, when set, drops chosen deliveries (tests and the demo inject loss here).
	Suppress Suppress
	// OnCheckpoint verifies a checkpoint riding the event subjects. It runs after every event
	// before it in the stream is committed; the checkpoint is acked when it returns nil.
	OnCheckpoint func(ctx context.Context, cp wire.Checkpoint) error
	// MaxDeliver bounds the deliveries of one message (wire.MaxDeliverDefault when zero): a
	// message still failing then is recorded as rejected and terminated. An event lost that way
	// is a hole the next checkpoint names and repair fetches (invariant 1), not a wedge (13).
	MaxDeliver int
	Metrics    *metrics.Instruments // nil: not counted

	received, stored, suppressed, rejected atomic.Int64
}

// Counts is what the inbox has seen since it started.
type Counts struct {
	Received, Stored, Suppressed, Rejected int64
}

// Counts returns the inbox's counters (a test witness, and later metrics).
func (in *Inbox) Counts() Counts {
	return Counts{in.received.Load(), in.stored.Load(), in.suppressed.Load(), in.rejected.Load()}
}

// BatchDefault caps the messages an Inbox fetches and ingests per transaction when Batch is zero.
const BatchDefault = 500

// Run consumes until ctx ends. With no subscriptions it returns at once: nothing to consume.
func (in *Inbox) Run(ctx context.Context) error {
	if in.Batch <= 0 {
		in.Batch = BatchDefault
	}
	if in.Logger == nil {
		in.Logger = slog.Default()
	}
	if in.MaxDeliver <= 0 {
		in.MaxDeliver = wire.MaxDeliverDefault
	}
	filters, err := in.filters(ctx)
	if err != nil {
		return err
	}
	if len(filters) == 0 {
		in.Logger.Info("inbox: no subscriptions, nothing to consume")
		return nil
	}
	cons, err := in.JS.CreateOrUpdateConsumer(ctx, wire.EventsStream, jetstream.ConsumerConfig{
		Durable:        "streamseal-inbox-" + in.Service,
		FilterSubjects: filters,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        time.Minute,
		MaxAckPending:  in.Batch * 4,
		MaxDeliver:     in.MaxDeliver,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("inbox consumer for %s: %w", in.Service, err)
	}
	for ctx.Err() == nil {
		msgs, err := wire.FetchAvailable(ctx, cons, in.Batch, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			in.Logger.Warn("inbox: fetch failed", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		if len(msgs) > 0 {
			if err := in.store(ctx, msgs); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				in.Logger.Warn("inbox: batch not stored, will be redelivered", "err", err, "messages", len(msgs))
				for _, m := range msgs {
					in.retryOrGiveUp(ctx, m, err)
				}
			}
		}
	}
	return nil
}

// filters derives the JetStream filter subjects from the subscriptions table.
func (in *Inbox) filters(ctx context.Context) ([]string, error) {
	subs, err := store.Subscriptions(ctx, in.Pool)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sub := range subs {
		out = append(out, wire.EventFilter(sub.Origin, sub.EventType))
	}
	return out, nil
}

// store handles one fetched batch in stream order: runs of events are ingested in one
// transaction each and acked after commit; a checkpoint is verified only after every event
// before it is committed, so it never reports as missing what is merely in the same batch.
func (in *Inbox) store(ctx context.Context, msgs []jetstream.Msg) error {
	start := 0
	for i, m := range msgs {
		if !wire.IsCheckpoint(m.Headers()) {
			continue
		}
		if err := in.storeEvents(ctx, msgs[start:i]); err != nil {
			return err
		}
		start = i + 1
		if err := in.checkpoint(ctx, m); err != nil {
			if wire.Permanent(err) {
				// A checkpoint SQL refuses will be refused again: recorded and terminated, and
				// the events behind it go on (invariant 13).
				if err := in.reject(ctx, m, nil, "checkpoint refused: "+err.Error()); err != nil {
					return err
				}
				in.Metrics.DeadMessage("inbox", "permanent")
				continue
			}
			in.retryOrGiveUp(ctx, m, err)
			for _, rest := range msgs[i+1:] {
				_ = rest.NakWithDelay(time.Second)
			}
			return nil
		}
	}
	return in.storeEvents(ctx, msgs[start:])
}

func (in *Inbox) checkpoint(ctx context.Context, m jetstream.Msg) error {
	cp, err := wire.DecodeCheckpoint(m.Data())
	if err != nil {
		return in.reject(ctx, m, nil, err.Error())
	}
	if sender, ok := wire.EventSender(m.Subject()); !ok || sender != cp.Origin {
		// Invariant 12: a checkpoint counts only for the origin whose subject it rides (the
		// broker lets a service publish only its own subjects); one claiming another origin would
		// inflate that origin's lanes with phantom type_seqs.
		return in.reject(ctx, m, nil, fmt.Sprintf("%s: checkpoint claims origin %q on the subject of %q", wire.DropForgedSender, cp.Origin, sender))
	}
	if in.OnCheckpoint != nil {
		if err := in.OnCheckpoint(ctx, cp); err != nil {
			in.Logger.Warn("inbox: checkpoint not verified, will be redelivered", "origin", cp.Origin, "type", cp.Type, "err", err)
			return err
		}
	}
	_ = m.Ack()
	return nil
}

// storeEvents ingests a run of event messages in one transaction and acks after commit. Own
// events and suppressed deliveries are acked without storing; undecodable messages are recorded
// and terminated. If the run as a whole is refused, each message is retried alone so one bad
// event is isolated instead of blocking the rest.
func (in *Inbox) storeEvents(ctx context.Context, msgs []jetstream.Msg) error {
	var copies []store.EventCopy
	var keep []jetstream.Msg
	for _, m := range msgs {
		in.received.Add(1)
		e, err := wire.DecodeEvent(m.Headers(), m.Data())
		if err != nil {
			if err := in.reject(ctx, m, nil, err.Error()); err != nil {
				return err
			}
			continue
		}
		if !wire.SubjectNamesEvent(m.Subject(), e.Origin, e.Tenant, e.EventType) {
			// Invariant 12: an event is accepted only from the origin, and for the tenant and
			// type, its subject names; stored, a forgery would hold a real event's numbers.
			if err := in.reject(ctx, m, nil, fmt.Sprintf("%s: event claims origin %q, tenant %q, type %q; its subject names otherwise",
				wire.DropForgedSender, e.Origin, e.Tenant, e.EventType)); err != nil {
				return err
			}
			continue
		}
		if e.Origin == in.Service {
			_ = m.Ack() // our own events come back on the shared subjects: not a copy
			continue
		}
		if in.Suppress != nil && in.Suppress(e) {
			in.suppressed.Add(1)
			_ = m.Ack()
			continue
		}
		copies = append(copies, e)
		keep = append(keep, m)
	}
	if len(copies) == 0 {
		return nil
	}
	if _, err := store.EventsIngest(ctx, in.Pool, copies); err != nil {
		if !errors.Is(err, store.ErrInvalidInput) && !errors.Is(err, store.ErrConstraint) {
			return err
		}
		return in.storeOneByOne(ctx, copies, keep)
	}
	in.stored.Add(int64(len(copies)))
	for _, m := range keep {
		_ = m.Ack()
	}
	return nil
}

func (in *Inbox) storeOneByOne(ctx context.Context, copies []store.EventCopy, msgs []jetstream.Msg) error {
	for i, e := range copies {
		_, err := store.EventsIngest(ctx, in.Pool, []store.EventCopy{e})
		switch {
		case err == nil:
			in.stored.Add(1)
			_ = msgs[i].Ack()
		case errors.Is(err, store.ErrInvalidInput) || errors.Is(err, store.ErrConstraint):
			if err := in.reject(ctx, msgs[i], &e, err.Error()); err != nil {
				return err
			}
		default:
			return err
		}
	}
	return nil
}

// retryOrGiveUp redelivers a failed message with backoff, or, on its last delivery, records it
// as rejected and terminates it.
func (in *Inbox) retryOrGiveUp(ctx context.Context, m jetstream.Msg, cause error) {
	delivered := uint64(1)
	if meta, err := m.Metadata(); err == nil {
		delivered = meta.NumDelivered
	}
	if delivered < uint64(in.MaxDeliver) {
		_ = m.NakWithDelay(wire.RetryDelay(time.Second, delivered))
		return
	}
	if err := in.reject(ctx, m, nil, fmt.Sprintf("given up after %d deliveries: %v", delivered, cause)); err != nil {
		in.Logger.Error("inbox: could not record a dead message; it will be redelivered", "subject", m.Subject(), "err", err)
		_ = m.NakWithDelay(wire.RetryDelay(time.Second, delivered))
		return
	}
	in.Metrics.DeadMessage("inbox", "max_deliver")
}

// reject records a message that cannot be stored, then terminates it on the wire.
func (in *Inbox) reject(ctx context.Context, m jetstream.Msg, e *store.EventCopy, reason string) error {
	r := store.InboxReject{Subject: m.Subject(), Reason: reason, Headers: map[string]string{}, Payload: m.Data()}
	if e != nil {
		r.Origin, r.EventID = e.Origin, e.EventID
	}
	for k := range m.Headers() {
		r.Headers[k] = m.Headers().Get(k)
	}
	if err := store.InboxRejectRecord(ctx, in.Pool, r); err != nil {
		return err
	}
	in.rejected.Add(1)
	in.Logger.Error("inbox: message rejected and recorded", "subject", m.Subject(), "reason", reason)
	_ = m.Term()
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
