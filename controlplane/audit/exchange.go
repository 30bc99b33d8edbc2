// exchange.go: the consumer's half of the manifest exchange: ask an origin (directed to the
// control address its checkpoints announced), collect every chunk of the answer for the request
// that waits for it, and the audit command's way of asking beside a running control plane (on a
// reply address of its own, so the running service never sees those answers).

package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
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
// listens on its own reply address beside the running control plane).
func (a *Auditor) Accept(env wire.Envelope) error { return a.onAnswer(context.Background(), env, nil) }

// onAnswer files one chunk with the request waiting for it. It never blocks and never drops a
// chunk of a waited-for answer: the chunk is stored under its number in the request's own
// collection, bounded by what the request holds (Limits.MaxAnswerChunks chunks of at most the
// request's MaxDigests). Chunks no request waits for are declined and counted.
func (a *Auditor) onAnswer(_ context.Context, env wire.Envelope, _ []byte) error {
	var ans wire.ManifestAnswer
	if err := json.Unmarshal(env.Body, &ans); err != nil || ans.Origin != env.From {
		return fmt.Errorf("%w: manifest answer from %s is malformed", wire.ErrPermanent, env.From)
	}
	a.mu.Lock()
	p, ok := a.waiting[ans.RequestID]
	if !ok || p.origin != env.From {
		a.mu.Unlock()
		// Invariant 12: an answer counts only for a request this auditor is waiting for, from
		// the origin it asked (the seam already bound env.From to the subject).
		a.decline(wire.DropUnsolicited, env, ans, "manifest answer to request "+ans.RequestID+" this auditor is not waiting for from "+env.From)
		return nil
	}
	reason, detail := p.take(ans)
	a.mu.Unlock()
	select { // a wake-up for the waiter, never data: one pending is enough
	case p.arrived <- struct{}{}:
	default:
	}
	switch reason {
	case "":
	case wire.DropReplayed:
		a.drop(reason, env, detail) // a chunk the request already holds (the origin answered twice)
	default:
		a.decline(reason, env, ans, detail)
	}
	return nil
}

// decline counts (declined, the metric, the seam) and logs a chunk no waiting request takes.
func (a *Auditor) decline(reason string, env wire.Envelope, ans wire.ManifestAnswer, detail string) {
	a.declined.Add(1)
	a.Metrics.CompareDeclined(ans.Origin)
	a.drop(reason, env, detail)
}

// drop counts (at the control endpoint's seam, when registered) and logs a refused answer.
func (a *Auditor) drop(reason string, env wire.Envelope, detail string) {
	if a.seam != nil {
		a.seam.Count(reason, env, detail)
		return
	}
	slog.Warn("audit: manifest answer dropped", "reason", reason, "from", env.From, "detail", detail)
}

// pendingAnswer is a manifest request in flight: the origin asked and every chunk of its answer
// received so far, by chunk number. The Auditor's mu guards it.
type pendingAnswer struct {
	origin     string
	maxDigests int // digests a chunk may carry (the request's MaxDigests; 0: not bounded here)
	maxChunks  int // chunks the request holds
	chunks     map[int]wire.ManifestAnswer
	total      int   // the answer's declared chunk count (0 until a chunk arrived)
	err        error // why the answer cannot be taken whole, once it cannot
	arrived    chan struct{}
}

// take files ans, or says why not: DropReplayed for a chunk already held, DropOutOfScope (and
// the request failed, so the waiter stops at once) for a chunk that cannot belong to an answer
// the request can hold.
func (p *pendingAnswer) take(ans wire.ManifestAnswer) (reason, detail string) {
	refuse := func(err error) (string, string) {
		if p.err == nil {
			p.err = err
		}
		return wire.DropOutOfScope, err.Error()
	}
	switch {
	case p.err != nil:
		return wire.DropOutOfScope, "the answer to request " + ans.RequestID + " was already refused: " + p.err.Error()
	case ans.Chunks < 1 || ans.Chunk < 1 || ans.Chunk > ans.Chunks:
		return refuse(fmt.Errorf("chunk %d of %d is not a chunk of an answer", ans.Chunk, ans.Chunks))
	case ans.Chunks > p.maxChunks:
		return refuse(fmt.Errorf("the answer has %d chunks, more than the %d a request holds (ask for more digests a chunk)", ans.Chunks, p.maxChunks))
	case p.total != 0 && ans.Chunks != p.total:
		return refuse(fmt.Errorf("chunk %d says the answer has %d chunks, an earlier one said %d", ans.Chunk, ans.Chunks, p.total))
	case p.maxDigests > 0 && len(ans.Digests) > p.maxDigests:
		return refuse(fmt.Errorf("chunk %d carries %d digests, more than the %d a chunk was asked to hold", ans.Chunk, len(ans.Digests), p.maxDigests))
	case p.maxDigests > 0 && len(ans.Ranges) > p.maxDigests:
		return refuse(fmt.Errorf("chunk %d carries %d range folds, more than the %d a chunk was asked to hold", ans.Chunk, len(ans.Ranges), p.maxDigests))
	}
	// Invariant 14: the chunks of one answer cover one window of one generation, or the window
	// could certify over parts that were never one answer.
	for _, held := range p.chunks {
		if ans.Watermark != held.Watermark || ans.Generation != held.Generation {
			return refuse(fmt.Errorf("chunk %d covers up to %d at generation %d, chunk %d up to %d at generation %d: not one answer",
				ans.Chunk, ans.Watermark, ans.Generation, held.Chunk, held.Watermark, held.Generation))
		}
		break
	}
	if _, held := p.chunks[ans.Chunk]; held {
		return wire.DropReplayed, fmt.Sprintf("chunk %d of request %s again", ans.Chunk, ans.RequestID)
	}
	p.total = ans.Chunks
	p.chunks[ans.Chunk] = ans
	return "", ""
}

