// auditor.go: the consumer side. For each origin it knows (the known_origins table, so the first
// audit after a restart exchanges at once) an Auditor asks a directed manifest of one fold per
// event type over the tenants of its subscription scope for the window above its seal, applies
// the origin's announced closes and history changes to its copies, calls the seal generation
// guard with the answer's generation, compares (SQL: compare_type_folds), drills mismatched types
// by bisecting their tenant key space (compare_range_folds) and then the mismatched tenants by
// stream-level pages (compare_stream_digests), hands every divergent bucket to the durable repair ledger (ledger_observe: cooldown, backoff, budget), sends
// capped deficit repairs batched per (tenant, type), alarms on identity mismatches and local extras
// (never a request, never a deletion), and advances the seal when the window matched whole,
// however many chunks carried it.

package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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
	AnswerTimeout     time.Duration // how long to wait for the next chunk of an origin's answer (default 30s)
	MaxHistoryAsks    int           // type-level asks per origin catching up on history changes (default 10)
	MaxAnswerChunks   int           // chunks one answer may have: what a waiting request holds (default 2000)
	RangeParts        int           // sub-ranges a tenant range is split into per drill-down step (default 16)
	RangeListPairs    int           // a differing tenant range folding at most this many pairs is listed (default 64)
	MaxRangeAsks      int           // range-fold and listing requests per origin per audit (default 64)
}

