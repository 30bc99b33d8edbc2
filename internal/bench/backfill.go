package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// BackfillOptions sizes the backfill benchmark.
type BackfillOptions struct {
	History      int           // events of the type the consumer starts consuming, written before it does
	PayloadBytes int           // payload size of each event
	LiveFor      time.Duration // how long the origin's live append rate is measured without a backfill
}

// QuickBackfill and FullBackfill are the --quick and default sizes (the 1M events).
var (
	QuickBackfill = BackfillOptions{History: 50_000, PayloadBytes: 400, LiveFor: 3 * time.Second}
	FullBackfill  = BackfillOptions{History: 1_000_000, PayloadBytes: 400, LiveFor: 5 * time.Second}
)

// BackfillResult carries the figures.
type BackfillResult struct {
	EventsPerSecond float64 // history delivered end to end (subscribe -> complete)
	WireRatio       float64 // control bytes received by the consumer / payload bytes of the history
	// OriginLiveRatio is the origin's live append throughput while it serves the backfill over
	// its throughput just before, in the same run (target >= 0.8).
	OriginLiveRatio float64
	// The floor, same run: the raw pipeline moving the same history with the same live appends
	// running (no integrity at all): its events/s and the live appends' ratio meanwhile.
	FloorEventsPerSecond, FloorOriginLiveRatio float64
}

