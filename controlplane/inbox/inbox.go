// Package inbox consumes other origins' events from JetStream into this service's store: one
// durable consumer per subscription (the subscriptions table), each with a single filter subject
// (wire.LiveFilter / LiveTenantFilter: origin, tenant, type) and the durable name
// wire.InboxDurable(service, filter), so the broker's permissions can pin both and a service
// subscribed to some tenants never receives another's events (invariant 11); each consumer
// batches into streamseal.ingest in stream order and acks only after commit. A message that
// cannot be stored is recorded in inbox_rejects with the reason and then terminated, never
// dropped silently. Checkpoints riding the event subjects are recorded (one INSERT per run of
// them, streamseal.checkpoint_inbox) and acknowledged, and a verifier loop of the inbox's own
// hands them to OnCheckpoint at its own pace, so a live event never waits for a round's
// verification (issue 21 item 3). Identity rules live in SQL (ingest); this package only moves
// bytes.
package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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
	// OnCheckpoint verifies checkpoints riding the event subjects. The consumer loops do not
	// call it: once every event before a run of checkpoints in a fetched batch is committed, they
	// record the run in streamseal.checkpoint_inbox (one statement) and acknowledge it, and the
	// inbox's verifier loop takes the recorded checkpoints oldest first, up to VerifyBatch at a
	// time, and hands them over in that order (a round over many tenants is one message per
	// tenant: verified in the consumer loop, a round of 50 000 pairs held the live events behind
	// it 41.9 s; issue 21 item 3). A checkpoint is removed once OnCheckpoint returns nil for it;
	// on an error each checkpoint of the call is handed over again alone, so a refused one
	// (wire.Permanent) is recorded in inbox_rejects by itself, and one that keeps failing is
	// retried with backoff up to MaxDeliver times, then recorded as given up. ordered is true
	// when the inbox proved more when it recorded the checkpoint: every message its consumer
	// delivered before it was handled to the end by this inbox (committed, or deliberately
	// dropped), and none was still pending redelivery, so what a checkpoint counts and this store
	// lacks is loss already (detection in one interval; see orderProof). The proof stays true
	// while the checkpoint waits (what was committed stays committed); a checkpoint handed over
	// again after a failed verification is handed over as unordered (always safe).
	OnCheckpoint func(ctx context.Context, cps []wire.Checkpoint, ordered bool) error
	// VerifyBatch caps the recorded checkpoints handed to OnCheckpoint per call
	// (VerifyBatchDefault when zero).
	VerifyBatch int
	// MaxWaitingPerOrigin caps the recorded checkpoints of one origin waiting for verification
	// (MaxWaitingPerOriginDefault when zero; streamseal.checkpoint_inbox_record): past it the
	// origin's checkpoints a later one of the same lane supersedes are dropped, then what still
	// does not fit is recorded as rejected, so no publisher grows the table without limit.
	MaxWaitingPerOrigin int
	// OnBeat takes an origin's beat (wire.BeatSubject, one per checkpoint round), consumed by
	// one more durable per origin subscribed to (wire.BeatFilters); the beat is acked when it
	// returns nil. A beat counts no events: it keeps the origin alive and re-evaluates the lanes
	// holding holes while their pairs are quiet.
	OnBeat func(ctx context.Context, b wire.Beat) error
	// MaxDeliver bounds the deliveries of one message (wire.MaxDeliverDefault when zero): a
	// message still failing then is recorded as rejected and terminated. An event lost that way
	// is a hole the next checkpoint names and repair fetches (invariant 1), not a wedge (13).
	MaxDeliver int
	Metrics    *metrics.Instruments // nil: not counted
	// ReconcileInterval is how often subscriptions added or removed at run time are picked up
	// (ReconcileIntervalDefault when zero).
	ReconcileInterval time.Duration

	wake chan struct{} // a run of checkpoints was recorded: the verifier loop looks now

	received, stored, suppressed, rejected atomic.Int64
	ordered, unordered                     atomic.Int64
	superseded                             atomic.Int64 // recorded checkpoints dropped for a later one of their lane
	consumers, provenConsumers             atomic.Int64 // how many consumer loops run; how many hold their orderProof
}

