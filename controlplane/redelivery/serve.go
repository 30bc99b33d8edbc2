// serve.go: the origin side. A Server serves redelivery requests arriving on this service's
// control inbox: it authorizes (grants and named tenants, in SQL), pages the selection
// (streamseal.select_redelivery, keyset by stream and version), bundles each stream's ordered
// slice under count and byte caps with raw payload bytes, ships the bundles to the requester, and
// ends with a summary naming what cannot be served (and, when its cap truncated the answer, where
// the rest starts). Accepted requests wait in the database (streamseal.redelivery_queue) until
// served, so a crash loses none; one build at a time per process; requests beyond the queue's
// bound stay on the broker.

package redelivery

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

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Limits bound what one request may cost the origin (the proposal's pump options).
type Limits struct {
	MaxEventsPerRequest int // hard clamp of a requester's max (default 10000)
	PageSize            int // events selected per keyset page (default 500)
	MaxBundleEvents     int // events per bundle (default 500)
	MaxBundleBytes      int // payload bytes per bundle; a larger single event ships alone (default 192000)
	// HoldLimit is how long a request naming ephemeral events holds them against the reaper
	// when it is not served first (default 1h; streamseal.hold_destruction).
	HoldLimit time.Duration
	// BackfillShare paces a backfill's answer (a state-only request) so that its work takes at
	// most this percent of the origin's time: between pages the build waits (100 - share) /
	// share times as long as the page's work (default 50; 100: unpaced). A page's work is
	// counted at the cheapest rate (per event) any page of the build ran at, not at the page's
	// own wall time: a page that waited (for the CPU, behind live traffic or anything else)
	// yielded while it waited, and pausing again for that wait yielded twice. A backfill then
	// yields to the origin's live traffic as much as its work takes from it. Plain repairs are
	// never paced.
	BackfillShare int
}

// Defaults of Limits (the proposal's pump options), used where a field is left zero.
const (
	MaxEventsPerRequestDefault = 10000
	PageSizeDefault            = 500
	MaxBundleEventsDefault     = 500
	MaxBundleBytesDefault      = 192000
	HoldLimitDefault           = time.Hour
	BackfillShareDefault       = 50
)

// DefaultLimits are the production defaults.
var DefaultLimits = Limits{MaxEventsPerRequest: MaxEventsPerRequestDefault, PageSize: PageSizeDefault,
	MaxBundleEvents: MaxBundleEventsDefault, MaxBundleBytes: MaxBundleBytesDefault, HoldLimit: HoldLimitDefault,
	BackfillShare: BackfillShareDefault}

// Server serves redelivery requests for one service.
type Server struct {
	Pool    *pgxpool.Pool
	JS      jetstream.JetStream
	Service string
	Limits  Limits
	Logger  *slog.Logger
	Metrics *metrics.Instruments // nil: not measured
	// OnBuild, when set, observes each build starting ("start") and ending ("end").
	OnBuild func(requestID, phase string)
	// OnPage, when set, observes each page of a build: its events, how long selecting them took,
	// how long bundling and publishing them took, and how long the build then paused (a
	// backfill's pacing; benchmarks draw a backfill's timeline with it).
	OnPage func(requestID string, events int, selected, bundled, paused time.Duration)
	// ServeCopies answers a backfill's requests (state-only, naming no tenant, welcoming copies)
	// with the copies this service holds of other origins' events too, after its own lane
	// (streamseal.select_forwarded_copies, under this service's grants): the proposal's "a
	// consumer that persisted forwarded copies may answer too". Off by default: every holder
	// answering every backfill multiplies its wire cost by the number of holders.
	ServeCopies bool
	// Pause, when set, replaces the wait that paces a backfill's answer (Limits.BackfillShare):
	// tests observe the pacing through it without waiting.
	Pause func(ctx context.Context, d time.Duration)

	wake             chan struct{}
	seam             *wire.Seam // the control endpoint's, where replayed requests are counted
	refused, shipped atomic.Int64
	requestsReceived atomic.Int64
}

// Bounds of the accepted-request queue.
const (
	// QueueMaxDefault is how many accepted requests may wait; beyond it a request stays on the
	// broker until there is room.
	QueueMaxDefault = 1000
	// BuildAttemptsMax is how many builds of one request may start before it is given up: a
	// request whose build keeps failing (or crashing the process) must not block the queue.
	BuildAttemptsMax = 5
	// QueuePollInterval is the failsafe look at the queue for requests another replica accepted.
	QueuePollInterval = 5 * time.Second
	// ServedRetentionDefault is how long a served request id is remembered, so a replay of it is
	// dropped instead of rebuilt (invariant 12). Requesters re-ask under new ids; a replay older
	// than this is a new request again, bounded by grants and the queue like any other.
	ServedRetentionDefault = 7 * 24 * time.Hour
)

// Counts: requests received and refused, events shipped.
func (s *Server) Counts() (received, refused, shipped int64) {
	return s.requestsReceived.Load(), s.refused.Load(), s.shipped.Load()
}

// Register installs the request handler on control. Call before control.Run, then Run.
func (s *Server) Register(control *wire.Control) {
	s.wake = make(chan struct{}, 1)
	s.seam = control.Seam
	control.Handle(wire.KindRedeliveryRequest, s.accept)
}

// accept queues a request durably (streamseal.redelivery_queue) and only then lets the broker
// forget it, so an origin that crashes before serving it serves it after the restart (invariant
// 14). A full queue leaves the request on the broker; a request id already waiting is queued once.
func (s *Server) accept(ctx context.Context, env wire.Envelope, _ []byte) error {
	var req wire.RedeliveryRequest
	if err := decodeBody(env, &req); err != nil {
		s.refuse(env.From, req, err.Error())
		return nil
	}
	id, err := uuid.Parse(req.RequestID)
	if err != nil {
		s.refuse(env.From, req, fmt.Sprintf("request id %q is not a UUID", req.RequestID))
		return nil
	}
	s.requestsReceived.Add(1)
	if err := s.hold(ctx, id, env.From, req); err != nil {
		return err
	}
	outcome, err := store.RedeliveryQueueAdd(ctx, s.Pool, store.QueuedRequest{RequestID: id, Requester: env.From, Request: env.Body, StateOnly: req.StateOnly}, QueueMaxDefault)
	if err != nil {
		return err
	}
	if outcome == store.QueueFull {
		return errors.New("redelivery queue full: the request stays on the broker")
	}
	if outcome == store.QueueDuplicate {
		s.drop(wire.DropReplayed, env, "request "+req.RequestID+" waits in the queue already")
		return nil
	}
	if outcome == store.QueueServed {
		// Invariant 12: an origin serves a request id once; a replay is never rebuilt. Invariant
		// 14: it is answered by the summary sent for it, so a requester whose summary was lost on
		// the way (a backfill's stalled answer re-asks its follow-up under its id) gets its
		// answer; the requester acts on it only while that request is open.
		return s.resendSummary(ctx, env, id, req)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// resendSummary answers a replay of request id, served already, with the summary sent for it
// (streamseal.served_requests keeps it), to the requester it was served to; a replay of a request
// served to another requester, given up, or served before summaries were kept is dropped.
func (s *Server) resendSummary(ctx context.Context, env wire.Envelope, id uuid.UUID, req wire.RedeliveryRequest) error {
	summary, ok, err := store.ServedRequestSummary(ctx, s.Pool, id, env.From)
	if err != nil {
		return err
	}
	if !ok {
		s.drop(wire.DropReplayed, env, "request "+req.RequestID+" was served already")
		return nil
	}
	answer, err := wire.NewEnvelope(wire.KindRedeliverySummary, s.Service, env.From, json.RawMessage(summary))
	if err != nil {
		return err
	}
	if err := wire.Publish(ctx, s.JS, answer, nil); err != nil {
		return fmt.Errorf("send again the summary of request %s to %s: %w", req.RequestID, env.From, err)
	}
	s.Logger.Info("redelivery: a served request asked again: its summary sent again, nothing rebuilt", "request", req.RequestID,
		"requester", env.From)
	return nil
}

// hold places a destruction hold on the own ephemeral events a granted request names before the
// request is queued, so the reaper leaves them until it is served or Limits.HoldLimit passes: a
// consumer's confirmed gap on an ephemeral lane is repaired even when the grace runs out while
// the request waits. A request that will be refused holds nothing; one naming no numbers holds
// nothing (streamseal.hold_destruction).
func (s *Server) hold(ctx context.Context, id uuid.UUID, requester string, req wire.RedeliveryRequest) error {
	if req.FromSeq == nil && req.ToSeq == nil && len(req.TypeSeqRanges) == 0 {
		return nil
	}
	if reason, err := s.authorize(ctx, requester, req); err != nil || reason != "" {
		return err
	}
	limits := WithDefaults(s.Limits)
	held, err := store.DestructionHoldPlace(ctx, s.Pool, id, requester, selection(requester, req), limits.HoldLimit, limits.MaxEventsPerRequest)
	if errors.Is(err, store.ErrInvalidInput) {
		return nil // the build refuses it with the reason
	}
	if err != nil {
		return err
	}
	if held > 0 {
		s.Logger.Info("redelivery: ephemeral events held against the reaper until the request is served",
			"request", id, "requester", requester, "held", held, "hold_limit", limits.HoldLimit)
	}
	return nil
}

// Run serves queued requests one at a time until ctx ends: everything waiting at start (what a
// crash left), then each newly accepted request, with a failsafe look every QueuePollInterval.
func (s *Server) Run(ctx context.Context) error {
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	s.fillLimits()
	if s.wake == nil {
		s.wake = make(chan struct{}, 1)
	}
	for {
		for ctx.Err() == nil {
			served, err := s.serveNext(ctx)
			if err != nil && ctx.Err() == nil {
				s.Logger.Error("redelivery: serving the queue failed; retrying", "err", err)
				sleep(ctx, time.Second)
			}
			if !served {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-time.After(QueuePollInterval):
		}
	}
}

// serveNext serves the next queued request no other build holds (repairs before backfills, each
// oldest first) and says whether it served one. The request leaves the queue once its summary
// is published (or it is given up).
func (s *Server) serveNext(ctx context.Context) (bool, error) {
	pooled, err := s.Pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer pooled.Release()
	conn := pooled.Conn()
	waiting, err := store.RedeliveryQueueNext(ctx, conn, 16)
	if err != nil {
		return false, err
	}
	for _, q := range waiting {
		locked, err := store.RedeliveryQueueLock(ctx, conn, q.RequestID)
		if err != nil {
			return false, err
		}
		if !locked {
			continue // another replica builds it
		}
		err = s.serveLocked(ctx, q)
		if unlockErr := store.RedeliveryQueueUnlock(context.WithoutCancel(ctx), conn, q.RequestID); err == nil {
			err = unlockErr
		}
		return err == nil, err
	}
	return false, nil
}

// serveLocked builds one request whose build lock this process holds.
func (s *Server) serveLocked(ctx context.Context, q store.QueuedRequest) error {
	attempts, ok, err := store.RedeliveryQueueAttempt(ctx, s.Pool, q.RequestID)
	if err != nil || !ok {
		return err // !ok: served meanwhile by another replica
	}
	var req wire.RedeliveryRequest
	if err := json.Unmarshal(q.Request, &req); err != nil || attempts > BuildAttemptsMax {
		reason := fmt.Sprintf("given up after %d builds that did not finish", attempts-1)
		if err != nil {
			reason = "the queued request does not decode: " + err.Error()
		}
		s.refuse(q.Requester, req, reason)
		return store.RedeliveryQueueRemove(ctx, s.Pool, q, nil, ServedRetentionDefault)
	}
	summary, err := s.build(ctx, q.Requester, req)
	if err != nil {
		return fmt.Errorf("build request %s of %s (attempt %d): %w", req.RequestID, q.Requester, attempts, err)
	}
	// Served: what it held may be reaped now.
	if _, err := store.DestructionHoldRelease(ctx, s.Pool, q.RequestID); err != nil {
		return err
	}
	return store.RedeliveryQueueRemove(ctx, s.Pool, q, summary, ServedRetentionDefault)
}

func (s *Server) fillLimits() { s.Limits = WithDefaults(s.Limits) }

// WithDefaults returns l with every unset (zero) limit taken from DefaultLimits.
func WithDefaults(l Limits) Limits {
	d := DefaultLimits
	if l.MaxEventsPerRequest <= 0 {
		l.MaxEventsPerRequest = d.MaxEventsPerRequest
	}
	if l.PageSize <= 0 {
		l.PageSize = d.PageSize
	}
	if l.MaxBundleEvents <= 0 {
		l.MaxBundleEvents = d.MaxBundleEvents
	}
	if l.MaxBundleBytes <= 0 {
		l.MaxBundleBytes = d.MaxBundleBytes
	}
	if l.HoldLimit <= 0 {
		l.HoldLimit = d.HoldLimit
	}
	if l.BackfillShare <= 0 || l.BackfillShare > 100 {
		l.BackfillShare = d.BackfillShare
	}
	return l
}

// build serves one request: authorize, page, bundle, ship, summarize. It returns the summary's
// body as sent (nil: refused, nothing sent).
func (s *Server) build(ctx context.Context, requester string, req wire.RedeliveryRequest) ([]byte, error) {
	if s.OnBuild != nil {
		s.OnBuild(req.RequestID, "start")
		defer s.OnBuild(req.RequestID, "end")
	}
	if reason, err := s.authorize(ctx, requester, req); err != nil {
		return nil, err
	} else if reason != "" {
		s.refuse(requester, req, reason)
		return nil, nil
	}
	limit := req.MaxEvents
	if limit <= 0 || limit > s.Limits.MaxEventsPerRequest {
		limit = s.Limits.MaxEventsPerRequest
	}
	start := time.Now()
	summary := wire.RedeliverySummary{RequestID: req.RequestID, Origin: s.Service}
	b := &bundler{server: s, ctx: ctx, requester: requester, req: req}
	sel := selection(requester, req)
	copies := s.ServeCopies && req.Copies && req.StateOnly && len(req.Tenants) == 0
	if req.StateOnly && req.After == nil {
		// The start of a backfill's answer: say how much the whole answer holds (progress).
		total, err := store.BackfillTotal(ctx, s.Pool, requester, req.Types, copies)
		if err != nil {
			return nil, err
		}
		summary.Total = total
	}
	after := req.After
	pacer := backfillPacer{share: s.Limits.BackfillShare}
	for summary.Shipped < limit {
		pageStart := time.Now()
		want := min(s.Limits.PageSize, limit-summary.Shipped)
		page, err := s.page(ctx, sel, after, want, copies)
		if err != nil {
			return nil, err
		}
		selected := time.Since(pageStart)
		for _, e := range page {
			if err := b.add(e); err != nil {
				return nil, err
			}
		}
		summary.Shipped += len(page)
		bundled := time.Since(pageStart) - selected
		if len(page) < want {
			if s.OnPage != nil {
				s.OnPage(req.RequestID, len(page), selected, bundled, 0)
			}
			break // the selection is exhausted
		}
		last := page[len(page)-1]
		after = &wire.Position{Stream: last.StreamID, Version: last.StreamVersion}
		if last.Origin != s.Service {
			after.Lane = last.Origin
		}
		var paused time.Duration
		if req.StateOnly && s.Limits.BackfillShare < 100 && summary.Shipped < limit {
			// A backfill yields to live traffic: between pages it waits so that its work takes
			// at most BackfillShare% of the time.
			pause := s.Pause
			if pause == nil {
				pause = sleep
			}
			paused = pacer.pause(time.Since(pageStart), len(page))
			pause(ctx, paused)
		}
		if s.OnPage != nil {
			s.OnPage(req.RequestID, len(page), selected, bundled, paused)
		}
	}
	if summary.Shipped >= limit {
		more, err := s.page(ctx, sel, after, 1, copies)
		if err != nil {
			return nil, err
		}
		summary.Truncated = len(more) > 0
		if summary.Truncated && after != nil {
			summary.ResumeAfter = after
		}
	}
	if err := b.flush(); err != nil {
		return nil, err
	}
	if err := b.settle(); err != nil {
		return nil, err
	}
	summary.Bundles = b.bundles
	unservable, err := s.unservable(ctx, sel)
	if err != nil {
		return nil, err
	}
	summary.Unservable = unservable
	s.shipped.Add(int64(summary.Shipped))
	env, err := wire.NewEnvelope(wire.KindRedeliverySummary, s.Service, requester, summary)
	if err != nil {
		return nil, err
	}
	if err := wire.Publish(ctx, s.JS, env, nil); err != nil {
		return nil, err
	}
	s.Logger.Info("redelivery: served", "request", req.RequestID, "requester", requester, "shipped", summary.Shipped,
		"bundles", summary.Bundles, "truncated", summary.Truncated, "unservable", len(summary.Unservable),
		"took", time.Since(start))
	s.Metrics.RedeliveryBuilt(time.Since(start))
	return env.Body, nil
}

// backfillPacer computes the waits that pace one backfill answer's build to share percent of the
// origin's time (Limits.BackfillShare). Each page's work is counted at the cheapest rate per event
// of the build's pages so far, the best estimate of what a page costs the origin when nothing
// else runs: a page's wall time also holds the time it waited for the CPU (behind the live
// traffic it yields to, the consumer's ingest when both share a machine, any neighbour), and
// the live traffic ran during that wait, so pausing again for it yielded twice. Measured (bench
// backfill --quick, 2 shared cores): a page's selection took 50-75 us an event of wall time for
// ~9 us of the origin database's CPU, and the wait charged for it was ~40% of the run. Limit: a
// build whose first pages are cheaper than the rest (a warm cache, then a cold one) paces the
// rest by the cheap ones, taking more than its share while they last.
type backfillPacer struct {
	share    int           // percent of the time the build may work (1..99 when paced)
	cheapest time.Duration // the cheapest work per event of a page so far
	seen     bool          // a page was timed
}

// pause returns how long to wait after a page of events that took took (selection, bundling,
// publishing).
func (p *backfillPacer) pause(took time.Duration, events int) time.Duration {
	if events <= 0 || p.share <= 0 || p.share >= 100 {
		return 0
	}
	if rate := took / time.Duration(events); !p.seen || rate < p.cheapest {
		p.cheapest, p.seen = rate, true
	}
	return p.cheapest * time.Duration(events) * time.Duration(100-p.share) / time.Duration(p.share)
}

// page reads the next n events of the selection strictly after after (nil: from the start): the
// own lane first (Position.Lane empty), then, when copies are served, the forwarded copies of
// other lanes in (lane, stream, version) order.
func (s *Server) page(ctx context.Context, sel store.RedeliverySelection, after *wire.Position, n int, copies bool) ([]store.EventCopy, error) {
	var out []store.EventCopy
	if after == nil || after.Lane == "" {
		var cursor store.RedeliveryCursor
		if after != nil {
			cursor = store.RedeliveryCursor{AfterStream: &after.Stream, AfterVersion: &after.Version}
		}
		own, err := store.RedeliveryPage(ctx, s.Pool, s.Service, sel, cursor, n, s.Limits.MaxEventsPerRequest)
		if err != nil || len(own) == n || !copies {
			return own, err
		}
		out, after = own, nil
	}
	var cursor store.CopiesCursor
	if after != nil {
		cursor = store.CopiesCursor{Lane: after.Lane, Stream: &after.Stream, Version: &after.Version}
	}
	forwarded, err := store.RedeliveryCopiesPage(ctx, s.Pool, sel.Requester, sel.EventTypes, cursor, n-len(out),
		s.Limits.MaxEventsPerRequest, sel.AtMostOnceTypes)
	return append(out, forwarded...), err
}

// authorize returns a refusal reason, or "" when the requester may receive everything it asks:
// every (tenant, type) pair a request names must be granted (invariant 11), or nothing is
// shipped. A request naming no tenant is served its granted tenants only (the selection filters
// by the requester's grants in SQL either way).
func (s *Server) authorize(ctx context.Context, requester string, req wire.RedeliveryRequest) (string, error) {
	if len(req.Types) == 0 {
		return "the request names no event type", nil
	}
	if len(req.Tenants) == 0 {
		return "", nil
	}
	ungranted, err := store.UngrantedPairs(ctx, s.Pool, requester, req.Types, req.Tenants)
	if errors.Is(err, store.ErrInvalidInput) {
		return err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	if len(ungranted) > 0 {
		pairs := make([]string, len(ungranted))
		for i, p := range ungranted {
			pairs[i] = fmt.Sprintf("%q/%s", p.Tenant, p.EventType)
		}
		return fmt.Sprintf("%s is not granted tenant/type %s", requester, strings.Join(pairs, ", ")), nil
	}
	return "", nil
}

// drop counts (at the control endpoint's seam, when registered) and logs a request not served.
func (s *Server) drop(reason string, env wire.Envelope, detail string) {
	if s.seam != nil {
		s.seam.Count(reason, env, detail)
		return
	}
	s.Logger.Warn("redelivery: request dropped", "reason", reason, "from", env.From, "detail", detail)
}

func (s *Server) refuse(requester string, req wire.RedeliveryRequest, reason string) {
	s.refused.Add(1)
	s.Logger.Warn("redelivery: request refused, nothing sent", "request", req.RequestID, "requester", requester,
		"reason", reason, "tenants", req.Tenants, "types", req.Types)
}

// selection is the store's view of a request's filters, for requester: SQL selects only the
// pairs requester is granted.
func selection(requester string, req wire.RedeliveryRequest) store.RedeliverySelection {
	return store.RedeliverySelection{Tenants: req.Tenants, EventTypes: req.Types, Streams: req.Streams,
		FromSeq: req.FromSeq, ToSeq: req.ToSeq, TypeSeqRanges: req.TypeSeqRanges, Requester: requester, StateOnly: req.StateOnly,
		AtMostOnceTypes: req.AtMostOnceTypes}
}

// unservable asks SQL which requested sequences cannot be served; only a request naming a
// window or type_seq ranges can name them.
func (s *Server) unservable(ctx context.Context, sel store.RedeliverySelection) ([]wire.Unservable, error) {
	if sel.FromSeq == nil && len(sel.TypeSeqRanges) == 0 {
		return nil, nil
	}
	found, err := store.RedeliveryUnservable(ctx, s.Pool, sel)
	if err != nil {
		return nil, err
	}
	var out []wire.Unservable
	for _, u := range found {
		out = append(out, wire.Unservable{Tenant: u.Tenant, Type: u.EventType, Reason: u.Reason, TypeSeqs: u.TypeSeqs, OriginSeqs: u.OriginSeqs})
	}
	return out, nil
}

// bundler accumulates one stream's ordered events and ships a bundle at each cap or stream change.
type bundler struct {
	server    *Server
	ctx       context.Context
	requester string
	req       wire.RedeliveryRequest
	current   wire.Bundle
	payloads  []byte
	bundles   int
	inFlight  []jetstream.PubAckFuture
}

func (b *bundler) add(e store.EventCopy) error {
	limits := b.server.Limits
	// A plain repair's bundle is one stream's slice; a backfill's (state-only) packs consecutive
	// streams up to the caps: history is mostly short streams, and a bundle per stream cost a
	// publish, an answer check and a JSON envelope per few events (bench backfill: 25 events a
	// bundle, 2 000 bundles for 50 000 events).
	newStream := e.StreamID != b.current.StreamID && !b.req.StateOnly
	if len(b.current.Events) > 0 && (newStream || e.Origin != b.current.Origin ||
		len(b.current.Events) >= limits.MaxBundleEvents ||
		len(b.payloads)+len(e.Payload) > limits.MaxBundleBytes) {
		if err := b.flush(); err != nil {
			return err
		}
	}
	if len(b.current.Events) == 0 {
		// Origin is the events' lane: the own lane's, or a forwarded copy's origin.
		b.current = wire.Bundle{RequestID: b.req.RequestID, Origin: e.Origin, StreamID: e.StreamID, StateOnly: b.req.StateOnly}
	}
	event := wire.BundleEvent{
		ID: e.EventID, OriginSeq: e.OriginSeq, TypeSeq: e.TypeSeq, Tenant: e.Tenant, Type: e.EventType,
		Version: e.StreamVersion, Flags: int32(e.Flags), Len: len(e.Payload), Metadata: string(e.Metadata),
		OccurredAt: e.OccurredAt,
	}
	if e.StreamID != b.current.StreamID {
		event.Stream = e.StreamID
	}
	b.current.Events = append(b.current.Events, event)
	b.payloads = append(b.payloads, e.Payload...)
	return nil
}

func (b *bundler) flush() error {
	if len(b.current.Events) == 0 {
		return nil
	}
	env, err := wire.NewEnvelope(wire.KindRedeliveryBundle, b.server.Service, b.requester, b.current)
	if err != nil {
		return err
	}
	data, err := wire.Encode(env, b.payloads)
	if err != nil {
		return err
	}
	// Published asynchronously with a bounded window: the build never holds more than
	// maxInFlight bundles' bytes, and settle() waits for every acknowledgement before the
	// summary goes out.
	if len(b.inFlight) >= maxInFlight {
		if err := b.settle(); err != nil {
			return err
		}
	}
	future, err := b.server.JS.PublishAsync(wire.ControlSubjectFrom(b.requester, b.server.Service), data)
	if err != nil {
		return fmt.Errorf("publish bundle to %s: %w", b.requester, err)
	}
	b.inFlight = append(b.inFlight, future)
	b.bundles++
	b.current, b.payloads = wire.Bundle{}, nil
	return nil
}

// maxInFlight bounds the bundles published and not yet acknowledged by JetStream.
const maxInFlight = 32

// settle waits for every in-flight bundle's acknowledgement.
func (b *bundler) settle() error {
	defer func() { b.inFlight = b.inFlight[:0] }()
	for _, f := range b.inFlight {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("publish bundle to %s: %w", b.requester, err)
		case <-b.ctx.Done():
			return b.ctx.Err()
		}
	}
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