// Backfill measures subscription growth end to end: orders wrote History events of bench.a
// before billing consumes it, and the broker no longer holds them (the stream is purged); billing
// subscribes at run time, its backfill loop sends one broadcast state-only request, orders serves
// it (capped per request, followed by billing until done), and billing stores it all. Measured:
// events/s from the subscription to the type's completion, the control bytes billing received
// against the payload bytes, and orders' live append throughput during the backfill against the
// same loop without it, just before.
func Backfill(ctx context.Context, newDB harness.NewDatabase, opts BackfillOptions, out io.Writer) (BackfillResult, error) {
	var r BackfillResult
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := harness.New(ctx, newDB, quiet)
	if err != nil {
		return r, err
	}
	defer h.Close()
	var stages backfillStages
	// The origin's pacing of backfill answers: the run option's environment variable, so the
	// bench can show what each share costs (unset: the default).
	limits := redelivery.DefaultLimits
	if v := os.Getenv("STREAMSEAL_BACKFILL_SERVE_SHARE"); v != "" {
		share, err := strconv.Atoi(v)
		if err != nil || share < 1 || share > 100 {
			return r, fmt.Errorf("STREAMSEAL_BACKFILL_SERVE_SHARE %q: expected a percent in 1..100", v)
		}
		limits.BackfillShare = share
	}
	fmt.Fprintf(out, "origin serves backfill answers at most %d%% of the time (STREAMSEAL_BACKFILL_SERVE_SHARE)\n", limits.BackfillShare)
	orders, err := h.Start(ctx, "orders", harness.Options{Grants: map[string][]string{"billing": {"bench.a"}}, Limits: limits}, func(s *harness.Service) {
		s.Redelivery.OnBuild = stages.build
		s.Redelivery.OnPage = stages.page
		s.Control.Tap = func(_ string, data []byte) { stages.mark("request arrives at the origin", len(data)) }
	})
	if err != nil {
		return r, err
	}
	var wireBytes atomic.Int64
	billing, err := h.Start(ctx, "billing", harness.Options{Consumes: []string{"bench.b"}}, func(s *harness.Service) {
		s.Control.Tap = func(_ string, data []byte) {
			wireBytes.Add(int64(len(data)))
			stages.mark("consumer takes a message", len(data))
		}
		s.Repair.OnStored = stages.stored
		s.Backfill.Interval = 20 * time.Millisecond
		s.Inbox.ReconcileInterval = 20 * time.Millisecond
	})
	if err != nil {
		return r, err
	}
	fmt.Fprintf(out, "backfill benchmark: %d events of %d payload bytes written before the consumer subscribes; the broker keeps none\n",
		opts.History, opts.PayloadBytes)
	if _, err := orders.Pool.Exec(ctx, `
		select streamseal.append(array(
			select row(gen_random_uuid(), 'acme', 's' || (i % 2000), i / 2000 + 1, 'bench.a', 0,
			           convert_to('{"n":' || i || ',"pad":"' || repeat('x', $2 - 20) || '"}', 'UTF8'), null, null)::streamseal.new_event
			from generate_series(0, $1 - 1) i))`, opts.History, opts.PayloadBytes); err != nil {
		return r, fmt.Errorf("generate history: %w", err)
	}
	if err := waitUntil(ctx, func() (bool, error) {
		var published int64
		err := orders.Pool.QueryRow(ctx, "select published_through from streamseal.relay_state").Scan(&published)
		return published == int64(opts.History), err
	}); err != nil {
		return r, err
	}
	stream, err := orders.JS.Stream(ctx, wire.EventsStream)
	if err != nil {
		return r, err
	}
	if err := stream.Purge(ctx); err != nil {
		return r, err
	}
	var payloadBytes int64
	if err := orders.Pool.QueryRow(ctx, "select sum(length(payload)) from streamseal.events where event_type = 'bench.a'").Scan(&payloadBytes); err != nil {
		return r, err
	}

	// The origin's live appends without a backfill, then during one: the same loop, one stream.
	var next int64 = 1
	live := func(ctx context.Context, appended *atomic.Int64) error {
		payload := []byte(fmt.Sprintf(`{"pad":"%0*d"}`, opts.PayloadBytes-10, 0))
		for ctx.Err() == nil {
			// Taken before the append: one cancelled mid-commit may have stored its batch.
			version := next
			next += 100
			batch := make([]store.NewEvent, 100)
			for i := range batch {
				batch[i] = store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "live", StreamVersion: version + int64(i),
					EventType: "bench.c", Payload: payload}
			}
			if _, err := store.EventsAppend(ctx, orders.Pool, batch); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			appended.Add(int64(len(batch)))
		}
		return nil
	}
	var before atomic.Int64
	originCPU := newDatabaseCPU(ctx, orders.Pool)
	baseCPUFrom, baseProcessFrom := originCPU.Now(), processCPU()
	baseCtx, stopBase := context.WithTimeout(ctx, opts.LiveFor)
	baseStart := time.Now()
	err = live(baseCtx, &before)
	baseTook := time.Since(baseStart)
	stopBase()
	if err != nil {
		return r, err
	}
	baseRate := float64(before.Load()) / baseTook.Seconds()
	// The live loop's own cost, so the backfill's share of the origin's CPU can be told apart.
	livePerEvent := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(max(before.Load(), 1)) }
	fmt.Fprintf(out, "cpu of live appends alone: origin's database %.1f us an event, this process %.1f us\n",
		livePerEvent(originCPU.Now()-baseCPUFrom), livePerEvent(processCPU()-baseProcessFrom))

	// Where the CPU goes during the backfill (2 shared cores: the stages compete for it): each
	// database's backends, the whole server, and this process (both services' Go side, NATS).
	consumerCPU, server := newDatabaseCPU(ctx, billing.Pool), newServerCPU(ctx, orders.Pool)
	originFrom, consumerFrom, serverFrom, processFrom := originCPU.Now(), consumerCPU.Now(), server.Now(), processCPU()

	var during atomic.Int64
	duringCtx, stopDuring := context.WithCancel(ctx)
	liveDone := make(chan error, 1)
	start := time.Now()
	stages.begin(start)
	go func() { liveDone <- live(duringCtx, &during) }()
	if err := store.SubscriptionsAdd(ctx, billing.Pool, "", []string{"bench.a"}, store.AllTenants()); err != nil {
		stopDuring()
		return r, err
	}
	err = waitUntil(ctx, func() (bool, error) {
		types, err := store.ConsumedTypes(ctx, billing.Pool)
		if err != nil {
			return false, err
		}
		for _, c := range types {
			if c.EventType == "bench.a" && c.Status == store.ConsumedComplete {
				var n int
				err := billing.Pool.QueryRow(ctx, "select count(*) from streamseal.events where event_type = 'bench.a'").Scan(&n)
				return n == opts.History, err
			}
		}
		return false, nil
	})
	took := time.Since(start)
	originSpent, consumerSpent := originCPU.Now()-originFrom, consumerCPU.Now()-consumerFrom
	serverSpent, processSpent := server.Now()-serverFrom, processCPU()-processFrom
	stopDuring()
	if liveErr := <-liveDone; err == nil {
		err = liveErr
	}
	if err != nil {
		return r, err
	}
	duringRate := float64(during.Load()) / took.Seconds()
	r.EventsPerSecond = float64(opts.History) / took.Seconds()
	r.WireRatio = float64(wireBytes.Load()) / float64(payloadBytes)
	r.OriginLiveRatio = duringRate / baseRate
	fmt.Fprintf(out, "backfill: %d events state-only in %s: %.0f events/s (target >= 20000)\n", opts.History, took.Round(time.Millisecond), r.EventsPerSecond)
	fmt.Fprintf(out, "wire: %d control bytes for %d payload bytes: ratio %.3f (target <= 1.5)\n", wireBytes.Load(), payloadBytes, r.WireRatio)
	fmt.Fprintf(out, "origin live appends: %.0f events/s during the backfill, %.0f without (just before): ratio %.3f (target >= 0.8)\n",
		duringRate, baseRate, r.OriginLiveRatio)
	perEvent := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(opts.History) }
	fmt.Fprintf(out, "cpu during the backfill (%s wall, 2 cores: %s): origin's database %s (%.1f us an event, its live appends included), consumer's database %s (%.1f us), whole server %s (%.1f us), this process (Go sides, NATS) %s (%.1f us)\n",
		took.Round(time.Millisecond), (2 * took).Round(time.Millisecond), originSpent, perEvent(originSpent), consumerSpent, perEvent(consumerSpent),
		serverSpent, perEvent(serverSpent), processSpent, perEvent(processSpent))
	stages.report(out, took)
	if os.Getenv("STREAMSEAL_BENCH_TIMELINE") != "" {
		stages.timeline(out)
	}

	// The floor: the same history moved by the raw pipeline (bench repair's baseline: a plain
	// select, JSON batches over the same NATS server, a plain insert; no integrity at all) while
	// the same live loop runs. What no design can beat here: the figures above read against it.
	if r.FloorEventsPerSecond, r.FloorOriginLiveRatio, err = backfillFloor(ctx, h, orders, billing, opts, live, baseRate, out); err != nil {
		return r, err
	}
	fmt.Fprintf(out, "RESULT backfill events_per_s=%.0f wire_ratio=%.3f origin_live_ratio=%.3f floor_events_per_s=%.0f floor_origin_live_ratio=%.3f\n",
		r.EventsPerSecond, r.WireRatio, r.OriginLiveRatio, r.FloorEventsPerSecond, r.FloorOriginLiveRatio)
	return r, nil
}

