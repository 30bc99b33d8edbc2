// Package feedhttp serves the application feed (package feed, DESIGN.md "Read side") to services
// in any language: Server-Sent Events on GET /feed, where the SSE id of each batch's last event
// is the resume token, so a standard client reconnecting with Last-Event-ID resumes exactly
// (at least once: a batch cut off mid-way is sent again). Refusals answer before the stream
// starts: 400 (bad token, another scope), 409 (conflict), 410 (gone), with a JSON body
// {"error", "message"}. It also writes the JSON lines `streamseal tail` prints. It owns the
// feed's metrics; it holds no rule (feed.sql does) and no SQL (store does).
package feedhttp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/feed"
)

// LagEveryDefault bounds how often one reader refreshes the boundary-lag gauges.
const LagEveryDefault = time.Second

// Metrics are the feed's instruments.
type Metrics struct {
	Readers   prometheus.Gauge
	Delivered prometheus.Counter
	Lag       *prometheus.GaugeVec
	Held      prometheus.Gauge
}

// NewMetrics registers the feed's instruments on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Readers: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "streamseal", Name: "feed_readers",
			Help: "SSE feed readers connected"}),
		Delivered: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "streamseal", Name: "feed_events_delivered_total",
			Help: "events written to SSE feed readers"}),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "streamseal", Name: "feed_boundary_lag",
			Help: "per origin, the store's head minus the token boundary of the reader that last reported (origin_seqs not yet certified as taken)"}, []string{"origin"}),
		Held: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "streamseal", Name: "feed_held_copies",
			Help: "committed copies the feed holds back behind a transaction still open (the horizon's cost)"}),
	}
	if reg != nil {
		reg.MustRegister(m.Readers, m.Delivered, m.Lag, m.Held)
	}
	return m
}

// Event is one event as JSON: payload verbatim when it is JSON, else payload_base64.
type Event struct {
	EventID       string          `json:"event_id"`
	Origin        string          `json:"origin"`
	OriginSeq     int64           `json:"origin_seq"`
	TypeSeq       int64           `json:"type_seq"`
	Tenant        string          `json:"tenant"`
	StreamID      string          `json:"stream_id"`
	StreamVersion int64           `json:"stream_version"`
	EventType     string          `json:"event_type"`
	Flags         int32           `json:"flags"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	PayloadBase64 string          `json:"payload_base64,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	OccurredAt    time.Time       `json:"occurred_at"`
	StoredAt      time.Time       `json:"stored_at"`
	// Token, on the last event of a batch: resume after it.
	Token string `json:"token,omitempty"`
}

// JSON renders e (token set on a batch's last event).
func JSON(e feed.Event, token string) ([]byte, error) {
	out := Event{EventID: e.EventID.String(), Origin: e.Origin, OriginSeq: e.OriginSeq, TypeSeq: e.TypeSeq, Tenant: e.Tenant,
		StreamID: e.StreamID, StreamVersion: e.StreamVersion, EventType: e.EventType, Flags: e.Flags,
		OccurredAt: e.OccurredAt, StoredAt: e.StoredAt, Token: token}
	if json.Valid(e.Payload) {
		out.Payload = e.Payload
	} else {
		out.PayloadBase64 = base64.StdEncoding.EncodeToString(e.Payload)
	}
	if len(e.Metadata) > 0 && json.Valid(e.Metadata) {
		out.Metadata = e.Metadata
	}
	return json.Marshal(out)
}

// Refusal is the JSON body of a refused request.
type Refusal struct {
	Error   string `json:"error"` // bad_request, conflict, gone
	Message string `json:"message"`
}

// Status maps a feed error to its HTTP status and refusal (0 when err is no refusal).
func Status(err error) (int, Refusal) {
	switch {
	case errors.Is(err, feed.ErrBadRequest):
		return http.StatusBadRequest, Refusal{"bad_request", err.Error()}
	case errors.Is(err, feed.ErrConflict):
		return http.StatusConflict, Refusal{"conflict", err.Error()}
	case errors.Is(err, feed.ErrGone):
		return http.StatusGone, Refusal{"gone", err.Error()}
	}
	return 0, Refusal{}
}

// Server serves GET /feed?types=a,b&tenants=x,y[&resume=TOKEN] (Last-Event-ID wins over resume).
type Server struct {
	Pool    *pgxpool.Pool
	Metrics *Metrics
	Logger  *slog.Logger
	// BatchSize of each read (0: feed.BatchSizeDefault).
	BatchSize int
}

// Handler returns the feed's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /feed", s.serveFeed)
	return mux
}

func splitList(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func (s *Server) serveFeed(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(Refusal{"bad_request", "query string: " + err.Error()})
		return
	}
	opts := feed.Options{Types: splitList(q.Get("types")), Tenants: splitList(q.Get("tenants")), BatchSize: s.BatchSize,
		Resume: q.Get("resume")}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		opts.Resume = id
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	// Admission before the stream starts: a refusal is a status, not a broken stream.
	if _, err := feed.Read(r.Context(), s.Pool, opts, opts.Resume, 1); err != nil {
		if code, body := Status(err); code != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(body)
			return
		}
		if errors.Is(err, store.ErrInvalidInput) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(Refusal{"bad_request", err.Error()})
			return
		}
		s.logger().Error("feed: admission read failed", "err", err)
		http.Error(w, "feed unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	s.Metrics.Readers.Inc()
	defer s.Metrics.Readers.Dec()

	sub := feed.NewSubscriber(s.Pool, opts)
	var lagMu sync.Mutex
	lastLag := time.Time{}
	err = sub.Run(r.Context(), func(ctx context.Context, _ pgx.Tx, b feed.Batch) error {
		for i, e := range b.Events {
			token := ""
			if i == len(b.Events)-1 {
				token = b.Token
			}
			if err := writeEvent(w, e, token); err != nil {
				return err
			}
		}
		flusher.Flush()
		s.Metrics.Delivered.Add(float64(len(b.Events)))
		lagMu.Lock()
		due := time.Since(lastLag) >= LagEveryDefault
		if due {
			lastLag = time.Now()
		}
		lagMu.Unlock()
		if due {
			s.reportLag(ctx, opts, b.Token)
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) && r.Context().Err() == nil {
		s.logger().Warn("feed: reader stopped", "err", err)
	}
}

// writeEvent writes one SSE event: id (the token) on a batch's last event only, so a client cut
// off mid-batch resumes from the batch's start.
func writeEvent(w io.Writer, e feed.Event, token string) error {
	data, err := JSON(e, "")
	if err != nil {
		return err
	}
	if token != "" {
		if _, err := fmt.Fprintf(w, "id: %s\n", token); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "data: %s\n\n", data)
	return err
}

// reportLag sets the boundary-lag gauges from token and the store's heads, and the held gauge.
func (s *Server) reportLag(ctx context.Context, opts feed.Options, token string) {
	scope := store.FeedScope{Types: opts.Types, Tenants: opts.Tenants}
	bounds, err := store.FeedTokenBoundaries(ctx, s.Pool, token)
	if err != nil {
		return
	}
	heads, err := store.FeedOriginHeads(ctx, s.Pool, scope)
	if err != nil {
		return
	}
	for _, b := range bounds {
		if head, ok := heads[b.Origin]; ok {
			s.Metrics.Lag.WithLabelValues(b.Origin).Set(float64(max(head-b.Boundary, 0)))
		}
	}
	if held, _, err := store.FeedHorizon(ctx, s.Pool); err == nil {
		s.Metrics.Held.Set(float64(held))
	}
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}
