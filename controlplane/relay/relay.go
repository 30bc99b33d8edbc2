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
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/stamper"
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
	// PollInterval is the failsafe wake-up without a notification. Default 1s.
	PollInterval time.Duration
	// StampBatch caps the events the leading relay numbers per round: it stamps what has
	// committed and reads its page in one statement (streamseal.relay_page), woken by an own
	// insert's NOTIFY, so a commit reaches the wire without a stamper's transaction and a second
	// wake-up in between. Default stamper.BatchSizeDefault; negative: the relay does not stamp
	// and waits for a stamper's NOTIFY.
	StampBatch int
	// InFlight caps the batches published and not yet acknowledged and recorded: the next
	// round does not wait for the last one's acknowledgements. Default 4.
	InFlight int
	// AckWait bounds the wait for JetStream's acknowledgements of a published batch: a publish
	// nobody answers (a stray subscriber on the events subjects while the stream is gone) ends
	// the round like a failed one, and the relay publishes again from its cursor. Default 30s.
	AckWait time.Duration
	// OnPublished, when set, observes each acknowledged batch (its last origin_seq), once the
	// cursor records it.
	OnPublished func(through int64)
	// OnRound, when set, observes each published page's timeline once its cursor is recorded
	// (benchmarks break the relay lag into stages with it).
	OnRound func(RoundTrace)
	Metrics *metrics.Instruments // nil: not measured

	stamping atomic.Bool
}

// Defaults of a Relay's tunables, used where a field is left zero.
const (
	BatchDefault        = 500         // events read and published per batch
	PollIntervalDefault = time.Second // failsafe wake-up when no notification arrives
	InFlightDefault     = 4           // batches published ahead of their acknowledgements
	AckWaitDefault      = 30 * time.Second
)

func (r *Relay) defaults() {
	if r.Batch <= 0 {
		r.Batch = BatchDefault
	}
	if r.PollInterval <= 0 {
		r.PollInterval = PollIntervalDefault
	}
	if r.StampBatch == 0 {
		r.StampBatch = stamper.BatchSizeDefault
	}
	if r.InFlight <= 0 {
		r.InFlight = InFlightDefault
	}
	if r.AckWait <= 0 {
		r.AckWait = AckWaitDefault
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
}

// Stamping reports whether this relay leads, stamps as it publishes, and has caught up with
// what is numbered; a standalone stamper in the same process stands aside meanwhile
// (stamper.Loop.Yield), since both would take the same lock for the same rows. A relay that is
// behind (its last page was full) leaves the stamping to the stamper until it has caught up.
func (r *Relay) Stamping() bool { return r.stamping.Load() }

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
// crashed leader's lock frees itself) and relays while it holds it. One goroutine reads and
// publishes on that connection; a second one waits for JetStream's acknowledgements in order and
// records the cursor, so the next round is not held up by the last one's acknowledgements. A
// failure of either ends both, and the next leader starts again from the cursor: what was
// published and not recorded is published again (JetStream drops it by message id).
func (r *Relay) lead(ctx context.Context) error {
	// Registered before the connection's Close, so it runs after it (and after Stamping turned
	// false): a leader that stamped leaves the numbering, and the sleep lock it may hold goes with
	// its connection; appends notify only while a sleeper holds it, so the stamper that yielded
	// is woken to take over. Best effort: at worst it waits for its failsafe poll.
	defer func() {
		if r.StampBatch > 0 {
			notifyCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.PollInterval)
			defer cancel()
			if err := store.UnstampedNotify(notifyCtx, r.Pool); err != nil {
				r.Logger.Warn("relay: could not hand the stamping over on leaving", "err", err)
			}
		}
	}()
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
	r.Logger.Info("relay: leading", "stamps", r.StampBatch > 0)
	if err := store.Listen(ctx, conn, store.ChannelStamped); err != nil {
		return err
	}
	if r.StampBatch > 0 {
		if err := store.Listen(ctx, conn, store.ChannelUnstamped); err != nil {
			return err
		}
		defer r.stamping.Store(false)
	}
	leadCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	pending := make(chan batch, r.InFlight)
	confirmed := make(chan error, 1)
	go func() { confirmed <- r.confirm(leadCtx, stop, pending) }()
	err = r.relay(leadCtx, conn, pending)
	close(pending)
	stop(err)
	<-confirmed
	if cause := context.Cause(leadCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause // the first failure, the confirming side's included
	}
	return err
}

