package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// Handler acts on one accepted control message. Returning an error wrapping ErrPermanent
// terminates the message (it can never succeed); any other error redelivers it after a delay.
type Handler func(ctx context.Context, env Envelope, attachment []byte) error

// BatchHandler acts on a run of consecutive accepted messages of one kind, all or nothing. When
// it fails, each message of the run goes to the kind's Handler alone, so one bad message is
// isolated instead of failing the run.
type BatchHandler func(ctx context.Context, envs []Envelope, attachments [][]byte) error

// ErrPermanent marks a handler failure that retrying cannot fix (e.g. an inconsistent bundle).
var ErrPermanent = errors.New("permanent failure")

// Control is a service's control-message endpoint: a durable JetStream consumer over its directed
// inbox and the broadcast inbox, the receive seam in front of every handler, and a publisher.
type Control struct {
	JS       jetstream.JetStream
	Seam     *Seam
	Logger   *slog.Logger
	handlers map[string]Handler
	batches  map[string]BatchHandler
	// Tap, when set, sees every message the consumer receives before the seam (tests use it to
	// forward one service's traffic to another's seam, proving the seam drops it).
	Tap func(subject string, data []byte)

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

// Run consumes control messages until ctx ends. Each message is acked after its handler returns
// nil: a crash mid-handler redelivers it.
func (c *Control) Run(ctx context.Context) error {
	logger := c.logger()
	cons, err := c.JS.CreateOrUpdateConsumer(ctx, ControlStream, jetstream.ConsumerConfig{
		Durable:        "streamseal-control-" + c.Seam.Self,
		FilterSubjects: []string{ControlSubject(c.Seam.Self), ControlSubject(BroadcastInbox)},
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        time.Minute,
		MaxAckPending:  256,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("control consumer for %s: %w", c.Seam.Self, err)
	}
	for ctx.Err() == nil {
		msgs, err := FetchAvailable(ctx, cons, 64, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			logger.Warn("control: fetch failed", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		c.dispatchAll(ctx, msgs)
	}
	return nil
}

// accepted is a message that passed the seam.
type accepted struct {
	msg        jetstream.Msg
	env        Envelope
	attachment []byte
}

// dispatchAll runs one fetched batch through the seam, then hands runs of consecutive messages
// of a batch-handled kind to their batch handler and everything else to its handler, in order.
func (c *Control) dispatchAll(ctx context.Context, msgs []jetstream.Msg) {
	var run []accepted
	flush := func() {
		if len(run) > 0 {
			c.dispatchRun(ctx, run)
			run = nil
		}
	}
	for _, msg := range msgs {
		if c.Tap != nil {
			c.Tap(msg.Subject(), msg.Data())
		}
		env, attachment, ok := c.Seam.Accept(msg.Subject(), msg.Data())
		if !ok {
			_ = msg.Term() // dropped at the seam: never acted on, never redelivered
			c.finished.Add(1)
			continue
		}
		a := accepted{msg, env, attachment}
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
	switch err := h(ctx, env, attachment); {
	case err == nil:
		_ = msg.Ack()
	case errors.Is(err, ErrPermanent):
		logger.Error("control: message refused", "kind", env.Kind, "from", env.From, "id", env.ID, "err", err)
		_ = msg.Term()
	default:
		logger.Warn("control: handler failed, will retry", "kind", env.Kind, "from", env.From, "id", env.ID, "err", err)
		_ = msg.NakWithDelay(2 * time.Second)
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

// Publish sends env (and its attachment) to its addressee's control inbox, or to the broadcast
// inbox, and waits for JetStream's acknowledgement.
func Publish(ctx context.Context, js jetstream.JetStream, env Envelope, attachment []byte) error {
	to := env.To
	if to == "" {
		to = BroadcastInbox
	}
	return PublishTo(ctx, js, ControlSubject(to), env, attachment)
}

// PublishTo sends env to an explicit control subject: an origin's address as learned from its
// checkpoints. Only subjects under streamseal.ctl. are accepted.
func PublishTo(ctx context.Context, js jetstream.JetStream, subject string, env Envelope, attachment []byte) error {
	if !strings.HasPrefix(subject, controlPrefix) || strings.ContainsAny(subject[len(controlPrefix):], ".*> ") {
		return fmt.Errorf("%q is not a control address", subject)
	}
	data, err := Encode(env, attachment)
	if err != nil {
		return err
	}
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