// backfillFloor moves the origin's history (origin_seq 1..opts.History: written before any live
// event) to the consumer with the raw pipeline while live appends run as during the backfill, and
// returns the raw pipeline's events/s and the live appends' rate over baseRate.
func backfillFloor(ctx context.Context, h *harness.Harness, orders, billing *harness.Service, opts BackfillOptions,
	live func(context.Context, *atomic.Int64) error, baseRate float64, out io.Writer) (float64, float64, error) {
	raw, closeRaw, err := rawPipelineOn(h, orders, billing)
	if err != nil {
		return 0, 0, err
	}
	defer closeRaw()
	var during atomic.Int64
	liveCtx, stopLive := context.WithCancel(ctx)
	liveDone := make(chan error, 1)
	start := time.Now()
	go func() { liveDone <- live(liveCtx, &during) }()
	copied, err := raw.Copy(ctx, "orders", 1, int64(opts.History)+1)
	took := time.Since(start)
	stopLive()
	if liveErr := <-liveDone; err == nil {
		err = liveErr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("backfill floor: %w", err)
	}
	if copied.Rows != opts.History {
		return 0, 0, fmt.Errorf("backfill floor: the raw pipeline moved %d of %d events", copied.Rows, opts.History)
	}
	rate := float64(copied.Rows) / took.Seconds()
	liveRatio := float64(during.Load()) / took.Seconds() / baseRate
	fmt.Fprintf(out, "floor: the raw pipeline (no integrity: plain select, JSON batches over the same NATS, plain insert) moved the same %d events in %s with the same live appends running: %.0f events/s, live appends %.0f events/s, ratio %.3f (not streamseal's figures)\n",
		copied.Rows, took.Round(time.Millisecond), rate, float64(during.Load())/took.Seconds(), liveRatio)
	return rate, liveRatio, nil
}

// backfillStages breaks one backfill down by stage, from the origin's build hooks and the
// consumer's ingest hook: how long the origin spent building answers (selection, bundle
// encoding, publishing) and idle between them (waiting for the next follow-up: the consumer's
// ingest of the answer's tail, its summary, the follow-up's round trip), and how long the
// consumer spent checking and ingesting bundles.
type backfillStages struct {
	mu                     sync.Mutex
	start                  time.Time
	builds                 int
	building, idle         time.Duration
	buildStarted, buildEnd time.Time
	firstBuild             time.Duration
	ingests, ingested      int
	ingesting              time.Duration
	selecting, bundling    time.Duration // the origin's pages: selection, then bundling and publishing
	pausing                time.Duration // the origin's paced waits between pages
	marks                  []backfillMark
}

func (s *backfillStages) begin(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start = t
}

