// answer.go: the origin side. A ManifestServer answers a consumer's manifest request with the
// digests of a window (type level from sealed epochs plus the live fringe, or stream level paged by
// stream id), chunked, every chunk carrying the watermark and the origin generation, directed to
// the requester. Only the types the requester is granted are answered. One answer build at a time
// per process; the rules are SQL's (type_digests, stream_digests_page, ungranted_types).

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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/metrics"
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
		(req.Level != wire.LevelTypes && req.Level != wire.LevelStreams) {
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
	var generation int64
	if err := s.Pool.QueryRow(ctx, "select streamseal.origin_generation()").Scan(&generation); err != nil {
		return err
	}
	granted, err := s.granted(ctx, env.From)
	if err != nil {
		return err
	}
	var digests []wire.ManifestDigest
	var watermark int64
	var resume string
	switch req.Level {
	case wire.LevelTypes:
		digests, watermark, err = s.typeLevel(ctx, req, granted)
	default:
		digests, watermark, resume, err = s.streamLevel(ctx, req, granted, limit)
	}
	if err != nil {
		return err
	}
	var closes []wire.StreamClose
	if req.Level == wire.LevelTypes {
		if closes, err = s.closes(ctx); err != nil {
			return err
		}
	}
	chunks := max(1, (len(digests)+limit-1)/limit)
	for i := range chunks {
		part := digests[min(i*limit, len(digests)):min((i+1)*limit, len(digests))]
		a := wire.ManifestAnswer{RequestID: req.RequestID, Origin: s.Service, Level: req.Level, From: req.From,
			Watermark: watermark, Generation: generation, Chunk: i + 1, Chunks: chunks, Digests: part}
		if i == chunks-1 {
			a.ResumeAfter = resume
		}
		if i == 0 {
			a.Closes = closes
		}
		out, err := wire.NewEnvelope(wire.KindManifestAnswer, s.Service, env.From, a)
		if err != nil {
			return err
		}
		if err := wire.Publish(ctx, s.JS, out, nil); err != nil {
			return err
		}
		s.chunks.Add(1)
	}
	s.answered.Add(1)
	s.Metrics.ManifestAnswered(req.Level, req.From > 0, time.Since(received))
	return nil
}

// closes returns this origin's close-the-books floors.
func (s *ManifestServer) closes(ctx context.Context) ([]wire.StreamClose, error) {
	rows, err := s.Pool.Query(ctx, "select tenant, stream_id, below_version from streamseal.stream_closes order by 1, 2")
	if err != nil {
		return nil, fmt.Errorf("stream closes: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[wire.StreamClose])
}

// granted returns the event types requester may receive (isolation: digests only for those).
func (s *ManifestServer) granted(ctx context.Context, requester string) (map[string]bool, error) {
	rows, err := s.Pool.Query(ctx, "select event_type from streamseal.grants where service = $1", requester)
	if err != nil {
		return nil, err
	}
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	out := map[string]bool{}
	for _, t := range types {
		out[t] = true
	}
	return out, err
}

func (s *ManifestServer) typeLevel(ctx context.Context, req wire.ManifestRequest, granted map[string]bool) ([]wire.ManifestDigest, int64, error) {
	rows, err := s.Pool.Query(ctx, "select tenant, event_type, x0, x1, n, watermark from streamseal.type_digests($1, $2, $3)",
		s.Service, req.From, req.To)
	if err != nil {
		return nil, 0, fmt.Errorf("type digests: %w", err)
	}
	defer rows.Close()
	var out []wire.ManifestDigest
	var watermark int64
	for rows.Next() {
		var tenant, eventType *string
		var d wire.ManifestDigest
		if err := rows.Scan(&tenant, &eventType, &d.X0, &d.X1, &d.N, &watermark); err != nil {
			return nil, 0, err
		}
		if eventType == nil || !granted[*eventType] {
			continue
		}
		d.Tenant, d.Type = *tenant, *eventType
		out = append(out, d)
	}
	return out, watermark, rows.Err()
}

func (s *ManifestServer) streamLevel(ctx context.Context, req wire.ManifestRequest, granted map[string]bool, limit int) ([]wire.ManifestDigest, int64, string, error) {
	var types []string
	for _, t := range req.Types {
		if granted[t] {
			types = append(types, t)
		}
	}
	var after *string
	if req.AfterStream != "" {
		after = &req.AfterStream
	}
	rows, err := s.Pool.Query(ctx, `
		select stream_id, tenant, event_type, x0, x1, n, watermark, resume_after
		from streamseal.stream_digests_page($1, $2, $3, $4, $5, $6)`, s.Service, types, req.From, req.To, after, limit)
	if err != nil {
		return nil, 0, "", fmt.Errorf("stream digests page: %w", err)
	}
	defer rows.Close()
	var out []wire.ManifestDigest
	var watermark int64
	var resume string
	for rows.Next() {
		var stream, tenant, eventType, resumeAfter *string
		var d wire.ManifestDigest
		if err := rows.Scan(&stream, &tenant, &eventType, &d.X0, &d.X1, &d.N, &watermark, &resumeAfter); err != nil {
			return nil, 0, "", err
		}
		if resumeAfter != nil {
			resume = *resumeAfter
		}
		if stream == nil {
			continue
		}
		d.Stream, d.Tenant, d.Type = *stream, *tenant, *eventType
		out = append(out, d)
	}
	if len(types) == 0 {
		out, resume = nil, ""
	}
	return out, watermark, resume, rows.Err()
}