// complete returns the answer in chunk order once every chunk is held.
func (p *pendingAnswer) complete() ([]wire.ManifestAnswer, bool) {
	if p.total == 0 || len(p.chunks) != p.total {
		return nil, false
	}
	out := make([]wire.ManifestAnswer, 0, p.total)
	for _, c := range p.chunks {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Chunk < out[j].Chunk })
	return out, true
}

// ask sends a manifest request and collects every chunk of its answer. It gives up when no new
// chunk arrived for Limits.AnswerTimeout (a long answer that keeps arriving is waited for), or at
// once when the answer cannot be held (more chunks than Limits.MaxAnswerChunks).
func (a *Auditor) ask(ctx context.Context, origin string, req wire.ManifestRequest) ([]wire.ManifestAnswer, error) {
	req.RequestID = uuid.NewString()
	req.Reply = a.Reply
	p := &pendingAnswer{origin: origin, maxDigests: req.MaxDigests, maxChunks: a.Limits.withDefaults().MaxAnswerChunks,
		chunks: map[int]wire.ManifestAnswer{}, arrived: make(chan struct{}, 1)}
	a.mu.Lock()
	if a.waiting == nil {
		a.waiting = map[string]*pendingAnswer{}
	}
	a.waiting[req.RequestID] = p
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
	timeout := a.Limits.withDefaults().AnswerTimeout
	idle := time.NewTimer(timeout)
	defer idle.Stop()
	held := 0
	for {
		select {
		case <-p.arrived:
			a.mu.Lock()
			out, done := p.complete()
			failed, n := p.err, len(p.chunks)
			a.mu.Unlock()
			switch {
			case failed != nil:
				return nil, fmt.Errorf("%s manifest answer from %s refused: %w", req.Level, origin, failed)
			case done:
				return out, nil
			case n > held:
				held = n
				idle.Reset(timeout)
			}
		case <-idle.C:
			a.mu.Lock()
			n, total := len(p.chunks), p.total
			a.mu.Unlock()
			return nil, fmt.Errorf("no complete %s manifest answer from %s within %s of the request or its last chunk (%d of %d chunks held)",
				req.Level, origin, timeout, n, total)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// RunBeside runs one audit from outside the service's control plane (the audit command, connected
// as the service's own user). Its requests name a reply token of its own, so origins answer on
// wire.ReplySubject(service, origin, token): this process listens there, and the running control
// plane's durables (streamseal.ctl.<service>.*) never match it, so the service neither sees nor
// declines these answers.
func (a *Auditor) RunBeside(ctx context.Context, nc *nats.Conn, scope Scope) ([]Finding, error) {
	token := "audit-" + uuid.NewString()
	// A seam of its own, accepting only its reply subjects: the sender is the one the subject
	// names (invariant 12), and drops are counted there.
	seam := &wire.Seam{Self: a.Service, Reply: token, Logger: a.Logger}
	a.seam, a.Reply = seam, token
	defer func() { a.Reply = "" }()
	sub, err := nc.Subscribe(wire.ReplyFilter(a.Service, token), func(m *nats.Msg) {
		if env, _, ok := seam.Accept(m.Subject, m.Data); ok && env.Kind == wire.KindManifestAnswer {
			_ = a.Accept(env)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listen for manifest answers: %w", err)
	}
	defer sub.Unsubscribe()
	// The server has the subscription before any request names the token.
	if err := nc.Flush(); err != nil {
		return nil, fmt.Errorf("listen for manifest answers: %w", err)
	}
	return a.Run(ctx, scope)
}