func (s *backfillStages) build(_, phase string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.start.IsZero() {
		return
	}
	switch phase {
	case "start":
		s.marks = append(s.marks, backfillMark{at: now.Sub(s.start), what: "origin starts an answer"})
		s.buildStarted = now
		if s.builds == 0 {
			s.firstBuild = now.Sub(s.start)
		} else {
			s.idle += now.Sub(s.buildEnd)
		}
	case "end":
		s.marks = append(s.marks, backfillMark{at: now.Sub(s.start), what: "origin ends an answer (summary out)"})
		s.builds++
		s.building += now.Sub(s.buildStarted)
		s.buildEnd = now
	}
}

func (s *backfillStages) stored(bundles, events int, took time.Duration) {
	now := sinceEpoch()
	s.add(backfillMark{at: now - took, took: took, what: fmt.Sprintf("consumer checks+ingests %d bundles", bundles), n: events})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ingests++
	s.ingested += events
	s.ingesting += took
}

func (s *backfillStages) report(out io.Writer, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	per := func(d time.Duration, n int) time.Duration {
		if n == 0 {
			return 0
		}
		return (d / time.Duration(n)).Round(time.Millisecond)
	}
	fmt.Fprintf(out, "stages: first build %s after the subscription; origin built %d answers in %s (%s each: selection, encoding, publishing), idle %s between them (%s each)\n",
		s.firstBuild.Round(time.Millisecond), s.builds, s.building.Round(time.Millisecond), per(s.building, s.builds),
		s.idle.Round(time.Millisecond), per(s.idle, s.builds-1))
	fmt.Fprintf(out, "stages: origin's pages: selecting %s, bundling and publishing %s, paused %s\n",
		s.selecting.Round(time.Millisecond), s.bundling.Round(time.Millisecond), s.pausing.Round(time.Millisecond))
	fmt.Fprintf(out, "stages: consumer checked and ingested %d events in %d transactions in %s (%s each)\n",
		s.ingested, s.ingests, s.ingesting.Round(time.Millisecond), per(s.ingesting, s.ingests))
	fmt.Fprintf(out, "stages: of %s end to end, origin building %.0f%%, consumer ingesting %.0f%%\n", took.Round(time.Millisecond),
		100*s.building.Seconds()/took.Seconds(), 100*s.ingesting.Seconds()/took.Seconds())
}

// A timeline's entry: what happened when (from the subscription), how long it lasted, and how
// many events or bytes it covered.
type backfillMark struct {
	at, took time.Duration
	what     string
	n        int
}

func (s *backfillStages) add(m backfillMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.start.IsZero() {
		return
	}
	m.at -= s.start.Sub(benchEpoch)
	s.marks = append(s.marks, m)
}

// benchEpoch is what marks are taken against before they are placed on the run's timeline.
var benchEpoch = time.Now()

func sinceEpoch() time.Duration { return time.Since(benchEpoch) }

// mark notes a message taken by a control endpoint (n: its bytes).
func (s *backfillStages) mark(what string, n int) {
	s.add(backfillMark{at: sinceEpoch(), what: what, n: n})
}

// page notes one page of the origin's build: selected, bundled (and published), paused.
func (s *backfillStages) page(_ string, events int, selected, bundled, paused time.Duration) {
	now := sinceEpoch()
	begin := now - paused - bundled - selected
	s.add(backfillMark{at: begin, took: selected, what: "origin selects a page", n: events})
	s.add(backfillMark{at: begin + selected, took: bundled, what: "origin bundles and publishes it", n: events})
	if paused > 0 {
		s.add(backfillMark{at: begin + selected + bundled, took: paused, what: "origin pauses (pacing)"})
	}
	s.mu.Lock()
	s.selecting += selected
	s.bundling += bundled
	s.pausing += paused
	s.mu.Unlock()
}

// timeline prints every mark in time order (STREAMSEAL_BENCH_TIMELINE set), then how long the
// consumer sat between its ingests (waiting for bundles) and its longest such gap.
func (s *backfillStages) timeline(out io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	marks := append([]backfillMark(nil), s.marks...)
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].at < marks[j].at })
	var gaps, longest, ingestEnd time.Duration
	for _, m := range marks {
		fmt.Fprintf(out, "timeline %9.1f ms %8.1f ms  %-40s %d\n", float64(m.at)/1e6, float64(m.took)/1e6, m.what, m.n)
		if !strings.HasPrefix(m.what, "consumer checks+ingests") {
			continue
		}
		if gap := m.at - ingestEnd; ingestEnd > 0 && gap > 0 {
			gaps += gap
			longest = max(longest, gap)
		}
		ingestEnd = max(ingestEnd, m.at+m.took)
	}
	fmt.Fprintf(out, "timeline: the consumer sat %s between its ingests (longest %s)\n", gaps.Round(time.Millisecond), longest.Round(time.Millisecond))
}