// Counts is what the inbox has seen since it started. Ordered and Unordered count the
// checkpoints handed to OnCheckpoint with and without a proof of order.
type Counts struct {
	Received, Stored, Suppressed, Rejected int64
	Ordered, Unordered                     int64
	// Superseded counts recorded checkpoints dropped past MaxWaitingPerOrigin because a later
	// one of their lane carries what they did.
	Superseded int64
	// OrderProven: every consumer loop holds its proof, so the next checkpoint on any subject
	// would be ordered if nothing breaks the chain before it.
	OrderProven bool
}

// Counts returns the inbox's counters (a test witness, and later metrics).
func (in *Inbox) Counts() Counts {
	return Counts{Received: in.received.Load(), Stored: in.stored.Load(), Suppressed: in.suppressed.Load(),
		Rejected: in.rejected.Load(), Ordered: in.ordered.Load(), Unordered: in.unordered.Load(), Superseded: in.superseded.Load(),
		OrderProven: in.consumers.Load() > 0 && in.provenConsumers.Load() == in.consumers.Load()}
}

// orderProof decides whether every message the inbox's consumer delivered before the current
// one was handled to the end by this inbox. It starts proven only when the consumer had nothing
// pending (no delivery of an earlier process or another replica still unacknowledged); it stays
// proven while deliveries arrive as this inbox's consecutive first deliveries (consumer
// sequence n+1, delivered once); anything else breaks it: a gap in the consumer sequence
// (another replica or an expired fetch took a delivery), a redelivery, or a message this inbox
// handed back for redelivery. Broken, it is proven again only when an idle consumer reports
// nothing pending. A pull consumer delivers in stream order apart from redeliveries, so a proven
// checkpoint comes after every message before it on its subjects, all of them handled. Unproven
// is always safe: the verifier falls back to two-cycle confirmation.
//
// One proof per JetStream consumer, owned by the loop that fetches from it: the proof speaks of
// one consumer's delivery sequence, and a checkpoint proves order only for the events that share
// its consumer (the events it counts ride its subject).
type orderProof struct {
	proven bool
	next   uint64        // the consumer sequence expected next
	lapses uint64        // how many times the proof was lost (see resume)
	report *atomic.Int64 // counts the proofs that hold, for Counts (nil: not reported)
}

func (o *orderProof) set(proven bool) {
	if o.report != nil && proven != o.proven {
		if proven {
			o.report.Add(1)
		} else {
			o.report.Add(-1)
		}
	}
	o.proven = proven
}

// restart takes the consumer's state: proven when nothing it delivered is pending.
func (o *orderProof) restart(info *jetstream.ConsumerInfo) {
	o.set(info.NumAckPending == 0)
	o.next = info.Delivered.Consumer + 1
}

// resume takes a lost proof again after a batch this loop handled to the end without a lapse
// (each delivery a first delivery, in sequence from first): proven when every delivery before
// the batch is acknowledged too (the consumer's ack floor reaches first - 1). What the loop
// holds fetched ahead comes after the batch, and observe checks each of those in turn.
func (o *orderProof) resume(info *jetstream.ConsumerInfo, first uint64) {
	if info.AckFloor.Consumer+1 >= first {
		o.set(true)
	}
}

// observe takes one delivery, in the order fetched.
func (o *orderProof) observe(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil || meta.NumDelivered != 1 || meta.Sequence.Consumer != o.next {
		o.lapse()
	}
	if err == nil {
		o.next = meta.Sequence.Consumer + 1
	}
}

// broken records that a message went back for redelivery (or may have).
func (o *orderProof) broken() { o.lapse() }

// lapse loses the proof and counts the loss, so a loop can tell a batch handled without one.
func (o *orderProof) lapse() {
	o.set(false)
	o.lapses++
}

// BatchDefault caps the messages an Inbox fetches and ingests per transaction when Batch is zero.
const BatchDefault = 500

// VerifyBatchDefault caps the recorded checkpoints handed to OnCheckpoint per call when
// VerifyBatch is zero: four fetched batches, so a round's runs are verified in few transactions.
const VerifyBatchDefault = 2000

