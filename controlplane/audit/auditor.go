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
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/metrics"
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
	MaxDrillDownTypesDefault = config.MaxDrillDownTypesPerAuditDefault
	MaxPagesDefault          = 10
	MaxDigestsDefault        = config.MaxDigestsPerManifestDefault
	MaxRequestsDefault       = config.MaxAutoRepairRequestsPerAuditDefault
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
	rows, err := a.Pool.Query(ctx, "select origin, control_subject, coalesce(generation, 0) from streamseal.known_origins order by origin")
	if err != nil {
		return nil, fmt.Errorf("known origins: %w", err)
	}
	type origin struct {
		name, control string
		generation    int64
	}
	origins, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (origin, error) {
		var o origin
		err := r.Scan(&o.name, &o.control, &o.generation)
		return o, err
	})
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, o := range origins {
		if scope.Origin != "" && o.name != scope.Origin {
			continue
		}
		f, err := a.auditOrigin(ctx, o.name, o.control, o.generation, scope.Full)
		if err != nil {
			return out, fmt.Errorf("audit of %s: %w", o.name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func (a *Auditor) auditOrigin(ctx context.Context, origin, control string, generation int64, full bool) (Finding, error) {
	f := Finding{Origin: origin}
	var guard string
	if err := a.Pool.QueryRow(ctx, "select streamseal.seal_generation_guard($1, $2)", origin, generation).Scan(&guard); err != nil {
		return f, err
	}
	if guard == "skip" {
		f.Skipped = "the origin's generation changed: seal reset, this round skipped"
		a.Logger.Warn("audit: origin generation changed; seal reset, round skipped", "origin", origin, "generation", generation)
		return f, nil
	}
	if err := a.Pool.QueryRow(ctx, "select coalesce((select sealed_through from streamseal.seals where origin = $1), 0)", origin).Scan(&f.From); err != nil {
		return f, err
	}
	if full {
		f.From = 0
	}
	consumed, err := a.consumedTypes(ctx, origin)
	if err != nil {
		return f, err
	}
	answers, err := a.ask(ctx, origin, control, wire.ManifestRequest{Level: wire.LevelTypes, From: f.From, To: 1 << 62, MaxDigests: a.Limits.MaxDigests})
	if err != nil {
		return f, err
	}
	f.To = answers[0].Watermark
	if len(answers[0].Closes) > 0 {
		closes, _ := json.Marshal(answers[0].Closes)
		var removed int64
		if err := a.Pool.QueryRow(ctx, "select streamseal.apply_stream_closes($1, $2::jsonb)", origin, closes).Scan(&removed); err != nil {
			return f, fmt.Errorf("apply stream closes: %w", err)
		}
		if removed > 0 {
			a.Logger.Info("audit: applied the origin's closed history to our copies", "origin", origin, "copies_removed", removed)
		}
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
			if err := a.Pool.QueryRow(ctx, "select streamseal.advance_seal($1, $2)", origin, f.To).Scan(&f.SealedThrough); err != nil {
				return f, err
			}
			f.Sealed = true
		}
		return f, a.healMatched(ctx, origin, consumed)
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

func (a *Auditor) consumedTypes(ctx context.Context, origin string) ([]string, error) {
	rows, err := a.Pool.Query(ctx, "select distinct event_type from streamseal.subscriptions where origin in ($1, '*') order by 1", origin)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
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
	tenants, types, x0s, x1s, ns := columns(digests)
	rows, err := a.Pool.Query(ctx, `
		select distinct event_type from streamseal.compare_type_digests($1, $2, $3, $4, $5, $6, $7, $8, $9, make_interval(secs => $10))
		order by 1`, origin, from, to, tenants, types, x0s, x1s, ns, consumed, a.Config.SettleWindow.Seconds())
	if err != nil {
		return nil, fmt.Errorf("compare type digests: %w", err)
	}
	mismatched, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err == nil {
		a.Metrics.ManifestCompared(wire.LevelTypes, time.Since(started))
	}
	return mismatched, err
}

// drillDown walks stream-level pages of the mismatched types and returns the divergent buckets.
func (a *Auditor) drillDown(ctx context.Context, origin, control string, from, to int64, types []string, total int64) ([]Bucket, []decision, error) {
	var out []Bucket
	var decided []decision
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
// heals the ledgered buckets of the page's range that now match, in one statement per step.
func (a *Auditor) compareStreams(ctx context.Context, origin string, from, to int64, types []string, digests []wire.ManifestDigest, after, through string) ([]Bucket, []decision, error) {
	started := time.Now()
	// One row per origin bucket, then one marker row per drilled type (null stream and tenant):
	// a type with no bucket on this page is still compared, so this store's extras of it in the
	// page's range are found (and its ledger rows are not healed unseen).
	var streams, tenants []*string
	var eventTypes []string
	var x0s, x1s, ns []*int64
	for _, d := range digests {
		d := d
		streams, tenants, eventTypes = append(streams, &d.Stream), append(tenants, &d.Tenant), append(eventTypes, d.Type)
		x0s, x1s, ns = append(x0s, &d.X0), append(x1s, &d.X1), append(ns, &d.N)
	}
	for _, t := range types {
		streams, tenants, eventTypes = append(streams, nil), append(tenants, nil), append(eventTypes, t)
		x0s, x1s, ns = append(x0s, nil), append(x1s, nil), append(ns, nil)
	}
	tx, err := a.Pool.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, `
		select stream_id, tenant, event_type, local_x0, local_x1, local_n, origin_x0, origin_x1, origin_n, reason, skipped
		from streamseal.compare_stream_digests($1, $2, $3, $4, $5, $6, $7, $8, $9, make_interval(secs => $10), $11, $12)
		where event_type = any($13)`,
		origin, from, to, streams, tenants, eventTypes, x0s, x1s, ns, a.Config.SettleWindow.Seconds(), nilIfEmpty(after), nilIfEmpty(through), types)
	if err != nil {
		return nil, nil, fmt.Errorf("compare stream digests: %w", err)
	}
	type diff struct {
		Stream    string `json:"stream_id"`
		Tenant    string `json:"tenant"`
		EventType string `json:"event_type"`
		LocalX0   int64  `json:"local_x0"`
		LocalX1   int64  `json:"local_x1"`
		LocalN    int64  `json:"local_n"`
		OriginX0  int64  `json:"origin_x0"`
		OriginX1  int64  `json:"origin_x1"`
		OriginN   int64  `json:"origin_n"`
		Reason    string `json:"reason"`
		Skipped   bool   `json:"skipped"`
	}
	diffs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[diff])
	if err != nil {
		return nil, nil, err
	}
	var buckets []Bucket
	for _, d := range diffs {
		if !d.Skipped {
			buckets = append(buckets, Bucket{Stream: d.Stream, Tenant: d.Tenant, Type: d.EventType, Reason: d.Reason, LocalN: d.LocalN, OriginN: d.OriginN})
		}
	}
	diffJSON, _ := json.Marshal(diffs)
	var decisions []decision
	if len(diffs) > 0 {
		drows, err := tx.Query(ctx, `
			select tenant, event_type, stream_id, reason, report, request, attempts, settled
			from streamseal.ledger_observe($1, $2::jsonb, make_interval(secs => $3), make_interval(secs => $4), $5, $6)`,
			origin, diffJSON, a.Config.DivergenceReportCooldown.Seconds(), a.Config.RepairRetryAfter.Seconds(),
			a.Config.MaxRepairAttemptsPerBucket, a.now())
		if err != nil {
			return nil, nil, fmt.Errorf("ledger observe: %w", err)
		}
		decisions, err = pgx.CollectRows(drows, func(r pgx.CollectableRow) (decision, error) {
			var d decision
			err := r.Scan(&d.tenant, &d.eventType, &d.stream, &d.reason, &d.report, &d.request, &d.attempts, &d.settled)
			return d, err
		})
		if err != nil {
			return nil, nil, err
		}
	}
	// Ledgered buckets of this page's types and stream range that the comparison no longer
	// returned have healed (a skipped one is still in flight: not healed).
	healed, err := tx.Query(ctx, `
		select tenant, event_type, stream_id, extract(epoch from heal_age)
		from streamseal.ledger_heal($1, (
			select coalesce(jsonb_agg(jsonb_build_object('tenant', l.tenant, 'event_type', l.event_type, 'stream_id', l.stream_id)), '[]')
			from streamseal.repair_ledger l
			where l.origin = $1 and l.event_type = any($2)
			  and ($3::text is null or l.stream_id > $3) and ($4::text is null or l.stream_id <= $4)
			  and not exists (select 1 from jsonb_to_recordset($5::jsonb) as d(stream_id text, tenant text, event_type text)
			                  where d.stream_id = l.stream_id and d.tenant = l.tenant and d.event_type = l.event_type)), $6)`,
		origin, types, nilIfEmpty(after), nilIfEmpty(through), diffJSON, a.now())
	if err != nil {
		return nil, nil, fmt.Errorf("ledger heal: %w", err)
	}
	if err := a.recordHeals(origin, healed); err != nil {
		return nil, nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, nil, err
	}
	for _, b := range buckets {
		a.Metrics.Divergence(origin, b.Type, b.Reason)
	}
	a.Metrics.ManifestCompared(wire.LevelStreams, time.Since(started))
	return buckets, decisions, nil
}

func (a *Auditor) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// act hands divergent buckets to the ledger and acts on its decisions: alarms for what it says
// to report, deficit repairs batched per (tenant, type) for what it says to request, capped.
func (a *Auditor) act(ctx context.Context, origin, control string, from, to int64, decisions []decision) (int, error) {
	batches := map[[2]string][]string{}
	var keys [][2]string
	for _, d := range decisions {
		if d.report {
			level := slog.LevelWarn
			if d.settled {
				level = slog.LevelError
			}
			a.Logger.Log(ctx, level, "audit: divergence", "origin", origin, "tenant", d.tenant, "type", d.eventType,
				"stream", d.stream, "reason", d.reason, "attempts", d.attempts, "budget_spent", d.settled)
		}
		if d.request {
			k := [2]string{d.tenant, d.eventType}
			if _, ok := batches[k]; !ok {
				keys = append(keys, k)
			}
			batches[k] = append(batches[k], d.stream)
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
	type key struct {
		Tenant    string `json:"tenant"`
		EventType string `json:"event_type"`
		Stream    string `json:"stream_id"`
	}
	var keys []key
	for _, k := range cut {
		for _, stream := range batches[k] {
			keys = append(keys, key{k[0], k[1], stream})
		}
	}
	body, _ := json.Marshal(keys)
	if _, err := a.Pool.Exec(ctx, "select streamseal.ledger_unrequest($1, $2::jsonb, $3)", origin, body, a.now()); err != nil {
		return fmt.Errorf("ledger unrequest: %w", err)
	}
	return nil
}

type decision struct {
	tenant, eventType, stream, reason string
	report, request, settled          bool
	attempts                          int
}

// healMatched forgets every ledgered bucket of origin's consumed types after a window matched
// whole at type level (every stream of those types matches).
func (a *Auditor) healMatched(ctx context.Context, origin string, types []string) error {
	rows, err := a.Pool.Query(ctx, `
		select tenant, event_type, stream_id, extract(epoch from heal_age)
		from streamseal.ledger_heal($1, (
			select coalesce(jsonb_agg(jsonb_build_object('tenant', l.tenant, 'event_type', l.event_type, 'stream_id', l.stream_id)), '[]')
			from streamseal.repair_ledger l where l.origin = $1 and l.event_type = any($2)), $3)`, origin, types, a.now())
	if err != nil {
		return fmt.Errorf("ledger heal: %w", err)
	}
	return a.recordHeals(origin, rows)
}

// recordHeals logs each bucket ledger_heal deleted and observes its age (first sighting to
// proven heal); it closes rows.
func (a *Auditor) recordHeals(origin string, rows pgx.Rows) error {
	defer rows.Close()
	for rows.Next() {
		var tenant, eventType, stream string
		var age float64
		if err := rows.Scan(&tenant, &eventType, &stream, &age); err != nil {
			return err
		}
		a.Logger.Info("audit: divergence healed", "origin", origin, "tenant", tenant, "type", eventType, "stream", stream, "heal_seconds", age)
		a.Metrics.BucketHealed(age)
	}
	return rows.Err()
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

func columns(ds []wire.ManifestDigest) (tenants, types []string, x0s, x1s, ns []int64) {
	for _, d := range ds {
		tenants = append(tenants, d.Tenant)
		types = append(types, d.Type)
		x0s = append(x0s, d.X0)
		x1s = append(x1s, d.X1)
		ns = append(ns, d.N)
	}
	return
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
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