// relay runs rounds until an error: stamp (when it stamps) and read the page above what it has
// published, publish it without waiting for the acknowledgements, hand it to confirm; when a
// round finds less than a full page, wait for a notification from another session (an own
// insert, another stamper's batch, a re-queue) or the failsafe poll. No coalescing delay: events
// that commit during a round are the next round's batch.
//
// Quiet, the relay numbers what commits itself: one statement from commit to publish. Busy (more
// than one commit arrived while it worked, or its page came back full), it hands the numbering to the
// node's standalone stamper (Stamping turns false): the stamper's own connection numbers the next
// batch, with its coalescing, while this one reads and publishes, so under a burst the two
// overlap as the split loops did (measured: one connection doing both fell behind on a busy
// machine, where rounds last longer than the time between commits). The first round that ends
// with nothing received takes the numbering back, stamping before it waits, so no event whose
// notification the yielding stamper swallowed waits for a poll.
//
// Appends notify only while a sleeper holds the sleep lock (sql/functions/stamper_sleep.sql).
// Quiet and stamping, the relay takes it before it waits (checking for committed events once
// more) and keeps it through its rounds, so every commit wakes it and counts toward "busy" as
// before; turning busy it gives it back and NOTIFYs the stamper that takes over. Appends in flight
// (holding the lock shared, not notifying) keep it from taking it: it looks again after
// stamper.BusyPollDefault.
func (r *Relay) relay(ctx context.Context, conn *pgx.Conn, pending chan<- batch) error {
	var position *int64 // nil: the cursor
	// A leadership's first event is published alone and acknowledged before any is pipelined
	// behind it: a broker that is down or has no events stream fails that one publish, and a
	// broker that comes back while the relay retries cannot store a round's tail before its head
	// (JetStream would then drop the re-published tail as duplicates, and the wire would carry
	// it first). The publishes a previous leadership left unanswered settle first, for the same
	// reason.
	probe := true
	r.settle(ctx)
	stampMax := max(r.StampBatch, 0)
	busy := false
	requeue := true
	armed := false
	var requeuedAt time.Time
	// handOver turns the numbering over to the stamper: it yields no more, and appends stop
	// notifying once the lock is given back, so it is told.
	handOver := func() error {
		r.stamping.Store(false)
		if armed {
			armed = false
			return store.StamperSleepRelease(ctx, conn, true)
		}
		return store.UnstampedNotify(ctx, conn)
	}
	for {
		if requeue {
			requeuedAt = time.Now()
			if err := r.publishRequeued(ctx); err != nil {
				return err
			}
		}
		stamp := stampMax
		if busy {
			stamp = 0
		}
		for {
			began := time.Now()
			page, err := store.RelayPage(ctx, conn, position, r.Batch, stamp)
			if err != nil {
				return err
			}
			read := time.Now()
			if page.Stamped > 0 {
				r.Metrics.Stamped(page.OldestWait)
			}
			if n := len(page.Events); n > 0 {
				b, err := r.publish(ctx, page.Events, probe)
				if err != nil {
					return err
				}
				probe = false
				b.trace = RoundTrace{Through: page.Events[n-1].OriginSeq, Events: n, Stamped: page.Stamped, Stamping: stamp > 0,
					Began: began, Read: read, Published: time.Now()}
				select {
				case pending <- b:
				case <-ctx.Done():
					return context.Cause(ctx)
				}
				last := page.Events[n-1].OriginSeq
				position = &last
			}
			if len(page.Events) == r.Batch {
				// Behind: read what is numbered before numbering more. A stamp per page would
				// cost a stamp() call (its lock and its scan for unstamped rows) for every 500
				// events of a backlog, and a relay that fell behind would fall further behind.
				if !busy && stampMax > 0 {
					if err := handOver(); err != nil {
						return err
					}
				}
				busy, stamp = true, 0
				continue
			}
			if stamp == 0 || page.Stamped < stamp {
				break // everything numbered is published (and, stamping, everything committed numbered)
			}
		}
		received := store.OthersNotificationsReceived(conn)
		switch {
		case len(received) > 1 && stampMax > 0:
			// Commits arrive faster than rounds end: busy, the stamper numbers.
			busy = true
			if err := handOver(); err != nil {
				return err
			}
			requeue = slices.Contains(received, store.PayloadRequeue)
			continue
		case len(received) > 0:
			requeue = slices.Contains(received, store.PayloadRequeue)
			continue
		case busy && stampMax > 0:
			// Quiet again: take the numbering back with a stamping round before waiting.
			busy = false
			r.stamping.Store(true)
			requeue = false
			continue
		}
		r.stamping.Store(stampMax > 0)
		wait := r.PollInterval
		if stampMax > 0 && !armed {
			sleep, err := store.StamperSleepArm(ctx, conn, true)
			if err != nil {
				return err
			}
			switch sleep {
			case store.SleepWork:
				requeue = false
				continue
			case store.SleepWriters:
				wait = stamper.BusyPollDefault
			case store.SleepArmed:
				armed = true
			}
		}
		payloads, woken, err := store.WaitOthersNotifications(ctx, conn, time.Now().Add(wait))
		if err != nil {
			return err
		}
		// The failsafe re-publishes re-queued events at most once a PollInterval, not at every
		// short look for appends in flight.
		requeue = (!woken && time.Since(requeuedAt) >= r.PollInterval) || slices.Contains(payloads, store.PayloadRequeue)
	}
}

