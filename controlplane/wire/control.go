package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/store"
)

// Handler acts on one accepted control message. Returning an error wrapping ErrPermanent
// terminates the message (it can never succeed); any other error redelivers it after a delay.
type Handler func(ctx context.Context, env Envelope, attachment []byte) error

// BatchHandler acts on a run of consecutive accepted messages of one kind, all or nothing. When
// it fails, each message of the run goes to the kind's Handler alone, so one bad message is
// isolated instead of failing the run.
type BatchHandler func(ctx context.Context, envs []Envelope, attachments [][]byte) error

// AheadHandler looks at an accepted control message when the batch holding it is fetched, before
// any message of that batch is dispatched, so work that needs none of the messages ahead of it
// (asking an origin for the rest of a truncated answer while that answer's bundles are still being
// stored) overlaps theirs. It changes nothing the message's Handler relies on, which still runs in
// order; a failure is the AheadHandler's to log.
type AheadHandler func(ctx context.Context, env Envelope, attachment []byte)

// ErrPermanent marks a handler failure that retrying cannot fix (e.g. an inconsistent bundle).
var ErrPermanent = errors.New("permanent failure")

// Permanent reports whether a handler's failure can never succeed on redelivery: ErrPermanent, a
// refusal of the input by SQL (store.ErrInvalidInput, SQLSTATE 22023) or a body that does not
// decode. Such a message is dead at once instead of retried (invariant 13).
func Permanent(err error) bool {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	return errors.Is(err, ErrPermanent) || errors.Is(err, store.ErrInvalidInput) ||
		errors.As(err, &syntax) || errors.As(err, &typeErr)
}

// Defaults of a Control's retry budget, used where a field is left zero.
const (
	MaxDeliverDefault = 10              // deliveries of one message before it is dead
	RetryBaseDefault  = 2 * time.Second // the first retry's delay; each further one doubles
	retryMax          = time.Minute     // the longest delay between two deliveries
)

// ControlAckWait is how long the control consumers wait for a delivered message's ack before the
// broker delivers it again (a handler that crashed, or a replica that stopped mid-batch). With
// MaxDeliverDefault and RetryDelay it bounds how long after its first delivery a control message
// can still be handled: redelivery.AnswerGraceDefault is derived from that horizon.
const ControlAckWait = time.Minute