// MaxWaitingPerOriginDefault caps one origin's recorded checkpoints waiting for verification
// when MaxWaitingPerOrigin is zero: two rounds of 500 000 active (tenant, type) pairs (a round is
// one message per pair, about 400 bytes a row), so a verifier a round behind the largest rounds
// measured refuses nothing; past it what a later checkpoint of the same lane supersedes goes
// first, and only what is still over is refused.
const MaxWaitingPerOriginDefault = 1000000

// verifyPoll is how often the verifier loop looks for recorded checkpoints it was not woken for:
// another replica's, a retry coming due, what a stopped process left.
const verifyPoll = time.Second

// ReconcileIntervalDefault is how often the inbox re-reads the subscriptions when
// ReconcileInterval is zero.
const ReconcileIntervalDefault = 5 * time.Second

// The inbox consumers' redelivery policy: a delivery not acknowledged within ConsumerAckWait is
// redelivered; a failed one is nak'd with wire.RetryDelay(RetryBase, n) after delivery n. With
// MaxDeliver they bound how long the broker can still deliver a message after its first
// delivery (streamseal._lane_rounds_hold, lane_rounds.sql, is derived from them:
// TestLaneRoundsHoldCoversTheRedeliveryHorizon).
const (
	ConsumerAckWait = time.Minute
	RetryBase       = time.Second
)

// Run consumes until ctx ends. It re-reads the subscriptions every ReconcileInterval, so a
// subscription added (or removed) at run time gets (or loses) its durable consumer without a
// restart; a removed subscription's durable is left on the broker (its position is kept for a
// later re-subscription), only its loop stops.
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
	if in.ReconcileInterval <= 0 {
		in.ReconcileInterval = ReconcileIntervalDefault
	}
	if in.VerifyBatch <= 0 {
		in.VerifyBatch = VerifyBatchDefault
	}
	in.wake = make(chan struct{}, 1)
	// One loop per consumer: messages of one filter (and so of one subject) are handled in
	// stream order, so a checkpoint is verified only after the events before it on its subject
	// are committed; filters do not wait for one another. Each loop proves its own order.
	var wg sync.WaitGroup
	defer wg.Wait()
	running := map[string]context.CancelFunc{}
	defer func() {
		for _, stop := range running {
			stop()
		}
	}()
	if in.OnCheckpoint != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.verifyLoop(ctx)
		}()
	}
	reconcile := func() error {
		filters, err := in.filters(ctx)
		if err != nil {
			return err
		}
		want := map[string]bool{}
		for _, filter := range filters {
			want[filter] = true
			if running[filter] != nil {
				continue
			}
			cons, err := in.JS.CreateOrUpdateConsumer(ctx, wire.EventsStream, jetstream.ConsumerConfig{
				Durable:       wire.InboxDurable(in.Service, filter),
				FilterSubject: filter,
				AckPolicy:     jetstream.AckExplicitPolicy,
				AckWait:       ConsumerAckWait,
				MaxAckPending: in.Batch * 4,
				MaxDeliver:    in.MaxDeliver,
				DeliverPolicy: jetstream.DeliverAllPolicy,
			})
			if err != nil {
				return fmt.Errorf("inbox consumer of %s for %s: %w", filter, in.Service, err)
			}
			loopCtx, stop := context.WithCancel(ctx)
			running[filter] = stop
			in.consumers.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				in.consume(loopCtx, filter, cons)
			}()
		}
		for filter, stop := range running {
			if !want[filter] {
				stop()
				delete(running, filter)
				in.consumers.Add(-1)
				in.Logger.Info("inbox: subscription removed, its consumer loop stopped", "filter", filter)
			}
		}
		return nil
	}
	if err := reconcile(); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while creating a consumer: not a failure
		}
		return err
	}
	if len(running) == 0 {
		in.Logger.Info("inbox: no subscriptions yet; watching for them")
	}
	t := time.NewTicker(in.ReconcileInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := reconcile(); err != nil && ctx.Err() == nil {
			in.Logger.Warn("inbox: reading the subscriptions failed; retrying", "err", err)
		}
	}
}

