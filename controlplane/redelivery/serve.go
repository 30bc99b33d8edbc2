// serve.go: the origin side. A Server serves redelivery requests arriving on this service's
// control inbox: it authorizes (grants and named tenants, in SQL), pages the selection
// (streamseal.select_redelivery, keyset by stream and version), bundles each stream's ordered
// slice under count and byte caps with raw payload bytes, ships the bundles to the requester, and
// ends with a summary naming what cannot be served. One build at a time per process; requests
// beyond the queue stay on the broker.

package redelivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

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
}

// Defaults of Limits (the proposal's pump options), used where a field is left zero.
const (
	MaxEventsPerRequestDefault = 10000
	PageSizeDefault            = 500
	MaxBundleEventsDefault     = 500
	MaxBundleBytesDefault      = 192000
)

// DefaultLimits are the production defaults.
var DefaultLimits = Limits{MaxEventsPerRequest: MaxEventsPerRequestDefault, PageSize: PageSizeDefault,
	MaxBundleEvents: MaxBundleEventsDefault, MaxBundleBytes: MaxBundleBytesDefault}

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

	queue            chan request
	refused, shipped atomic.Int64
	requestsReceived atomic.Int64
}

type request struct {
	from string
	req  wire.RedeliveryRequest
}

// Counts: requests received and refused, events shipped.
func (s *Server) Counts() (received, refused, shipped int64) {
	return s.requestsReceived.Load(), s.refused.Load(), s.shipped.Load()
}

// Register installs the request handler on control. Call before control.Run, then Run.
func (s *Server) Register(control *wire.Control) {
	s.queue = make(chan request, 16)
	control.Handle(wire.KindRedeliveryRequest, s.enqueue)
}

// enqueue accepts a request into the build queue; a full queue leaves it on the broker.
func (s *Server) enqueue(ctx context.Context, env wire.Envelope, _ []byte) error {
	var req wire.RedeliveryRequest
	if err := decodeBody(env, &req); err != nil {
		s.refuse(env.From, req, err.Error())
		return nil
	}
	s.requestsReceived.Add(1)
	select {
	case s.queue <- request{from: env.From, req: req}:
		return nil
	default:
		return errors.New("redelivery queue full: the request stays on the broker")
	}
}

// Run builds queued requests one at a time until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	s.fillLimits()
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-s.queue:
			if err := s.build(ctx, r.from, r.req); err != nil && ctx.Err() == nil {
				s.Logger.Error("redelivery: build failed", "request", r.req.RequestID, "requester", r.from, "err", err)
			}
		}
	}
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
	return l
}

// build serves one request: authorize, page, bundle, ship, summarize.
func (s *Server) build(ctx context.Context, requester string, req wire.RedeliveryRequest) error {
	if s.OnBuild != nil {
		s.OnBuild(req.RequestID, "start")
		defer s.OnBuild(req.RequestID, "end")
	}
	if reason, err := s.authorize(ctx, requester, req); err != nil {
		return err
	} else if reason != "" {
		s.refuse(requester, req, reason)
		return nil
	}
	limit := req.MaxEvents
	if limit <= 0 || limit > s.Limits.MaxEventsPerRequest {
		limit = s.Limits.MaxEventsPerRequest
	}
	start := time.Now()
	summary := wire.RedeliverySummary{RequestID: req.RequestID, Origin: s.Service}
	b := &bundler{server: s, ctx: ctx, requester: requester, req: req}
	sel := selection(req)
	var after store.RedeliveryCursor
	for summary.Shipped < limit {
		want := min(s.Limits.PageSize, limit-summary.Shipped)
		page, err := store.RedeliveryPage(ctx, s.Pool, s.Service, sel, after, want, s.Limits.MaxEventsPerRequest)
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := b.add(e); err != nil {
				return err
			}
		}
		summary.Shipped += len(page)
		if len(page) < want {
			break // the selection is exhausted
		}
		last := page[len(page)-1]
		after = store.RedeliveryCursor{AfterStream: &last.StreamID, AfterVersion: &last.StreamVersion}
	}
	if summary.Shipped >= limit {
		more, err := store.RedeliveryPage(ctx, s.Pool, s.Service, sel, after, 1, s.Limits.MaxEventsPerRequest)
		if err != nil {
			return err
		}
		summary.Truncated = len(more) > 0
	}
	if err := b.flush(); err != nil {
		return err
	}
	if err := b.settle(); err != nil {
		return err
	}
	summary.Bundles = b.bundles
	unservable, err := s.unservable(ctx, sel)
	if err != nil {
		return err
	}
	summary.Unservable = unservable
	s.shipped.Add(int64(summary.Shipped))
	env, err := wire.NewEnvelope(wire.KindRedeliverySummary, s.Service, requester, summary)
	if err != nil {
		return err
	}
	if err := wire.Publish(ctx, s.JS, env, nil); err != nil {
		return err
	}
	s.Logger.Info("redelivery: served", "request", req.RequestID, "requester", requester, "shipped", summary.Shipped,
		"bundles", summary.Bundles, "truncated", summary.Truncated, "unservable", len(summary.Unservable),
		"took", time.Since(start))
	s.Metrics.RedeliveryBuilt(time.Since(start))
	return nil
}

// authorize returns a refusal reason, or "" when the requester may receive everything it asks.
func (s *Server) authorize(ctx context.Context, requester string, req wire.RedeliveryRequest) (string, error) {
	if len(req.Tenants) == 0 {
		return "the request names no tenant", nil
	}
	if len(req.Types) == 0 {
		return "the request names no event type", nil
	}
	ungranted, err := store.UngrantedTypes(ctx, s.Pool, requester, req.Types)
	if errors.Is(err, store.ErrInvalidInput) {
		return err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	if len(ungranted) > 0 {
		return fmt.Sprintf("%s is not granted event types %s", requester, strings.Join(ungranted, ", ")), nil
	}
	return "", nil
}

func (s *Server) refuse(requester string, req wire.RedeliveryRequest, reason string) {
	s.refused.Add(1)
	s.Logger.Warn("redelivery: request refused, nothing sent", "request", req.RequestID, "requester", requester,
		"reason", reason, "tenants", req.Tenants, "types", req.Types)
}

// selection is the store's view of a request's filters.
func selection(req wire.RedeliveryRequest) store.RedeliverySelection {
	return store.RedeliverySelection{Tenants: req.Tenants, EventTypes: req.Types, Streams: req.Streams,
		FromSeq: req.FromSeq, ToSeq: req.ToSeq, TypeSeqRanges: req.TypeSeqRanges}
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
	if len(b.current.Events) > 0 && (e.StreamID != b.current.StreamID ||
		len(b.current.Events) >= limits.MaxBundleEvents ||
		len(b.payloads)+len(e.Payload) > limits.MaxBundleBytes) {
		if err := b.flush(); err != nil {
			return err
		}
	}
	if len(b.current.Events) == 0 {
		b.current = wire.Bundle{RequestID: b.req.RequestID, Origin: b.server.Service, StreamID: e.StreamID, StateOnly: b.req.StateOnly}
	}
	b.current.Events = append(b.current.Events, wire.BundleEvent{
		ID: e.EventID, OriginSeq: e.OriginSeq, TypeSeq: e.TypeSeq, Tenant: e.Tenant, Type: e.EventType,
		Version: e.StreamVersion, Flags: int32(e.Flags), Len: len(e.Payload), Metadata: string(e.Metadata),
		OccurredAt: e.OccurredAt,
	})
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
	future, err := b.server.JS.PublishAsync(wire.ControlSubject(b.requester), data)
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