// RetryDelay is the delay before delivery n+1 of a message that failed delivery n (n >= 1):
// base x 2^(n-1), at most a minute.
func RetryDelay(base time.Duration, n uint64) time.Duration {
	d := base
	for i := uint64(1); i < n && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// Control is a service's control-message endpoint: a durable JetStream consumer over its directed
// inbox and the broadcast inbox, the receive seam in front of every handler, and a publisher.
type Control struct {
	JS       jetstream.JetStream
	Seam     *Seam
	Logger   *slog.Logger
	handlers map[string]Handler
	batches  map[string]BatchHandler
	ahead    map[string]AheadHandler
	// Tap, when set, sees every message the consumer receives before the seam (tests use it to
	// forward one service's traffic to another's seam, proving the seam drops it).
	Tap func(subject string, data []byte)
	// Lose, when set, is fault injection at the receive seam: a message it returns true for is
	// acknowledged and never acted on, as if the broker had lost it on the way (tests prove that
	// what is lost is asked again).
	Lose func(subject string, data []byte) bool
	// MaxDeliver bounds the deliveries of one message (MaxDeliverDefault when zero); RetryBase is
	// the first retry's delay, doubling per delivery up to a minute (RetryBaseDefault when zero).
	MaxDeliver int
	RetryBase  time.Duration
	// OnDead, when set, sees each message given up on, with the reason: "permanent" (a failure
	// retrying cannot fix) or "max_deliver" (its delivery budget spent). The node counts them.
	OnDead func(env Envelope, reason string)

	finished atomic.Int64
}

// Finished counts messages this endpoint is done with (acted on, dropped, or refused).
func (c *Control) Finished() int64 { return c.finished.Load() }

// Handle registers the handler for kind. Call before Run.
func (c *Control) Handle(kind string, h Handler) {
	if c.handlers == nil {
		c.handlers = map[string]Handler{}
	}
	c.handlers[kind] = h
}

// HandleBatch registers a batch handler for kind (which must also have a Handler).
func (c *Control) HandleBatch(kind string, h BatchHandler) {
	if c.batches == nil {
		c.batches = map[string]BatchHandler{}
	}
	c.batches[kind] = h
}

// HandleAhead registers kind's ahead handler (which runs besides, never instead of, its Handler).
// Call before Run.
func (c *Control) HandleAhead(kind string, h AheadHandler) {
	if c.ahead == nil {
		c.ahead = map[string]AheadHandler{}
	}
	c.ahead[kind] = h
}

// Run consumes control messages until ctx ends. Each message is acked after its handler returns
// nil: a crash mid-handler redelivers it.
func (c *Control) Run(ctx context.Context) error {
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = MaxDeliverDefault
	}
	if c.RetryBase <= 0 {
		c.RetryBase = RetryBaseDefault
	}
	// The consumer of the layout before the sender joined the subject matches nothing any more:
	// removed, best effort (absent, or not permitted, changes nothing) and beside the start, never
	// before it: a request the broker's permissions refuse is never answered, and waiting for it
	// held the start for the client's API timeout (5 s).
	cleanupCtx, stopCleanup := context.WithCancel(ctx)
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		_ = c.JS.DeleteConsumer(cleanupCtx, ControlStream, LegacyControlDurable(c.Seam.Self))
	}()
	defer func() { stopCleanup(); <-cleaned }()
	// One single-filter durable per control filter (the directed inbox, the broadcast inbox), so
	// the broker's permissions can pin each consumer's name and filter (wire/layout.go).
	var consumers []jetstream.Consumer
	for _, filter := range ControlFilters(c.Seam.Self) {
		cons, err := c.JS.CreateOrUpdateConsumer(ctx, ControlStream, jetstream.ConsumerConfig{
			Durable:       ControlDurable(c.Seam.Self, filter),
			FilterSubject: filter,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       ControlAckWait,
			MaxAckPending: 256,
			// A bound on redeliveries after a crash mid-handler too (AckWait expiry), not only on Naks.
			MaxDeliver:    c.MaxDeliver,
			DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while starting: not a failure
			}
			return fmt.Errorf("control consumer for %s on %s: %w", c.Seam.Self, filter, err)
		}
		consumers = append(consumers, cons)
	}
	var wg sync.WaitGroup
	for _, cons := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.consume(ctx, cons)
		}()
	}
	wg.Wait()
	return nil
}

