// answer.go: the origin side. A ManifestServer answers a consumer's manifest request with the
// digests of a window (one fold per type over the request's tenant scope, per (tenant, type) by
// tenant pages, or type level, all from sealed epochs plus the live fringe; or stream level paged
// by stream id), chunked, every chunk carrying the watermark and the origin generation, directed to
// the requester (on its reply address when the request names one). A type-level answer's first
// chunk also carries the origin's closes and its
// announced history changes above the requester's cursor (history_changes_page). Only the
// (tenant, type) pairs the requester is granted are answered, and only the close-the-books floors
// and history changes of tenants it is granted (invariant 11). One answer build at a time per
// process; the rules are SQL's (answer_type_digests, answer_stream_digests_page).

package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// ManifestServer answers manifest requests for one service.
type ManifestServer struct {
	Pool       *pgxpool.Pool
	JS         jetstream.JetStream
	Service    string
	MaxDigests int // per chunk (default 500)
	Logger     *slog.Logger
	Metrics    *metrics.Instruments // nil: not measured

	build    sync.Mutex
	answered atomic.Int64
	chunks   atomic.Int64
}

// Counts: requests answered, chunks sent.
func (s *ManifestServer) Counts() (answered, chunks int64) { return s.answered.Load(), s.chunks.Load() }

// Register installs the request handler on control.
func (s *ManifestServer) Register(control *wire.Control) {
	control.Handle(wire.KindManifestRequest, s.answer)
}