// consume fetches and stores one consumer's messages until ctx ends.
func (in *Inbox) consume(ctx context.Context, filter string, cons jetstream.Consumer) {
	order := &orderProof{report: &in.provenConsumers}
	defer order.set(false) // a stopped loop holds no proof
	in.reprove(ctx, cons, order)
	feed := wire.NewFeed(cons, in.Batch)
	defer feed.Stop()
	var reproved time.Time
	for ctx.Err() == nil {
		msgs, err := feed.Fetch(ctx, in.Batch, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			order.broken()
			in.Logger.Warn("inbox: fetch failed", "filter", filter, "err", err)
			sleep(ctx, time.Second)
			continue
		}
		if len(msgs) == 0 {
			if !order.proven {
				in.reprove(ctx, cons, order)
			}
			continue
		}
		first, lapses := order.next, order.lapses
		if err := in.store(ctx, msgs, order); err != nil {
			if ctx.Err() != nil {
				// Stopping: what was not handled goes back now, not after the ack wait. Left
				// pending, it is an outstanding delivery to whoever takes over, and the
				// checkpoints behind it would suspect events that are only held (a nak of a
				// message already acked changes nothing).
				for _, m := range msgs {
					_ = m.Nak()
				}
				return
			}
			in.Logger.Warn("inbox: batch not stored, will be redelivered", "filter", filter, "err", err, "messages", len(msgs))
			for _, m := range msgs {
				in.retryOrGiveUp(ctx, m, err)
			}
			order.broken()
			continue
		}
		// A lost proof is taken again while messages keep arriving, not only after an empty
		// fetch: a subject that carries a checkpoint every round never leaves the fetch a second
		// without one, so one failed batch or consume error left detection on two-cycle
		// confirmation for good (invariant 1). After a batch handled without a lapse, the proof
		// holds again once everything delivered before the batch is acknowledged. One consumer
		// info request per ReproveInterval, only while unproven.
		if !order.proven && order.lapses == lapses && time.Since(reproved) >= ReproveInterval {
			reproved = time.Now()
			if info, err := cons.Info(ctx); err == nil {
				order.resume(info, first)
			}
		}
	}
}

// ReproveInterval spaces the consumer info requests that take a lost order proof again while
// messages keep arriving (an empty fetch asks at once).
const ReproveInterval = time.Second

// reprove asks the consumer whether anything it delivered is still pending; on an error the
// order stays unproven (checkpoints fall back to two-cycle confirmation until the next try).
func (in *Inbox) reprove(ctx context.Context, cons jetstream.Consumer, order *orderProof) {
	info, err := cons.Info(ctx)
	if err != nil {
		order.broken()
		return
	}
	order.restart(info)
}

