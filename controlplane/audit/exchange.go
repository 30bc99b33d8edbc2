// exchange.go: the consumer's half of the manifest exchange: ask an origin (directed to the
// control address its checkpoints announced), collect every chunk of the answer behind the compare
// gate, and the audit command's way of listening beside a running control plane.

package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/streamseal/streamseal/controlplane/wire"
)

// Register installs the answer handler on control.
func (a *Auditor) Register(control *wire.Control) {
	a.seam = control.Seam
	control.Handle(wire.KindManifestAnswer, a.onAnswer)
}

// Accept feeds an answer envelope received outside the control endpoint (the audit command
// listens on the service's control subject beside the running control plane).
func (a *Auditor) Accept(env wire.Envelope) error { return a.onAnswer(context.Background(), env, nil) }

func (a *Auditor) onAnswer(_ context.Context, env wire.Envelope, _ []byte) error {
	var ans wire.ManifestAnswer
	if err := json.Unmarshal(env.Body, &ans); err != nil || ans.Origin != env.From {
		return fmt.Errorf("%w: manifest answer from %s is malformed", wire.ErrPermanent, env.From)
	}
	a.mu.Lock()
	w, ok := a.waiting[ans.RequestID]
	a.mu.Unlock()
	if !ok || w.origin != env.From {
		// Invariant 12: an answer counts only for a request this auditor is waiting for, from
		// the origin it asked (the seam already bound env.From to the subject).
		a.declined.Add(1)
		a.Metrics.CompareDeclined(ans.Origin)
		a.drop(wire.DropUnsolicited, env, "manifest answer to request "+ans.RequestID+" this auditor is not waiting for from "+env.From)
		return nil
	}
	ch := w.ch
	// The compare gate: the waiting comparison holds at most a few chunks; anything beyond is
	// declined and counted, never queued in memory.
	select {
	case ch <- ans:
	default:
		a.declined.Add(1)
		a.Metrics.CompareDeclined(ans.Origin)
	}
	return nil
}

// waitingAnswer is a manifest request in flight: the origin asked and where its chunks go.
type waitingAnswer struct {
	origin string
	ch     chan wire.ManifestAnswer
}

// drop counts (at the control endpoint's seam, when registered) and logs a refused answer.
func (a *Auditor) drop(reason string, env wire.Envelope, detail string) {
	if a.seam != nil {
		a.seam.Count(reason, env, detail)
		return
	}
	slog.Warn("audit: manifest answer dropped", "reason", reason, "from", env.From, "detail", detail)
}

// ask sends a manifest request and collects every chunk of its answer.
func (a *Auditor) ask(ctx context.Context, origin string, req wire.ManifestRequest) ([]wire.ManifestAnswer, error) {
	req.RequestID = uuid.NewString()
	ch := make(chan wire.ManifestAnswer, 4)
	a.mu.Lock()
	if a.waiting == nil {
		a.waiting = map[string]waitingAnswer{}
	}
	a.waiting[req.RequestID] = waitingAnswer{origin: origin, ch: ch}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waiting, req.RequestID)
		a.mu.Unlock()
	}()
	env, err := wire.NewEnvelope(wire.KindManifestRequest, a.Service, origin, req)
	if err != nil {
		return nil, err
	}
	if err := wire.Publish(ctx, a.JS, env, nil); err != nil {
		return nil, err
	}
	a.Metrics.ManifestRequested(origin, req.Level == wire.LevelStreams)
	var out []wire.ManifestAnswer
	timeout := time.NewTimer(a.Limits.AnswerTimeout)
	defer timeout.Stop()
	for {
		select {
		case ans := <-ch:
			out = append(out, ans)
			if whole, ok := wholeAnswer(out); ok {
				return whole, nil
			}
		case <-timeout.C:
			return nil, fmt.Errorf("no complete %s manifest answer from %s within %s", req.Level, origin, a.Limits.AnswerTimeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// RunBeside runs one audit from outside the service's control plane (the audit command): the
// answers land on the service's control subject, which the running control plane consumes too
// (and ignores: it is not waiting for them), so this listens there beside it.
func (a *Auditor) RunBeside(ctx context.Context, nc *nats.Conn, scope Scope) ([]Finding, error) {
	// The directed filter only, through a seam of its own: the sender is the one the subject
	// names (invariant 12).
	seam := &wire.Seam{Self: a.Service, Logger: a.Logger}
	sub, err := nc.Subscribe(wire.ControlFilters(a.Service)[0], func(m *nats.Msg) {
		if env, _, ok := seam.Accept(m.Subject, m.Data); ok && env.Kind == wire.KindManifestAnswer {
			_ = a.Accept(env)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listen for manifest answers: %w", err)
	}
	defer sub.Unsubscribe()
	return a.Run(ctx, scope)
}
