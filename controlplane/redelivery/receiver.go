// receiver.go: the consumer side. A Receiver stores the bundles that come back through
// streamseal.ingest with their identity intact and reports each origin's summary. A bundle that is
// not internally consistent (ids and payloads disagree, or it claims another origin's events) is
// refused whole.

package redelivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Receiver stores redelivered bundles and surfaces summaries for one service.
type Receiver struct {
	Pool    *pgxpool.Pool
	JS      jetstream.JetStream // for the follow-ups of truncated answers; nil: none sent
	Service string
	Logger  *slog.Logger
	Metrics *metrics.Instruments // nil: not measured
	// OnSummary, when set, observes every summary an origin sends this service.
	OnSummary func(wire.RedeliverySummary)
	// AcceptUnservable records every type_seq range an origin says it cannot serve as an accepted
	// loss of the lane (streamseal.accept_loss), so the lane's floor moves past it and nobody asks
	// for it again. Set by the control plane once lanes exist.
	AcceptUnservable bool

	bundles, stored, refused atomic.Int64
	followUps                atomic.Int64
}

// FollowUps counts the requests sent for the rest of a truncated answer.
func (r *Receiver) FollowUps() int64 { return r.followUps.Load() }

// Counts: bundles received, events newly stored from them, bundles refused.
func (r *Receiver) Counts() (bundles, stored, refused int64) {
	return r.bundles.Load(), r.stored.Load(), r.refused.Load()
}

// Register installs the bundle and summary handlers on control.
func (r *Receiver) Register(control *wire.Control) {
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	control.Handle(wire.KindRedeliveryBundle, r.onBundle)
	control.HandleBatch(wire.KindRedeliveryBundle, r.onBundles)
	control.Handle(wire.KindRedeliverySummary, r.onSummary)
}

func (r *Receiver) onBundle(ctx context.Context, env wire.Envelope, attachment []byte) error {
	r.bundles.Add(1)
	copies, err := Unbundle(env, attachment)
	if err != nil {
		r.refused.Add(1)
		return fmt.Errorf("%w: %v", wire.ErrPermanent, err)
	}
	added, err := store.EventsIngest(ctx, r.Pool, copies)
	if err != nil {
		if errors.Is(err, store.ErrInvalidInput) {
			r.refused.Add(1)
			return fmt.Errorf("%w: bundle from %s refused by ingest: %v", wire.ErrPermanent, env.From, err)
		}
		return err
	}
	r.stored.Add(int64(len(added)))
	return nil
}

// onBundles stores a run of bundles in one ingest: all or nothing. Any bundle that does not
// unbundle cleanly fails the run, and the control endpoint then retries each one alone.
func (r *Receiver) onBundles(ctx context.Context, envs []wire.Envelope, attachments [][]byte) error {
	var copies []store.EventCopy
	for i, env := range envs {
		c, err := Unbundle(env, attachments[i])
		if err != nil {
			return err
		}
		copies = append(copies, c...)
	}
	added, err := store.EventsIngest(ctx, r.Pool, copies)
	if err != nil {
		return err
	}
	r.bundles.Add(int64(len(envs)))
	r.stored.Add(int64(len(added)))
	return nil
}

func (r *Receiver) onSummary(ctx context.Context, env wire.Envelope, _ []byte) error {
	var s wire.RedeliverySummary
	if err := strictJSON(env.Body, &s); err != nil {
		return fmt.Errorf("%w: summary from %s: %v", wire.ErrPermanent, env.From, err)
	}
	for _, u := range s.Unservable {
		r.Logger.Warn("repair: origin cannot re-deliver", "origin", env.From, "request", s.RequestID,
			"tenant", u.Tenant, "type", u.Type, "reason", u.Reason, "type_seqs", u.TypeSeqs, "origin_seqs", u.OriginSeqs)
		if r.AcceptUnservable && len(u.TypeSeqs) > 0 && u.Type != "" {
			if err := store.LaneAcceptLoss(ctx, r.Pool, env.From, u.Tenant, u.Type, u.TypeSeqs, u.Reason); err != nil {
				return err
			}
		}
	}
	r.Logger.Info("repair: redelivery finished", "origin", env.From, "request", s.RequestID, "shipped", s.Shipped,
		"bundles", s.Bundles, "truncated", s.Truncated)
	if err := r.answered(ctx, env.From, s); err != nil {
		return err
	}
	if r.OnSummary != nil {
		r.OnSummary(s)
	}
	return nil
}

