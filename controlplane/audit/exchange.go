// exchange.go: the consumer's half of the manifest exchange: ask an origin (directed to the
// control address its checkpoints announced), collect every chunk of the answer behind the compare
// gate, and the audit command's way of listening beside a running control plane.

package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/streamseal/streamseal/controlplane/wire"
)

// Register installs the answer handler on control.
func (a *Auditor) Register(control *wire.Control) {
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
	ch := a.waiting[ans.RequestID]
	a.mu.Unlock()
	if ch == nil {
		a.declined.Add(1)
		a.Metrics.CompareDeclined(ans.Origin)
		return nil
	}
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

// ask sends a manifest request and collects every chunk of its answer.
func (a *Auditor) ask(ctx context.Context, origin, control string, req wire.ManifestRequest) ([]wire.ManifestAnswer, error) {
	req.RequestID = uuid.NewString()
	ch := make(chan wire.ManifestAnswer, 4)
	a.mu.Lock()
	if a.waiting == nil {
		a.waiting = map[string]chan wire.ManifestAnswer{}
	}
	a.waiting[req.RequestID] = ch
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
	if err := wire.PublishTo(ctx, a.JS, control, env, nil); err != nil {
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
			if len(out) == ans.Chunks {
				sort.Slice(out, func(i, j int) bool { return out[i].Chunk < out[j].Chunk })
				return out, nil
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
	sub, err := nc.Subscribe(wire.ControlSubject(a.Service), func(m *nats.Msg) {
		if env, _, err := wire.Decode(m.Data, 0); err == nil && env.Kind == wire.KindManifestAnswer {
			_ = a.Accept(env)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listen for manifest answers: %w", err)
	}
	defer sub.Unsubscribe()
	return a.Run(ctx, scope)
}