func (s *ManifestServer) answer(ctx context.Context, env wire.Envelope, _ []byte) error {
	var req wire.ManifestRequest
	dec := json.NewDecoder(bytes.NewReader(env.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.From < 0 || req.To < req.From ||
		!knownLevel(req.Level) || (req.Reply != "" && !wire.ValidReplyToken(req.Reply)) {
		return fmt.Errorf("%w: manifest request from %s is malformed", wire.ErrPermanent, env.From)
	}
	received := time.Now()
	// One answer build at a time: a burst of audits after a deploy queues on the broker.
	s.build.Lock()
	defer s.build.Unlock()
	limit := s.MaxDigests
	if limit <= 0 {
		limit = MaxDigestsDefault
	}
	if req.MaxDigests > 0 && req.MaxDigests < limit {
		limit = req.MaxDigests
	}
	var digests []wire.ManifestDigest
	var ranges []wire.RangeFold
	var err error
	var watermark int64
	var resume string
	switch req.Level {
	case wire.LevelTypes:
		digests, watermark, err = s.typeLevel(ctx, env.From, req)
	case wire.LevelFolds:
		digests, watermark, err = s.foldLevel(ctx, env.From, req)
	case wire.LevelTenants:
		digests, watermark, resume, err = s.tenantLevel(ctx, env.From, req, limit)
	case wire.LevelRanges:
		ranges, watermark, err = s.rangeLevel(ctx, env.From, req)
	case wire.LevelRangeTenants:
		digests, watermark, err = s.rangeTenantsLevel(ctx, env.From, req)
	default:
		digests, watermark, resume, err = s.streamLevel(ctx, env.From, req, limit)
	}
	if err != nil {
		return err
	}
	var closes []wire.StreamClose
	var changes store.HistoryChangesPage
	if carriesHistory(req.Level) {
		if closes, err = s.closes(ctx, env.From); err != nil {
			return err
		}
		if changes, err = store.HistoryChangesAfter(ctx, s.Pool, req.ChangesAfter, env.From, MaxHistoryChangesPerAnswer); err != nil {
			return err
		}
	}
	// Read last: every change (and close) this answer carries bumped a generation at or below
	// this one, so a consumer whose seal predates any of them resets it (seal_generation_guard).
	generation, err := store.OriginGeneration(ctx, s.Pool)
	if err != nil {
		return err
	}
	chunks := max(1, (len(digests)+limit-1)/limit, (len(ranges)+limit-1)/limit)
	for i := range chunks {
		part := digests[min(i*limit, len(digests)):min((i+1)*limit, len(digests))]
		a := wire.ManifestAnswer{RequestID: req.RequestID, Origin: s.Service, Level: req.Level, From: req.From,
			Watermark: watermark, Generation: generation, Chunk: i + 1, Chunks: chunks, Digests: part,
			Ranges: ranges[min(i*limit, len(ranges)):min((i+1)*limit, len(ranges))]}
		if i == chunks-1 {
			a.ResumeAfter = resume
		}
		if i == 0 {
			a.Closes = closes
			if carriesHistory(req.Level) {
				a.Changes, a.ChangesThrough, a.ChangesMore = wireChanges(changes.Changes), changes.Through, changes.More
			}
		}
		out, err := wire.NewEnvelope(wire.KindManifestAnswer, s.Service, env.From, a)
		if err != nil {
			return err
		}
		if err := wire.PublishReply(ctx, s.JS, out, req.Reply); err != nil {
			return err
		}
		s.chunks.Add(1)
	}
	s.answered.Add(1)
	s.Metrics.ManifestAnswered(req.Level, req.From > 0, time.Since(received))
	return nil
}

// closes returns this origin's close-the-books floors of the tenants requester is granted.
func (s *ManifestServer) closes(ctx context.Context, requester string) ([]wire.StreamClose, error) {
	floors, err := store.StreamCloses(ctx, s.Pool, requester)
	if err != nil {
		return nil, err
	}
	var out []wire.StreamClose
	for _, f := range floors {
		out = append(out, wire.StreamClose{Tenant: f.Tenant, StreamID: f.StreamID, BelowVersion: f.BelowVersion})
	}
	return out, nil
}

// MaxHistoryChangesPerAnswer bounds the history changes one type-level answer carries (about 100
// bytes each on the wire, so an answer stays far below the broker's 1 MiB); a consumer with more
// to catch up asks again from the answer's ChangesThrough.
const MaxHistoryChangesPerAnswer = 1000

func wireChanges(changes []store.HistoryChange) []wire.HistoryChange {
	var out []wire.HistoryChange
	for _, c := range changes {
		out = append(out, wire.HistoryChange{ChangeID: c.ChangeID, Kind: c.Kind, EventID: c.EventID, Flags: c.Flags})
	}
	return out
}

func (s *ManifestServer) typeLevel(ctx context.Context, requester string, req wire.ManifestRequest) ([]wire.ManifestDigest, int64, error) {
	answer, err := store.AnswerTypeDigests(ctx, s.Pool, requester, s.Service, req.From, req.To)
	if err != nil {
		return nil, 0, err
	}
	var out []wire.ManifestDigest
	for _, d := range answer.Digests {
		out = append(out, wire.ManifestDigest{Tenant: d.Tenant, Type: d.EventType, X0: d.X0, X1: d.X1, N: d.N})
	}
	return out, answer.Watermark, nil
}

func (s *ManifestServer) streamLevel(ctx context.Context, requester string, req wire.ManifestRequest, limit int) ([]wire.ManifestDigest, int64, string, error) {
	page, err := store.AnswerStreamDigestsPage(ctx, s.Pool, requester, s.Service, req.Types, req.From, req.To, req.AfterStream, limit, req.Tenants)
	if err != nil {
		return nil, 0, "", err
	}
	var out []wire.ManifestDigest
	for _, d := range page.Digests {
		out = append(out, wire.ManifestDigest{Stream: d.StreamID, Tenant: d.Tenant, Type: d.EventType, X0: d.X0, X1: d.X1, N: d.N})
	}
	return out, page.Watermark, page.ResumeAfter, nil
}

// knownLevel says whether a manifest request's level is one this server answers.
func knownLevel(level string) bool {
	switch level {
	case wire.LevelTypes, wire.LevelFolds, wire.LevelTenants, wire.LevelStreams, wire.LevelRanges, wire.LevelRangeTenants:
		return true
	}
	return false
}

// carriesHistory says whether answers at level carry the closes and history changes (the
// top-level answers an audit starts with).
func carriesHistory(level string) bool { return level == wire.LevelTypes || level == wire.LevelFolds }

// foldScope is a request's scope as the store reads it.
func foldScope(scope []wire.TypeScope) store.FoldScope {
	out := make(store.FoldScope, 0, len(scope))
	for _, t := range scope {
		out = append(out, store.TypeScope{EventType: t.Type, All: t.All, Tenants: t.Tenants})
	}
	return out
}

// foldLevel answers one fold per event type of the request's scope, over the tenants of it
// requester is granted (answer_type_folds): the healthy audit's O(types) answer.
func (s *ManifestServer) foldLevel(ctx context.Context, requester string, req wire.ManifestRequest) ([]wire.ManifestDigest, int64, error) {
	answer, err := store.AnswerTypeFolds(ctx, s.Pool, requester, s.Service, req.From, req.To, foldScope(req.Scope))
	if err != nil {
		return nil, 0, err
	}
	var out []wire.ManifestDigest
	for _, d := range answer.Digests {
		out = append(out, wire.ManifestDigest{Type: d.EventType, X0: d.X0, X1: d.X1, N: d.N})
	}
	return out, answer.Watermark, nil
}

// tenantLevel answers one tenant page of the request's scope (answer_tenant_digests_page).
func (s *ManifestServer) tenantLevel(ctx context.Context, requester string, req wire.ManifestRequest, limit int) ([]wire.ManifestDigest, int64, string, error) {
	page, err := store.AnswerTenantDigestsPage(ctx, s.Pool, requester, s.Service, req.From, req.To, foldScope(req.Scope), req.AfterTenant, limit)
	if err != nil {
		return nil, 0, "", err
	}
	var out []wire.ManifestDigest
	for _, d := range page.Digests {
		out = append(out, wire.ManifestDigest{Tenant: d.Tenant, Type: d.EventType, X0: d.X0, X1: d.X1, N: d.N})
	}
	return out, page.Watermark, page.ResumeAfter, nil
}

// rangeLevel answers one drill-down step (answer_range_folds): the request's key range split into
// its parts, one fold per (sub-range, type of the scope) over the tenants requester is granted.
// A bad range or split is refused by SQL (ErrInvalidInput: permanent, never retried).
func (s *ManifestServer) rangeLevel(ctx context.Context, requester string, req wire.ManifestRequest) ([]wire.RangeFold, int64, error) {
	answer, err := store.AnswerRangeFolds(ctx, s.Pool, requester, s.Service, req.From, req.To, foldScope(req.Scope), req.KeyLo, req.KeyHi, req.Parts)
	if err != nil {
		return nil, 0, err
	}
	out := make([]wire.RangeFold, 0, len(answer.Folds))
	for _, f := range answer.Folds {
		out = append(out, wire.RangeFold{Part: f.Part, Type: f.EventType, X0: f.X0, X1: f.X1, N: f.N, Pairs: f.Pairs})
	}
	return out, answer.Watermark, nil
}

// rangeTenantsLevel lists the (tenant, type) digests of the request's key range
// (answer_range_tenant_digests), chunked like any digest answer.
func (s *ManifestServer) rangeTenantsLevel(ctx context.Context, requester string, req wire.ManifestRequest) ([]wire.ManifestDigest, int64, error) {
	answer, err := store.AnswerRangeTenantDigests(ctx, s.Pool, requester, s.Service, req.From, req.To, foldScope(req.Scope), req.KeyLo, req.KeyHi)
	if err != nil {
		return nil, 0, err
	}
	var out []wire.ManifestDigest
	for _, d := range answer.Digests {
		out = append(out, wire.ManifestDigest{Tenant: d.Tenant, Type: d.EventType, X0: d.X0, X1: d.X1, N: d.N})
	}
	return out, answer.Watermark, nil
}