// answered marks the request the summary answers and, when the origin's cap truncated the answer,
// asks for the rest at once: the same request, continued after the last event shipped (invariant
// 14). A summary of a request this service did not send is logged and changes nothing.
func (r *Receiver) answered(ctx context.Context, origin string, s wire.RedeliverySummary) error {
	id, err := uuid.Parse(s.RequestID)
	if err != nil {
		r.Logger.Warn("repair: summary names no request id this service could have sent", "origin", origin, "request", s.RequestID)
		return nil
	}
	sent, ok, err := store.SentRequestAnswered(ctx, r.Pool, id, origin)
	if err != nil {
		return err
	}
	if !s.Truncated || r.JS == nil {
		return nil
	}
	if !ok {
		r.Logger.Warn("repair: a truncated answer to a request this service has no record of: not followed", "origin", origin,
			"request", s.RequestID)
		return nil
	}
	var rest wire.RedeliveryRequest
	if err := json.Unmarshal(sent.Request, &rest); err != nil {
		return fmt.Errorf("recorded request %s: %w", s.RequestID, err)
	}
	if s.ResumeAfter == nil || (rest.After != nil && !rest.After.Less(*s.ResumeAfter)) {
		// The rest must start after where this request started, or following would loop.
		r.Logger.Error("repair: a truncated answer does not move past its request's start: not followed", "origin", origin,
			"request", s.RequestID, "resume_after", s.ResumeAfter, "request_after", rest.After)
		return nil
	}
	rest.RequestID, rest.After = uuid.NewString(), s.ResumeAfter
	if err := Send(ctx, r.Pool, r.JS, r.Service, origin, store.SourceFollowUp, rest, id); err != nil {
		return err
	}
	r.followUps.Add(1)
	r.Metrics.RepairRequested(store.SourceFollowUp, origin)
	r.Logger.Info("repair: truncated answer followed by a request for the rest", "origin", origin, "request", s.RequestID,
		"follow_up", rest.RequestID, "after_stream", s.ResumeAfter.Stream, "after_version", s.ResumeAfter.Version)
	return nil
}

// Unbundle turns a bundle into copies with their original identity, refusing any bundle whose
// events and attachment disagree or that carries another origin's events.
func Unbundle(env wire.Envelope, attachment []byte) ([]store.EventCopy, error) {
	var b wire.Bundle
	if err := strictJSON(env.Body, &b); err != nil {
		return nil, fmt.Errorf("bundle from %s: %w", env.From, err)
	}
	if b.Origin != env.From {
		return nil, fmt.Errorf("bundle sent by %s claims origin %q: an origin re-delivers only its own lane", env.From, b.Origin)
	}
	if len(b.Events) == 0 {
		return nil, fmt.Errorf("bundle from %s holds no events", env.From)
	}
	total := 0
	for _, e := range b.Events {
		if e.Len < 0 || e.Len > len(attachment) {
			return nil, fmt.Errorf("bundle from %s: event %s claims %d payload bytes", env.From, e.ID, e.Len)
		}
		total += e.Len
	}
	if total != len(attachment) {
		return nil, fmt.Errorf("bundle from %s: events claim %d payload bytes, attachment holds %d", env.From, total, len(attachment))
	}
	copies := make([]store.EventCopy, len(b.Events))
	offset := 0
	for i, e := range b.Events {
		flags := store.Flags(e.Flags)
		if b.StateOnly {
			flags |= store.StateOnly
		}
		var metadata []byte
		if e.Metadata != "" {
			metadata = []byte(e.Metadata)
		}
		copies[i] = store.EventCopy{
			EventID: e.ID, Origin: b.Origin, OriginSeq: e.OriginSeq, TypeSeq: e.TypeSeq, Tenant: e.Tenant,
			StreamID: b.StreamID, StreamVersion: e.Version, EventType: e.Type, Flags: flags,
			Payload: attachment[offset : offset+e.Len : offset+e.Len], Metadata: metadata, OccurredAt: e.OccurredAt,
		}
		offset += e.Len
	}
	return copies, nil
}