// batch is one published page and what JetStream answers for each of its events.
type batch struct {
	events  []store.EventCopy
	futures []jetstream.PubAckFuture
	refused []error // a permanent refusal at publish time
	trace   RoundTrace
}

// RoundTrace is one published page's timeline, for OnRound: when the round's statement was
// sent (after a wake-up, or straight after the previous round), when its page was read (the
// stamp, when it stamped, included), when every event was handed to JetStream, when the last
// acknowledgement arrived, and when the cursor recorded it. Stamping says whether the round's
// statement was to number what had committed (false: a busy round, the stamper numbers), Stamped
// how many it numbered.
type RoundTrace struct {
	Through                                 int64 // the page's last origin_seq
	Events, Stamped                         int
	Stamping                                bool
	Began, Read, Published, Acked, Recorded time.Time
}

// publish hands every event of a page to JetStream without waiting for the acknowledgements;
// a probe publishes the first event alone and waits for its acknowledgement first.
func (r *Relay) publish(ctx context.Context, events []store.EventCopy, probe bool) (batch, error) {
	b := batch{events: events, futures: make([]jetstream.PubAckFuture, len(events)), refused: make([]error, len(events))}
	for i, e := range events {
		send := r.publishAsync
		if probe && i == 0 {
			send = r.publishAlone
		}
		f, err := send(ctx, e)
		if err != nil {
			if !Permanent(err) {
				return b, fmt.Errorf("publish event %s (origin_seq %d): %w", e.EventID, e.OriginSeq, err)
			}
			b.refused[i] = err
			continue
		}
		b.futures[i] = f
	}
	return b, nil
}

// publishAsync hands one event to JetStream; its acknowledgement comes on the future.
func (r *Relay) publishAsync(_ context.Context, e store.EventCopy) (jetstream.PubAckFuture, error) {
	return r.JS.PublishMsgAsync(wire.EventMessage(e))
}

