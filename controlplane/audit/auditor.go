// auditor.go: the consumer side. For each origin it knows (the known_origins table, so the first
// audit after a restart exchanges at once) an Auditor calls the seal generation guard, asks a
// directed type-level manifest for the window above its seal, compares (SQL: compare_type_digests),
// drills down into mismatched types with stream-level pages (compare_stream_digests), hands every
// divergent bucket to the durable repair ledger (ledger_observe: cooldown, backoff, budget), sends
// capped deficit repairs batched per (tenant, type), alarms on identity mismatches and local extras
// (never a request, never a deletion), and advances the seal only when the window matched whole in
// one chunk.

package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Limits of one audit (the proposal's caps).
type Limits struct {
	MaxDrillDownTypes int           // mismatched types drilled into per origin (default 10)
	MaxPages          int           // stream-level pages followed per origin (default 10)
	MaxDigests        int           // digests per manifest chunk asked for (default 500)
	MaxRequests       int           // repair requests per audit (default 25)
	AnswerTimeout     time.Duration // how long to wait for an origin's answer (default 30s)
}

// Defaults of Limits, used where a field is left zero.
const (
	MaxDrillDownTypesDefault = 10
	MaxPagesDefault          = 10
	MaxDigestsDefault        = 500
	MaxRequestsDefault       = 25
	AnswerTimeoutDefault     = 30 * time.Second
)

func (l Limits) withDefaults() Limits {
	if l.MaxDrillDownTypes <= 0 {
		l.MaxDrillDownTypes = MaxDrillDownTypesDefault
	}
	if l.MaxPages <= 0 {
		l.MaxPages = MaxPagesDefault
	}
	if l.MaxDigests <= 0 {
		l.MaxDigests = MaxDigestsDefault
	}
	if l.MaxRequests <= 0 {
		l.MaxRequests = MaxRequestsDefault
	}
	if l.AnswerTimeout <= 0 {
		l.AnswerTimeout = AnswerTimeoutDefault
	}
	return l
}

// Auditor runs audits for one service.
type Auditor struct {
	Pool    *pgxpool.Pool
	JS      jetstream.JetStream
	Service string
	Config  config.Config
	Limits  Limits
	Logger  *slog.Logger
	Metrics *metrics.Instruments // nil: not measured
	// OnProgress, when set, observes each stream page a drill-down compared (the audit command
	// prints it).
	OnProgress func(Progress)
	// Now is the ledger's clock (tests inject one); nil means the database's now().
	Now func() time.Time

	mu       sync.Mutex
	waiting  map[string]chan wire.ManifestAnswer
	declined atomic.Int64
	running  sync.Mutex // one audit (one comparison) at a time per auditor
}

// ErrAuditRunning is returned when an audit is asked for while this auditor runs one.
var ErrAuditRunning = errors.New("an audit is already running")

// Declined counts answer chunks nobody was waiting for (late, unsolicited, or over the gate).
func (a *Auditor) Declined() int64 { return a.declined.Load() }

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

// Finding is what one origin's audit found and did.
type Finding struct {
	Origin        string
	Skipped       string // why the round was skipped, if it was
	From, To      int64  // the window compared
	Divergent     []Bucket
	Requests      int // repair requests sent (or, in report-only, that would be sent)
	Sealed        bool
	SealedThrough int64
}

// Progress is how far one origin's drill-down has come: the origin's events (of the drilled types,
// in the window) covered by the stream pages compared so far, of its type-level total for them.
type Progress struct {
	Origin      string
	Done, Total int64
	Pages       int
}

// Bucket is one divergent (stream, tenant, type) bucket.
type Bucket struct {
	Stream, Tenant, Type, Reason string
	LocalN, OriginN              int64
}

// Scope narrows one audit: one origin (empty: all known), and Full compares the whole history
// from 0 instead of the window above the seal (what the sweep does; a full round never needs a
// seal to be right, so it is the check of the seals themselves).
type Scope struct {
	Origin string
	Full   bool
}

// RunOnce audits every known origin now.
func (a *Auditor) RunOnce(ctx context.Context) ([]Finding, error) { return a.Run(ctx, Scope{}) }

// Run audits the origins in scope now. One audit runs at a time: a second call while one runs is
// declined with ErrAuditRunning rather than queued.
func (a *Auditor) Run(ctx context.Context, scope Scope) ([]Finding, error) {
	if !a.running.TryLock() {
		a.declined.Add(1)
		a.Metrics.CompareDeclined(cmp.Or(scope.Origin, "all"))
		return nil, ErrAuditRunning
	}
	defer a.running.Unlock()
	a.Limits = a.Limits.withDefaults()
	origins, err := store.OriginsKnown(ctx, a.Pool)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, o := range origins {
		if scope.Origin != "" && o.Name != scope.Origin {
			continue
		}
		f, err := a.auditOrigin(ctx, o, scope.Full)
		if err != nil {
			return out, fmt.Errorf("audit of %s: %w", o.Name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func (a *Auditor) auditOrigin(ctx context.Context, o store.KnownOrigin, full bool) (Finding, error) {
	origin, control := o.Name, o.Control
	f := Finding{Origin: origin}
	guard, err := store.SealGenerationGuard(ctx, a.Pool, origin, o.Generation)
	if err != nil {
		return f, err
	}
	if guard == store.SealSkip {
		f.Skipped = "the origin's generation changed: seal reset, this round skipped"
		a.Logger.Warn("audit: origin generation changed; seal reset, round skipped", "origin", origin, "generation", o.Generation)
		return f, nil
	}
	if !full {
		if f.From, err = store.SealedThrough(ctx, a.Pool, origin); err != nil {
			return f, err
		}
	}
	consumed, err := store.SubscribedTypes(ctx, a.Pool, origin)
	if err != nil {
		return f, err
	}
	answers, err := a.ask(ctx, origin, control, wire.ManifestRequest{Level: wire.LevelTypes, From: f.From, To: 1 << 62, MaxDigests: a.Limits.MaxDigests})
	if err != nil {
		return f, err
	}
	f.To = answers[0].Watermark
	if err := a.applyCloses(ctx, origin, answers[0].Closes); err != nil {
		return f, err
	}
	var typeDigests []wire.ManifestDigest
	for _, ans := range answers {
		typeDigests = append(typeDigests, ans.Digests...)
	}
	mismatched, err := a.compareTypes(ctx, origin, f.From, f.To, typeDigests, consumed)
	if err != nil {
		return f, err
	}
	if len(mismatched) == 0 {
		if len(answers) == 1 {
			if f.SealedThrough, err = store.SealAdvance(ctx, a.Pool, origin, f.To); err != nil {
				return f, err
			}
			f.Sealed = true
		}
		return f, a.heal(ctx, a.Pool, origin, consumed, nil, "", "")
	}
	if len(mismatched) > a.Limits.MaxDrillDownTypes {
		mismatched = mismatched[:a.Limits.MaxDrillDownTypes]
	}
	buckets, decisions, err := a.drillDown(ctx, origin, control, f.From, f.To, mismatched, eventsOf(typeDigests, mismatched))
	if err != nil {
		return f, err
	}
	f.Divergent = buckets
	f.Requests, err = a.act(ctx, origin, control, f.From, f.To, decisions)
	return f, err
}

// applyCloses applies the origin's close-the-books floors to this store's copies, so closed
// history is not read as loss.
func (a *Auditor) applyCloses(ctx context.Context, origin string, closes []wire.StreamClose) error {
	if len(closes) == 0 {
		return nil
	}
	floors := make([]store.StreamClose, len(closes))
	for i, c := range closes {
		floors[i] = store.StreamClose{Tenant: c.Tenant, StreamID: c.StreamID, BelowVersion: c.BelowVersion}
	}
	removed, err := store.StreamClosesApply(ctx, a.Pool, origin, floors)
	if err != nil {
		return err
	}
	if removed > 0 {
		a.Logger.Info("audit: applied the origin's closed history to our copies", "origin", origin, "copies_removed", removed)
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

// compareTypes returns the event types whose type-level digests differ (any reason).
func (a *Auditor) compareTypes(ctx context.Context, origin string, from, to int64, digests []wire.ManifestDigest, consumed []string) ([]string, error) {
	started := time.Now()
	c := store.TypeComparison{Origin: origin, From: from, To: to, Consumed: consumed, Settle: a.Config.SettleWindow}
	for _, d := range digests {
		c.Digests = append(c.Digests, store.TypeDigest{Tenant: d.Tenant, EventType: d.Type, X0: d.X0, X1: d.X1, N: d.N})
	}
	mismatched, err := store.TypeDigestsCompare(ctx, a.Pool, c)
	if err == nil {
		a.Metrics.ManifestCompared(wire.LevelTypes, time.Since(started))
	}
	return mismatched, err
}

// drillDown walks stream-level pages of the mismatched types and returns the divergent buckets.
func (a *Auditor) drillDown(ctx context.Context, origin, control string, from, to int64, types []string, total int64) ([]Bucket, []store.LedgerDecision, error) {
	var out []Bucket
	var decided []store.LedgerDecision
	var done int64
	after := ""
	a.Metrics.DrillDown(origin)
	for page := 0; page < a.Limits.MaxPages; page++ {
		answers, err := a.ask(ctx, origin, control, wire.ManifestRequest{Level: wire.LevelStreams, From: from, To: to,
			Types: types, AfterStream: after, MaxDigests: a.Limits.MaxDigests})
		if err != nil {
			return nil, nil, err
		}
		var digests []wire.ManifestDigest
		for _, ans := range answers {
			digests = append(digests, ans.Digests...)
		}
		done += eventsOf(digests, types)
		if a.OnProgress != nil {
			a.OnProgress(Progress{Origin: origin, Done: done, Total: total, Pages: page + 1})
		}
		resume := answers[len(answers)-1].ResumeAfter
		buckets, decisions, err := a.compareStreams(ctx, origin, from, to, types, digests, after, resume)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, buckets...)
		decided = append(decided, decisions...)
		if resume == "" {
			return out, decided, nil
		}
		after = resume
	}
	a.Logger.Warn("audit: stream pages capped; the rest waits for the next audit", "origin", origin, "after", after)
	a.Metrics.PagesCapped(origin)
	return out, decided, nil
}

// compareStreams compares one stream-level page, feeds its divergent buckets to the ledger and
// heals the ledgered buckets of the page's range that now match, in one transaction.
func (a *Auditor) compareStreams(ctx context.Context, origin string, from, to int64, types []string, digests []wire.ManifestDigest, after, through string) ([]Bucket, []store.LedgerDecision, error) {
	started := time.Now()
	c := store.StreamComparison{Origin: origin, From: from, To: to, Types: types, Settle: a.Config.SettleWindow, After: after, Through: through}
	for _, d := range digests {
		c.Digests = append(c.Digests, store.StreamDigest{StreamID: d.Stream, Tenant: d.Tenant, EventType: d.Type, X0: d.X0, X1: d.X1, N: d.N})
	}
	tx, err := a.Pool.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback(ctx)
	diffs, err := store.StreamDigestsCompare(ctx, tx, c)
	if err != nil {
		return nil, nil, err
	}
	var decisions []store.LedgerDecision
	if len(diffs) > 0 {
		if decisions, err = store.LedgerObserve(ctx, tx, origin, diffs, a.ledgerPolicy(), a.now()); err != nil {
			return nil, nil, err
		}
	}
	// Ledgered buckets of this page's types and stream range that the comparison no longer
	// returned have healed (a skipped one is still in flight: not healed).
	if err := a.heal(ctx, tx, origin, types, diffs, after, through); err != nil {
		return nil, nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, nil, err
	}
	buckets := judged(diffs)
	for _, b := range buckets {
		a.Metrics.Divergence(origin, b.Type, b.Reason)
	}
	a.Metrics.ManifestCompared(wire.LevelStreams, time.Since(started))
	return buckets, decisions, nil
}

// judged returns the divergent buckets a comparison judged (the skipped ones are in flight).
func judged(diffs []store.BucketDiff) []Bucket {
	var out []Bucket
	for _, d := range diffs {
		if !d.Skipped {
			out = append(out, Bucket{Stream: d.StreamID, Tenant: d.Tenant, Type: d.EventType, Reason: d.Reason, LocalN: d.LocalN, OriginN: d.OriginN})
		}
	}
	return out
}

// ledgerPolicy is the ledger's storm bounds from the configuration.
func (a *Auditor) ledgerPolicy() store.LedgerPolicy {
	return store.LedgerPolicy{Cooldown: a.Config.DivergenceReportCooldown, BackoffBase: a.Config.RepairRetryAfter,
		MaxAttempts: a.Config.MaxRepairAttemptsPerBucket}
}

func (a *Auditor) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// act hands divergent buckets to the ledger and acts on its decisions: alarms for what it says
// to report, deficit repairs batched per (tenant, type) for what it says to request, capped.
func (a *Auditor) act(ctx context.Context, origin, control string, from, to int64, decisions []store.LedgerDecision) (int, error) {
	batches := map[[2]string][]string{}
	var keys [][2]string
	for _, d := range decisions {
		if d.Report {
			level := slog.LevelWarn
			if d.Settled {
				level = slog.LevelError
			}
			a.Logger.Log(ctx, level, "audit: divergence", "origin", origin, "tenant", d.Tenant, "type", d.EventType,
				"stream", d.StreamID, "reason", d.Reason, "attempts", d.Attempts, "budget_spent", d.Settled)
		}
		if d.Request {
			k := [2]string{d.Tenant, d.EventType}
			if _, ok := batches[k]; !ok {
				keys = append(keys, k)
			}
			batches[k] = append(batches[k], d.StreamID)
		}
	}
	sent := 0
	for i, k := range keys {
		if sent >= a.Limits.MaxRequests {
			a.Logger.Warn("audit: repair cap reached; the rest waits for the next audit", "origin", origin, "cap", a.Limits.MaxRequests)
			if err := a.unrequest(ctx, origin, keys[i:], batches); err != nil {
				return sent, err
			}
			break
		}
		f, t := from, to
		a.Metrics.RepairRequested("audit", origin)
		req := wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: []string{k[0]}, Types: []string{k[1]},
			Streams: batches[k], FromSeq: &f, ToSeq: &t, MaxEvents: a.Config.Redelivery.MaxEventsPerRequest}
		sent++
		if a.Config.RepairMode == config.ReportOnly {
			body, _ := json.Marshal(req)
			a.Logger.Warn("audit: would request repair (report-only)", "origin", origin, "request", string(body))
			continue
		}
		env, err := wire.NewEnvelope(wire.KindRedeliveryRequest, a.Service, origin, req)
		if err != nil {
			return sent, err
		}
		if err := wire.PublishTo(ctx, a.JS, control, env, nil); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// unrequest gives back the ledger attempts of the batches the cap cut, so they go out at the next
// audit rather than after a backoff for requests that never left.
func (a *Auditor) unrequest(ctx context.Context, origin string, cut [][2]string, batches map[[2]string][]string) error {
	var keys []store.BucketKey
	for _, k := range cut {
		for _, stream := range batches[k] {
			keys = append(keys, store.BucketKey{Tenant: k[0], EventType: k[1], StreamID: stream})
		}
	}
	return store.LedgerUnrequest(ctx, a.Pool, origin, keys, a.now())
}

// heal forgets the ledgered buckets of origin's types in the stream range (after, through] that
// diffs no longer names (SQL's rule: ledger_heal_matched), and logs and observes each heal's age
// (first sighting to proven heal). With no diffs and no range: a window matched whole at type
// level, so every ledgered bucket of those types heals.
func (a *Auditor) heal(ctx context.Context, db store.Querier, origin string, types []string, diffs []store.BucketDiff, after, through string) error {
	heals, err := store.LedgerHealMatched(ctx, db, origin, types, diffs, after, through, a.now())
	if err != nil {
		return err
	}
	for _, h := range heals {
		a.Logger.Info("audit: divergence healed", "origin", origin, "tenant", h.Tenant, "type", h.EventType, "stream", h.StreamID,
			"heal_seconds", h.Age.Seconds())
		a.Metrics.BucketHealed(h.Age.Seconds())
	}
	return nil
}

// eventsOf sums the event counts of digests of the given types.
func eventsOf(ds []wire.ManifestDigest, types []string) int64 {
	var n int64
	for _, d := range ds {
		if slices.Contains(types, d.Type) {
			n += d.N
		}
	}
	return n
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