// consume fetches from one control consumer and dispatches until ctx ends.
func (c *Control) consume(ctx context.Context, cons jetstream.Consumer) {
	logger := c.logger()
	feed := NewFeed(cons, 64)
	defer feed.Stop()
	for ctx.Err() == nil {
		msgs, err := feed.Fetch(ctx, 64, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Warn("control: fetch failed", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		c.dispatchAll(ctx, msgs)
	}
}

// accepted is a message that passed the seam.
type accepted struct {
	msg        jetstream.Msg
	env        Envelope
	attachment []byte
}

// dispatchAll runs one fetched batch through the seam, shows the accepted messages to their
// kinds' ahead handlers, then hands runs of consecutive messages of a batch-handled kind to their
// batch handler and everything else to its handler, in order.
func (c *Control) dispatchAll(ctx context.Context, msgs []jetstream.Msg) {
	var passed []accepted
	for _, msg := range msgs {
		if c.Tap != nil {
			c.Tap(msg.Subject(), msg.Data())
		}
		if c.Lose != nil && c.Lose(msg.Subject(), msg.Data()) {
			_ = msg.Ack()
			c.finished.Add(1)
			continue
		}
		env, attachment, ok := c.Seam.Accept(msg.Subject(), msg.Data())
		if !ok {
			_ = msg.Term() // dropped at the seam: never acted on, never redelivered
			c.finished.Add(1)
			continue
		}
		passed = append(passed, accepted{msg, env, attachment})
	}
	for _, a := range passed {
		if h := c.ahead[a.env.Kind]; h != nil {
			h(ctx, a.env, a.attachment)
		}
	}
	var run []accepted
	flush := func() {
		if len(run) > 0 {
			c.dispatchRun(ctx, run)
			run = nil
		}
	}
	for _, a := range passed {
		env := a.env
		if c.batches[env.Kind] == nil {
			flush()
			c.dispatch(ctx, a)
			continue
		}
		if len(run) > 0 && run[0].env.Kind != env.Kind {
			flush()
		}
		run = append(run, a)
	}
	flush()
}

func (c *Control) dispatchRun(ctx context.Context, run []accepted) {
	envs := make([]Envelope, len(run))
	attachments := make([][]byte, len(run))
	for i, a := range run {
		envs[i], attachments[i] = a.env, a.attachment
	}
	if err := c.batches[run[0].env.Kind](ctx, envs, attachments); err == nil {
		for _, a := range run {
			_ = a.msg.Ack()
			c.finished.Add(1)
		}
		return
	}
	for _, a := range run {
		c.dispatch(ctx, a)
	}
}

func (c *Control) dispatch(ctx context.Context, a accepted) {
	defer c.finished.Add(1)
	logger := c.logger()
	msg, env, attachment := a.msg, a.env, a.attachment
	h := c.handlers[env.Kind]
	if h == nil {
		logger.Debug("control: no handler for kind here", "kind", env.Kind, "from", env.From)
		_ = msg.Ack()
		return
	}
	err := h(ctx, env, attachment)
	if err == nil {
		_ = msg.Ack()
		return
	}
	delivered := uint64(1)
	if meta, merr := msg.Metadata(); merr == nil {
		delivered = meta.NumDelivered
	}
	switch {
	case Permanent(err):
		c.dead(msg, env, "permanent", delivered, err)
	case delivered >= uint64(c.MaxDeliver):
		c.dead(msg, env, "max_deliver", delivered, err)
	default:
		delay := RetryDelay(c.RetryBase, delivered)
		logger.Warn("control: handler failed, will retry", "kind", env.Kind, "from", env.From, "id", env.ID,
			"delivery", delivered, "max_deliver", c.MaxDeliver, "retry_in", delay, "err", err)
		_ = msg.NakWithDelay(delay)
	}
}

// dead gives up on a message: an ALARM log line naming it (the record), the counter, and Term.
func (c *Control) dead(msg jetstream.Msg, env Envelope, reason string, delivered uint64, err error) {
	c.logger().Error("control: ALARM dead message: given up, never retried", "reason", reason, "kind", env.Kind,
		"from", env.From, "id", env.ID, "deliveries", delivered, "err", err)
	_ = msg.Term()
	if c.OnDead != nil {
		c.OnDead(env, reason)
	}
}

func (c *Control) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// NewEnvelope addresses a control message from self to (empty: broadcast).
func NewEnvelope(kind, from, to string, body any) (Envelope, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return Envelope{}, fmt.Errorf("encode %s body: %w", kind, err)
	}
	return Envelope{V: Version, Kind: kind, ID: uuid.NewString(), From: from, To: to, SentAt: time.Now().UTC(), Body: raw}, nil
}

// Publish sends env (and its attachment) from its sender to its addressee's control inbox, or to
// the broadcast inbox, on the subject naming both (ControlSubjectFrom), and waits for JetStream's
// acknowledgement. The address is computed from the names alone, never taken from a message
// (invariant 12).
func Publish(ctx context.Context, js jetstream.JetStream, env Envelope, attachment []byte) error {
	to := env.To
	if to == "" {
		to = BroadcastInbox
	}
	if !ValidServiceName(env.From) || (to != BroadcastInbox && !ValidServiceName(to)) {
		return fmt.Errorf("%s from %q to %q: sender and recipient must name services", env.Kind, env.From, to)
	}
	data, err := Encode(env, attachment)
	if err != nil {
		return err
	}
	subject := ControlSubjectFrom(to, env.From)
	if _, err := js.Publish(ctx, subject, data); err != nil {
		return fmt.Errorf("publish %s to %s: %w", env.Kind, subject, err)
	}
	return nil
}

// PublishReply is Publish to env's addressee on the reply subject naming token (ReplySubject),
// or Publish itself when token is empty: the origin answering a request that named its own reply
// address. The sender is still env.From, bound by the subject (invariant 12).
func PublishReply(ctx context.Context, js jetstream.JetStream, env Envelope, token string) error {
	if token == "" {
		return Publish(ctx, js, env, nil)
	}
	if !ValidServiceName(env.From) || !ValidServiceName(env.To) || !ValidReplyToken(token) {
		return fmt.Errorf("%s from %q to %q on reply token %q: sender and recipient must name services, the token [a-z0-9-]{1,64}",
			env.Kind, env.From, env.To, token)
	}
	data, err := Encode(env, nil)
	if err != nil {
		return err
	}
	subject := ReplySubject(env.To, env.From, token)
	if _, err := js.Publish(ctx, subject, data); err != nil {
		return fmt.Errorf("publish %s to %s: %w", env.Kind, subject, err)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