// filters derives one JetStream filter subject per subscription, leaving out a filter another
// one covers (a named origin under an any-origin subscription of the type, a named tenant under
// an every-tenant one), so no message reaches two consumers, and the beat filters of the origins
// subscribed to (wire.BeatFilters).
func (in *Inbox) filters(ctx context.Context) ([]string, error) {
	subs, err := store.Subscriptions(ctx, in.Pool)
	if err != nil {
		return nil, err
	}
	covers := func(a, b store.Subscription) bool { // a covers b
		return a.EventType == b.EventType && (a.Origin == "*" || a.Origin == b.Origin) &&
			(a.AllTenants || (!b.AllTenants && a.Tenant == b.Tenant))
	}
	var out, origins []string
	for i, sub := range subs {
		origins = append(origins, sub.Origin)
		covered := false
		for j, other := range subs {
			if i != j && covers(other, sub) && (!covers(sub, other) || j < i) {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		out = append(out, wire.InboxFilter(sub.Origin, sub.Tenant, sub.AllTenants, sub.EventType))
	}
	// One more durable per origin subscribed to (or one for every origin): its beats.
	return append(out, wire.BeatFilters(origins)...), nil
}

// store handles one fetched batch in stream order: runs of events are ingested in one
// transaction each and acked after commit; a checkpoint is verified only after every event
// before it is committed, so it never reports as missing what is merely in the same batch.
func (in *Inbox) store(ctx context.Context, msgs []jetstream.Msg, order *orderProof) error {
	// observed: messages the order proof has taken (each exactly once); alone: the end of a run
	// whose joint verification failed, handled message by message.
	start, observed, alone := 0, 0, 0
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if i >= observed {
			order.observe(m)
			observed = i + 1
		}
		beat := wire.IsBeat(m.Headers())
		if !beat && !wire.IsCheckpoint(m.Headers()) {
			continue
		}
		if err := in.storeEvents(ctx, msgs[start:i]); err != nil {
			return err
		}
		if !beat && i >= alone {
			// The run of checkpoints from here, verified together; the proof is taken at its
			// end (it only breaks within a batch, so it held at every message of the run).
			end := i + 1
			for end < len(msgs) && !wire.IsBeat(msgs[end].Headers()) && wire.IsCheckpoint(msgs[end].Headers()) {
				order.observe(msgs[end])
				end++
			}
			observed = end
			if end-i > 1 {
				err := in.recordCheckpoints(ctx, msgs[i:end], order.proven)
				if err == nil {
					i, start = end-1, end
					continue
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				in.Logger.Warn("inbox: checkpoint run not recorded, each checkpoint again alone", "checkpoints", end-i, "err", err)
				alone = end
			}
		}
		start = i + 1
		handle := func() error { return in.checkpoint(ctx, m, order.proven) }
		if beat {
			handle = func() error { return in.beat(ctx, m) }
		}
		if err := handle(); err != nil {
			if ctx.Err() != nil {
				// Stopping: the caller hands the batch back at once (consume). A retry delay
				// here would keep the events behind this message from whoever takes over.
				return ctx.Err()
			}
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
			order.broken()
			for _, rest := range msgs[i+1:] {
				_ = rest.NakWithDelay(time.Second)
			}
			return nil
		}
	}
	return in.storeEvents(ctx, msgs[start:])
}

// recordCheckpoints records a run of checkpoint messages for the verifier loop in one statement
// and acks them. Any message that would be refused, and any error, leaves the whole run unacked
// to be handled message by message (checkpoint), which rejects or retries each alone. Without an
// OnCheckpoint nothing verifies them: they are acked only. Past MaxWaitingPerOrigin the record
// drops the origin's checkpoints a later one of their lane supersedes (counted, logged) and
// refuses what still does not fit: those are recorded as rejected and terminated (invariant 13:
// a flooding publisher cannot grow the table, and the events behind its checkpoints flow).
func (in *Inbox) recordCheckpoints(ctx context.Context, msgs []jetstream.Msg, ordered bool) error {
	entries := make([]store.CheckpointInboxEntry, len(msgs))
	for i, m := range msgs {
		cp, refusal := in.admitCheckpoint(m)
		if refusal != "" {
			return errors.New(refusal)
		}
		t := cp.Tenants[0]
		entries[i] = store.CheckpointInboxEntry{Origin: cp.Origin, Subject: m.Subject(), Payload: m.Data(),
			First: t.First, Last: t.Last, Coalescible: len(t.AtMostOnce) == 0, Tenant: t.Tenant, EventType: cp.Type}
	}
	refused := map[int]string{}
	if in.OnCheckpoint != nil {
		overflows, err := store.CheckpointInboxRecord(ctx, in.Pool, entries, ordered, in.maxWaitingPerOrigin())
		if err != nil {
			return err
		}
		for _, o := range overflows {
			in.superseded.Add(o.Superseded)
			in.Metrics.CheckpointsSuperseded(o.Origin, o.Superseded)
			in.Logger.Warn("inbox: checkpoints of an origin reached the cap waiting for verification; superseded ones dropped",
				"origin", o.Origin, "cap", in.maxWaitingPerOrigin(), "superseded", o.Superseded, "waiting", o.Waiting, "refused", len(o.Refused))
			for _, i := range o.Refused {
				// One reason per origin and cap (inbox_rejects samples and counts per reason).
				refused[i] = fmt.Sprintf("checkpoint inbox full: origin %q has the most checkpoints waiting for verification "+
					"(cap %d), none of them superseded by a later one of its lane", o.Origin, in.maxWaitingPerOrigin())
			}
		}
		select {
		case in.wake <- struct{}{}:
		default:
		}
	}
	for i, m := range msgs {
		reason, ok := refused[i]
		if !ok {
			_ = m.Ack()
			continue
		}
		if err := in.reject(ctx, m, nil, reason); err != nil {
			// The others are recorded: this one alone comes back later.
			in.Logger.Error("inbox: could not record a refused checkpoint; it will be redelivered", "subject", m.Subject(), "err", err)
			_ = m.NakWithDelay(time.Second)
			continue
		}
		in.Metrics.DeadMessage("inbox", "checkpoint_inbox_full")
	}
	return nil
}

// maxWaitingPerOrigin is MaxWaitingPerOrigin or its default.
func (in *Inbox) maxWaitingPerOrigin() int {
	if in.MaxWaitingPerOrigin > 0 {
		return in.MaxWaitingPerOrigin
	}
	return MaxWaitingPerOriginDefault
}

// admitCheckpoint decodes a checkpoint message and checks it rides its own subject; a non-empty
// refusal says why it must be rejected.
func (in *Inbox) admitCheckpoint(m jetstream.Msg) (wire.Checkpoint, string) {
	cp, err := wire.DecodeCheckpoint(m.Data())
	if err != nil {
		return cp, err.Error()
	}
	if sender, ok := wire.EventSender(m.Subject()); !ok || sender != cp.Origin {
		// Invariant 12: a checkpoint counts only for the origin whose subject it rides (the
		// broker lets a service publish only its own subjects); one claiming another origin would
		// inflate that origin's lanes with phantom type_seqs.
		return cp, fmt.Sprintf("%s: checkpoint claims origin %q on the subject of %q", wire.DropForgedSender, cp.Origin, sender)
	}
	// A checkpoint counts the events of the subject it rides: one naming another (origin,
	// tenant, type) would verify lanes this subject does not carry (invariant 11).
	if !wire.SubjectNamesEvent(m.Subject(), cp.Origin, cp.Tenants[0].Tenant, cp.Type) {
		return cp, fmt.Sprintf("checkpoint of origin %q tenant %q type %q rides subject %s, not its own",
			cp.Origin, cp.Tenants[0].Tenant, cp.Type, m.Subject())
	}
	return cp, ""
}

func (in *Inbox) checkpoint(ctx context.Context, m jetstream.Msg, ordered bool) error {
	if _, refusal := in.admitCheckpoint(m); refusal != "" {
		return in.reject(ctx, m, nil, refusal)
	}
	// Every message before this one in the batch is committed (store), so the proof holds now.
	if err := in.recordCheckpoints(ctx, []jetstream.Msg{m}, ordered); err != nil {
		if ctx.Err() != nil {
			return err // stopping, not failing
		}
		in.Logger.Warn("inbox: checkpoint not recorded, will be redelivered", "subject", m.Subject(), "err", err)
		return err
	}
	return nil
}

// beat hands one origin beat to OnBeat and acks it; a beat that does not decode or rides another
// origin's subject is recorded and terminated (invariant 12).
func (in *Inbox) beat(ctx context.Context, m jetstream.Msg) error {
	b, err := wire.DecodeBeat(m.Data())
	if err != nil {
		return in.reject(ctx, m, nil, err.Error())
	}
	if sender, ok := wire.BeatSender(m.Subject()); !ok || sender != b.Origin {
		return in.reject(ctx, m, nil, fmt.Sprintf("%s: beat claims origin %q on subject %s", wire.DropForgedSender, b.Origin, m.Subject()))
	}
	if in.OnBeat != nil {
		if err := in.OnBeat(ctx, b); err != nil {
			in.Logger.Warn("inbox: beat not handled, will be redelivered", "origin", b.Origin, "err", err)
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
		_ = m.NakWithDelay(wire.RetryDelay(RetryBase, delivered))
		return
	}
	if err := in.reject(ctx, m, nil, fmt.Sprintf("given up after %d deliveries: %v", delivered, cause)); err != nil {
		in.Logger.Error("inbox: could not record a dead message; it will be redelivered", "subject", m.Subject(), "err", err)
		_ = m.NakWithDelay(wire.RetryDelay(RetryBase, delivered))
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