// Defaults of Limits, used where a field is left zero.
const (
	MaxDrillDownTypesDefault = config.MaxDrillDownTypesPerAuditDefault
	MaxPagesDefault          = 10
	MaxDigestsDefault        = config.MaxDigestsPerManifestDefault
	MaxRequestsDefault       = config.MaxAutoRepairRequestsPerAuditDefault
	AnswerTimeoutDefault     = 30 * time.Second
	// MaxHistoryAsksDefault bounds the type-level asks one origin's audit spends catching up on its
	// history changes (each answer carries up to MaxHistoryChangesPerAnswer); beyond it the round
	// is skipped, saying so, and the next audit continues from the cursor (invariant 9).
	MaxHistoryAsksDefault = 10
	// MaxAnswerChunksDefault bounds the chunks a waiting request collects, so its memory is at
	// most this many chunks of at most MaxDigests digests each (1 000 000 at the defaults, about
	// 100 MB): an answer declaring more fails its request at once, naming the bound, instead of
	// being held (invariant 9) or dropped piecemeal (invariant 14).
	MaxAnswerChunksDefault = 2000
	// RangePartsDefault, RangeListPairsDefault and MaxRangeAsksDefault shape the drill into a
	// mismatched type's tenants (drillRanges): 16 sub-ranges a step reach one tenant of 100 000
	// in 3 steps and a listing of about 25 pairs, about 2 KB on the wire; 64 requests an audit
	// follow about 15 damaged tenants to their listing (invariant 9), the rest the next audit.
	RangePartsDefault     = 16
	RangeListPairsDefault = 64
	MaxRangeAsksDefault   = 64
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
	if l.MaxHistoryAsks <= 0 {
		l.MaxHistoryAsks = MaxHistoryAsksDefault
	}
	if l.MaxAnswerChunks <= 0 {
		l.MaxAnswerChunks = MaxAnswerChunksDefault
	}
	if l.RangeParts < 2 || l.RangeParts > store.RangeFoldMaxParts {
		l.RangeParts = RangePartsDefault
	}
	if l.RangeListPairs <= 0 {
		l.RangeListPairs = RangeListPairsDefault
	}
	if l.MaxRangeAsks <= 0 {
		l.MaxRangeAsks = MaxRangeAsksDefault
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

	// Reply, when set, is the reply token this auditor's requests name: origins answer on
	// wire.ReplySubject(Service, origin, Reply), which only this process listens on (RunBeside
	// sets it; the running control plane leaves it empty and takes answers on its inbox).
	Reply string

	mu       sync.Mutex
	waiting  map[string]*pendingAnswer
	seam     *wire.Seam // the control endpoint's, where refused answers are counted
	declined atomic.Int64
	running  sync.Mutex // one audit (one comparison) at a time per auditor
}

// ErrAuditRunning is returned when an audit is asked for while this auditor runs one.
var ErrAuditRunning = errors.New("an audit is already running")

// Declined counts answer chunks declined: nobody was waiting for them (late or unsolicited), or
// they cannot belong to the answer awaited (beyond its declared chunks, or more than it holds).
func (a *Auditor) Declined() int64 { return a.declined.Load() }

// Finding is what one origin's audit found and did.
type Finding struct {
	Origin    string
	Skipped   string // why the round was skipped, if it was
	From, To  int64  // the window compared
	Divergent []Bucket
	// PendingBackfill are the buckets missing history older than an expansion's birth while its
	// backfill is outstanding: expected, informational, never ledgered (issue 18).
	PendingBackfill []Bucket
	// Unresolved are the consumed types whose digests still differ from the origin's after this
	// audit: every one is reported until it matches, never an all-clear (invariant 14).
	Unresolved    []Unresolved
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

// Unresolved is one event type whose type-level digests differ from the origin's.
type Unresolved struct {
	Type string
	// Drilled says whether this audit compared any of its stream pages (the per-audit type cap
	// may leave it for a later audit, least recently drilled first).
	Drilled bool
	// ResumeAfter is the stream after which its next drill-down resumes; "" with Drilled means
	// every page was compared this audit (what differs was found, or is in flight).
	ResumeAfter string
}

// ReasonPendingBackfill labels a bucket missing only history older than its lane's birth while
// the type's backfill is outstanding (streamseal._birth_lineage).
const ReasonPendingBackfill = "pending_backfill"

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
	origin := o.Name
	f := Finding{Origin: origin}
	var err error
	if !full {
		if f.From, err = store.SealedThrough(ctx, a.Pool, origin); err != nil {
			return f, err
		}
	}
	consumed, err := store.SubscribedTypes(ctx, a.Pool, origin)
	if err != nil {
		return f, err
	}
	// The scope both sides fold: what this service subscribes to from origin (tenant_folds.sql).
	scope, err := store.SubscriptionScope(ctx, a.Pool, origin)
	if err != nil {
		return f, err
	}
	cursor, err := store.HistoryCursor(ctx, a.Pool, origin)
	if err != nil {
		return f, err
	}
	// Ask, and apply the origin's announced closes and history changes to our copies before
	// comparing; while more changes remain, ask again from the new cursor (capped per audit).
	var answers []wire.ManifestAnswer
	for asked := 1; ; asked++ {
		answers, err = a.ask(ctx, origin, wire.ManifestRequest{Level: wire.LevelFolds, From: f.From, To: 1 << 62,
			MaxDigests: a.Limits.MaxDigests, ChangesAfter: cursor, Scope: wireScope(scope)})
		if err != nil {
			return f, err
		}
		if err := a.applyCloses(ctx, origin, answers[0].Closes); err != nil {
			return f, err
		}
		if cursor, err = a.applyChanges(ctx, origin, cursor, answers[0]); err != nil {
			return f, err
		}
		if !answers[0].ChangesMore {
			break
		}
		if asked >= a.Limits.MaxHistoryAsks {
			f.Skipped = fmt.Sprintf("the origin's history changes are still arriving (applied through change %d, more remain): nothing compared this round", cursor)
			a.Logger.Warn("audit: origin history changes still arriving; round skipped", "origin", origin, "applied_through", cursor)
			return f, nil
		}
	}
	// The guard reads the generation from the answer it compares, not from a checkpoint.
	generation := answers[0].Generation
	guard, err := store.SealGenerationGuard(ctx, a.Pool, origin, generation)
	if err != nil {
		return f, err
	}
	if guard == store.SealSkip {
		f.Skipped = "the origin's generation changed: seal reset, this round skipped"
		a.Logger.Warn("audit: origin generation changed; seal reset, round skipped", "origin", origin, "generation", generation)
		return f, nil
	}
	f.To = answers[0].Watermark
	var typeDigests []wire.ManifestDigest
	for _, ans := range answers {
		typeDigests = append(typeDigests, ans.Digests...)
	}
	mismatched, err := a.compareFolds(ctx, origin, f.From, f.To, typeDigests, scope)
	if err != nil {
		return f, err
	}
	if len(mismatched) == 0 {
		// Certified: ask returns only a whole answer (every chunk, one watermark and generation),
		// and every part of it compared equal, so the window seals however many chunks carried it.
		if f.SealedThrough, err = store.SealAdvance(ctx, a.Pool, origin, f.To); err != nil {
			return f, err
		}
		f.Sealed = true
		return f, a.heal(ctx, a.Pool, origin, consumed, nil, "", "")
	}
	cursors, err := store.AuditCursors(ctx, a.Pool, origin, mismatched)
	if err != nil {
		return f, err
	}
	drilled := drillOrder(mismatched, cursors, a.Limits.MaxDrillDownTypes)
	// type -> tenant: bisecting the tenant key space of the drilled types names the tenants that
	// differ; only those are walked by stream pages (tenant -> stream).
	byType, _, err := a.drillRanges(ctx, origin, f.From, f.To, generation, scope.Only(drilled))
	if errors.Is(err, errGenerationMoved) {
		f.Skipped = "the origin's generation changed during the drill-down: this round skipped, the next applies its changes"
		a.Logger.Warn("audit: origin generation changed during the drill-down; round skipped", "origin", origin, "generation", generation)
		return f, nil
	}
	if err != nil {
		return f, err
	}
	var streamTypes, tenants []string
	for _, t := range drilled {
		if len(byType[t]) > 0 {
			streamTypes = append(streamTypes, t)
			tenants = append(tenants, byType[t]...)
		}
	}
	slices.Sort(tenants)
	tenants = slices.Compact(tenants)
	d := drill{walked: map[string]bool{}, left: map[string]string{}}
	if len(streamTypes) > 0 {
		d, err = a.drillDown(ctx, origin, f.From, f.To, generation, streamTypes, cursors, eventsOf(typeDigests, streamTypes), tenants)
	}
	if errors.Is(err, errGenerationMoved) {
		f.Skipped = "the origin's generation changed during the drill-down: this round skipped, the next applies its changes"
		a.Logger.Warn("audit: origin generation changed during the drill-down; round skipped", "origin", origin, "generation", generation)
		return f, nil
	}
	if err != nil {
		return f, err
	}
	for _, b := range d.buckets {
		if b.Reason == ReasonPendingBackfill {
			f.PendingBackfill = append(f.PendingBackfill, b)
		} else {
			f.Divergent = append(f.Divergent, b)
		}
	}
	if len(f.PendingBackfill) > 0 {
		a.Logger.Info("audit: history older than an expansion's birth is missing while its backfill is outstanding (pending_backfill: expected, not divergence)",
			"origin", origin, "buckets", len(f.PendingBackfill))
	}
	f.Unresolved = unresolved(mismatched, d)
	decisions := d.decisions
	f.Requests, err = a.act(ctx, origin, f.From, f.To, decisions)
	return f, err
}

// unresolved lists every mismatched type, in name order, with how far this audit drilled it.
func unresolved(mismatched []string, d drill) []Unresolved {
	out := make([]Unresolved, 0, len(mismatched))
	for _, t := range mismatched {
		out = append(out, Unresolved{Type: t, Drilled: d.walked[t], ResumeAfter: d.left[t]})
	}
	return out
}

// applyChanges applies the origin's announced history changes carried by answer (removed or
// reclassified events) to this store's copies, once each, and returns the new cursor. This is the
// origin's deliberate history replicated, not a deletion decided from a divergence (invariant 10).
func (a *Auditor) applyChanges(ctx context.Context, origin string, cursor int64, answer wire.ManifestAnswer) (int64, error) {
	if len(answer.Changes) == 0 && answer.ChangesThrough <= cursor {
		return cursor, nil
	}
	changes := make([]store.HistoryChange, len(answer.Changes))
	for i, c := range answer.Changes {
		changes[i] = store.HistoryChange{ChangeID: c.ChangeID, Kind: c.Kind, EventID: c.EventID, Flags: c.Flags}
	}
	changed, err := store.HistoryChangesApply(ctx, a.Pool, origin, changes, answer.ChangesThrough)
	if err != nil {
		return cursor, err
	}
	if changed > 0 {
		a.Logger.Info("audit: applied the origin's announced history changes to our copies", "origin", origin, "copies_changed", changed)
	}
	return max(cursor, answer.ChangesThrough), nil
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