// publishAlone publishes one event and waits, up to AckWait, for its acknowledgement.
func (r *Relay) publishAlone(ctx context.Context, e store.EventCopy) (jetstream.PubAckFuture, error) {
	ctx, cancel := context.WithTimeout(ctx, r.AckWait)
	defer cancel()
	msg := wire.EventMessage(e)
	ack, err := r.JS.PublishMsg(ctx, msg)
	if err != nil {
		return nil, err
	}
	return acknowledged{ack: ack, msg: msg}, nil
}

// acknowledged is a publish already acknowledged, in a batch's list of futures.
type acknowledged struct {
	ack *jetstream.PubAck
	msg *nats.Msg
}

func (a acknowledged) Ok() <-chan *jetstream.PubAck {
	ok := make(chan *jetstream.PubAck, 1)
	ok <- a.ack
	return ok
}
func (a acknowledged) Err() <-chan error { return nil } // never: it was acknowledged
func (a acknowledged) Msg() *nats.Msg    { return a.msg }

// settle waits, up to AckWait, until no asynchronous publish of this relay's JetStream context
// awaits its answer.
func (r *Relay) settle(ctx context.Context) {
	timer := time.NewTimer(r.AckWait)
	defer timer.Stop()
	select {
	case <-r.JS.PublishAsyncComplete():
	case <-timer.C:
	case <-ctx.Done():
	}
}

// confirm confirms the published batches in order until pending closes or one fails; a failure
// ends the leader's round (stop) too.
func (r *Relay) confirm(ctx context.Context, stop context.CancelCauseFunc, pending <-chan batch) error {
	for b := range pending {
		if err := r.confirmBatch(ctx, b); err != nil {
			stop(err)
			return err
		}
	}
	return nil
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

// confirmBatch waits for JetStream's acknowledgement of each event of b in order and advances the
// cursor to the last one acknowledged (or quarantined: a permanent refusal) before the first
// failure; a transient failure is returned after that, so the cursor only ever records what
// JetStream acknowledged.
func (r *Relay) confirmBatch(ctx context.Context, b batch) error {
	acked := int64(0)
	var failed error
	deadline := time.NewTimer(time.Until(b.trace.Published.Add(r.AckWait)))
	defer deadline.Stop()
	for i, f := range b.futures {
		if b.refused[i] == nil {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.refused[i] = err
			case <-deadline.C:
				// Nothing more will come in time: the rest of the batch is unanswered.
				if failed == nil {
					failed = fmt.Errorf("publish event origin_seq %d: no acknowledgement within %s", b.events[i].OriginSeq, r.AckWait)
				}
				return r.record(ctx, b, acked, failed)
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		if failed != nil {
			continue
		}
		if b.refused[i] != nil {
			if !Permanent(b.refused[i]) {
				failed = fmt.Errorf("publish event origin_seq %d: %w", b.events[i].OriginSeq, b.refused[i])
				continue
			}
			// Recorded before the cursor passes it: a crash in between publishes it again.
			if err := r.quarantine(ctx, b.events[i], b.refused[i]); err != nil {
				return err
			}
		}
		acked = b.events[i].OriginSeq
	}
	return r.record(ctx, b, acked, failed)
}

// record advances the cursor to acked, the last event of b acknowledged (or quarantined) before
// the first failure, and returns that failure.
func (r *Relay) record(ctx context.Context, b batch, acked int64, failed error) error {
	b.trace.Acked = time.Now()
	if acked > 0 {
		// The cursor's update also reads the acknowledged event's age: the relay lag, in the
		// database's clock, at work already done.
		age, held, err := store.RelayCursorAdvance(ctx, r.Pool, acked)
		if err != nil {
			return err
		}
		if held {
			r.Metrics.Relayed(age)
		}
		if r.OnPublished != nil {
			r.OnPublished(acked)
		}
		if r.OnRound != nil && failed == nil {
			b.trace.Recorded = time.Now()
			r.OnRound(b.trace)
		}
	}
	return failed
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
