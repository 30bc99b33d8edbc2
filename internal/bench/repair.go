package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/relay"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// RepairOptions sizes the repair benchmark.
type RepairOptions struct {
	Missing      int           // events the consumer lacks and gets re-delivered
	PayloadBytes int           // payload size of each event
	RelayRate    int           // events/s appended while measuring relay lag
	RelayFor     time.Duration // how long the steady append runs
}

// QuickRepair and FullRepair are the --quick and default sizes.
var (
	QuickRepair = RepairOptions{Missing: 20_000, PayloadBytes: 400, RelayRate: 5000, RelayFor: 3 * time.Second}
	FullRepair  = RepairOptions{Missing: 100_000, PayloadBytes: 400, RelayRate: 5000, RelayFor: 10 * time.Second}
)

// RepairResult carries the figures.
type RepairResult struct {
	EventsPerSecond float64
	// RawEventsPerSecond is the raw pipeline's (RawPipeline.Copy) on the same rows, databases and
	// NATS server; RepairRatio is EventsPerSecond over it (target >= 0.5), the median of the
	// runs without security.
	RawEventsPerSecond, RepairRatio float64
	WireRatio                       float64 // control bytes received by the consumer / payload bytes re-delivered
	// RelayP50 and RelayP99 are streamseal's relay lag, append commit -> JetStream ack of the
	// event, as the raw relays' are measured; RelayRecordedP99 adds the relay's cursor write
	// after the ack (what the lag was measured to before issue 20's breakdown).
	RelayP50, RelayP99, RelayRecordedP99 time.Duration
	// RawRelayP50 and RawRelayP99 are the raw outbox relay's (RawPipeline.OutboxRelay: it learns
	// of each commit from the database, LISTEN/NOTIFY and a select, as streamseal's relay does)
	// at the same offered rate; RelayP99Ratio is RelayP99 over RawRelayP99 (target <= 2).
	RawRelayP50, RawRelayP99 time.Duration
	RelayP99Ratio            float64
	// RawHandoffP50 and RawHandoffP99 are the in-process raw relay's (RawPipeline.Relay: the
	// writer hands its committed rows to the publisher, no database round trip after the
	// commit); HandoffP99Ratio is RelayP99 over RawHandoffP99.
	RawHandoffP50, RawHandoffP99 time.Duration
	HandoffP99Ratio              float64
	// SecuredEventsPerSecond is the same redelivery with security on: each service its own user
	// with the generated permissions, over TLS with client certificates; SecurityRatio is it over
	// EventsPerSecond (target >= 0.9).
	SecuredEventsPerSecond, SecurityRatio float64
}

// Repair measures end-to-end redelivery (origin Postgres -> JetStream -> consumer Postgres) of
// events a consumer lacks against the raw pipeline moving the same rows right after it, the
// bytes that crossed the wire against the payload bytes, and the relay's lag under a steady
// append rate against the raw relay's at the same rate; then the cost of security: the same redelivery with
// NATS authorization (the generated permissions) and TLS with client certificates, on fresh
// databases, against one without, in SecurityPairs alternating pairs (off, on), so load that
// drifts during the run weighs on both sides; the ratio is the median of the pairs' ratios.
func Repair(ctx context.Context, newDB harness.NewDatabase, opts RepairOptions, out io.Writer) (RepairResult, error) {
	load := watchLoad(out)
	r, err := repairRun(ctx, newDB, opts, out, false, true)
	if err != nil {
		return r, err
	}
	repairRatios := []float64{r.RepairRatio}
	var ratios []float64
	var secured []float64
	for i := range SecurityPairs {
		run := func(ctx context.Context, service string) (string, error) {
			return newDB(ctx, fmt.Sprintf("%s-pair%d", service, i))
		}
		off := r
		if i > 0 {
			if off, err = repairRun(ctx, run, opts, out, false, false); err != nil {
				return r, fmt.Errorf("security pair %d, off: %w", i+1, err)
			}
			repairRatios = append(repairRatios, off.RepairRatio)
		}
		on, err := repairRun(ctx, func(ctx context.Context, service string) (string, error) { return run(ctx, service+"-secured") }, opts, out, true, false)
		if err != nil {
			return r, fmt.Errorf("security pair %d, on: %w", i+1, err)
		}
		ratios = append(ratios, on.EventsPerSecond/off.EventsPerSecond)
		secured = append(secured, on.EventsPerSecond)
		fmt.Fprintf(out, "security pair %d: off %.0f events/s, on %.0f events/s: ratio %.3f\n", i+1, off.EventsPerSecond, on.EventsPerSecond, ratios[i])
	}
	r.SecuredEventsPerSecond, r.SecurityRatio = medianOf(secured), medianOf(ratios)
	r.RepairRatio = medianOf(repairRatios)
	fmt.Fprintf(out, "repair_ratio: streamseal's redelivery over the raw pipeline on the same rows: %.3f, median of %d runs (target >= 0.5); relay_p99_ratio %.3f (target <= 2)\n",
		r.RepairRatio, len(repairRatios), r.RelayP99Ratio)
	fmt.Fprintf(out, "security: redelivery with NATS authorization (generated permissions) and TLS with client certificates: %.0f events/s, %.3f of off, median of %d pairs (target >= 0.9)\n",
		r.SecuredEventsPerSecond, r.SecurityRatio, SecurityPairs)
	fmt.Fprintf(out, "RESULT repair events_per_s=%.0f repair_ratio=%.3f wire_ratio=%.3f relay_p99_ms=%.2f relay_p99_ratio=%.3f busy=%d raw_events_per_s=%.0f raw_relay_p99_ms=%.2f relay_p50_ms=%.2f raw_handoff_p99_ms=%.2f handoff_p99_ratio=%.3f secured_events_per_s=%.0f security_ratio=%.3f relay_recorded_p99_ms=%.2f\n",
		r.EventsPerSecond, r.RepairRatio, r.WireRatio, ms64(r.RelayP99), r.RelayP99Ratio, load.End(), r.RawEventsPerSecond, ms64(r.RawRelayP99),
		ms64(r.RelayP50), ms64(r.RawHandoffP99), r.HandoffP99Ratio, r.SecuredEventsPerSecond, r.SecurityRatio, ms64(r.RelayRecordedP99))
	return r, nil
}

// SecurityPairs is how many (off, on) pairs the security ratio is the median of.
const SecurityPairs = 3

// medianOf xs (not empty); xs is sorted in place.
func medianOf(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// repairTopology is the repair benchmark's bus for the secured run: orders serves, billing asks.
var repairTopology = natsauth.Topology{Services: []natsauth.Service{{Name: "orders"}, {Name: "billing"}}}

// repairRun is one measurement: the redelivery, without security the raw pipeline's copies of
// the same rows right before and after it, and with measureRelay the wire ratio and the relay lags too (printed; the
// security pairs' runs print one line each).
func repairRun(ctx context.Context, newDB harness.NewDatabase, opts RepairOptions, out io.Writer, secured, measureRelay bool) (RepairResult, error) {
	var r RepairResult
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var h *harness.Harness
	var err error
	if secured {
		h, err = harness.NewSecured(ctx, newDB, quiet, repairTopology, true)
	} else {
		h, err = harness.New(ctx, newDB, quiet)
	}
	if err != nil {
		return r, err
	}
	defer h.Close()
	types := []string{"bench.a", "bench.b", "bench.c", "bench.d"}
	rounds := &relayRounds{}
	orders, err := h.Start(ctx, "orders", harness.Options{Grants: map[string][]string{"billing": types},
		Limits: redelivery.Limits{MaxEventsPerRequest: opts.Missing}}, rounds.observe)
	if err != nil {
		return r, err
	}
	var wireBytes atomic.Int64
	summaries := make(chan wire.RedeliverySummary, 1)
	billing, err := h.Start(ctx, "billing", harness.Options{}, func(s *harness.Service) {
		s.Control.Tap = func(_ string, data []byte) { wireBytes.Add(int64(len(data))) }
		s.Repair.OnSummary = func(sum wire.RedeliverySummary) { summaries <- sum }
	})
	if err != nil {
		return r, err
	}
	if measureRelay {
		fmt.Fprintf(out, "repair benchmark: %d events of %d payload bytes missing at the consumer; relay lag at %d events/s for %s\n",
			opts.Missing, opts.PayloadBytes, opts.RelayRate, opts.RelayFor)
	}

	// The history the consumer lacks (it subscribes to nothing, so it holds none of it).
	if err := appendHistory(ctx, orders.Pool, opts.Missing, opts.PayloadBytes); err != nil {
		return r, err
	}
	if err := waitUntil(ctx, func() (bool, error) {
		var last int64
		err := orders.Pool.QueryRow(ctx, "select last_origin_seq from streamseal.stamp_state").Scan(&last)
		return last == int64(opts.Missing), err
	}); err != nil {
		return r, err
	}
	var payloadBytes int64
	if err := orders.Pool.QueryRow(ctx, "select sum(length(payload)) from streamseal.events").Scan(&payloadBytes); err != nil {
		return r, err
	}

	from, to := int64(1), int64(opts.Missing+1)
	// Without security, the raw pipeline copies the same rows right before streamseal's
	// redelivery and right after it, so a warming cache or load that drifts weighs on both sides.
	var raw *RawPipeline
	var rawCopies []RawCopyResult
	rawCopy := func() error {
		copied, err := raw.Copy(ctx, "orders", from, to)
		rawCopies = append(rawCopies, copied)
		return err
	}
	if !secured {
		var closeRaw func()
		if raw, closeRaw, err = rawPipelineOn(h, orders, billing); err != nil {
			return r, err
		}
		defer closeRaw()
		if err := rawCopy(); err != nil {
			return r, err
		}
	}
	start := time.Now()
	// Recorded like every request billing sends: only a request it sent is answered into its store.
	if _, err := redelivery.Request(ctx, billing.Pool, billing.JS, "billing", "orders", wire.RedeliveryRequest{
		RequestID: uuid.NewString(), Tenants: []string{"acme"}, Types: types, FromSeq: &from, ToSeq: &to, MaxEvents: opts.Missing}); err != nil {
		return r, err
	}
	if err := waitUntil(ctx, func() (bool, error) {
		var n int
		err := billing.Pool.QueryRow(ctx, "select count(*) from streamseal.events where origin = 'orders'").Scan(&n)
		return n == opts.Missing, err
	}); err != nil {
		return r, err
	}
	took := time.Since(start)
	sum := <-summaries
	r.EventsPerSecond = float64(opts.Missing) / took.Seconds()
	r.WireRatio = float64(wireBytes.Load()) / float64(payloadBytes)
	if measureRelay {
		fmt.Fprintf(out, "redelivery: %d events in %d bundles converged in %s: %.0f events/s\n",
			sum.Shipped, sum.Bundles, took.Round(time.Millisecond), r.EventsPerSecond)
	}
	if !secured {
		if err := rawCopy(); err != nil {
			return r, err
		}
		before, after := rawCopies[0], rawCopies[1]
		r.RawEventsPerSecond = float64(before.Rows+after.Rows) / (before.Took + after.Took).Seconds()
		r.RepairRatio = r.EventsPerSecond / r.RawEventsPerSecond
		fmt.Fprintf(out, "raw pipeline (select, publish in batches to JetStream, plain insert) on the same rows, before and after: %d events in %d batches in %s and %s: %.0f events/s; ratio %.3f\n",
			after.Rows, after.Batches, before.Took.Round(time.Millisecond), after.Took.Round(time.Millisecond), r.RawEventsPerSecond, r.RepairRatio)
	}
	if !measureRelay {
		return r, nil
	}
	fmt.Fprintf(out, "wire: %d control bytes for %d payload bytes: ratio %.3f (target <= 2)\n", wireBytes.Load(), payloadBytes, r.WireRatio)

	lags, err := relayLags(ctx, out, orders, opts, rounds)
	if err != nil {
		return r, err
	}
	r.RelayP50, r.RelayP99, r.RelayRecordedP99 = lags.p50, lags.p99, lags.recordedP99
	rawLags, err := raw.OutboxRelay(ctx, out, "orders", opts)
	if err != nil {
		return r, err
	}
	r.RawRelayP50, r.RawRelayP99 = quantiles(rawLags)
	r.RelayP99Ratio = float64(r.RelayP99) / float64(r.RawRelayP99)
	fmt.Fprintf(out, "raw outbox relay lag (commit -> NOTIFY -> select -> plain publish of the same rows -> JetStream ack) at %d events/s: p50 %s, p99 %s over %d events; relay_p99_ratio %.3f\n",
		opts.RelayRate, r.RawRelayP50.Round(100*time.Microsecond), r.RawRelayP99.Round(100*time.Microsecond), len(rawLags), r.RelayP99Ratio)
	handoffLags, err := raw.Relay(ctx, out, "orders", opts)
	if err != nil {
		return r, err
	}
	r.RawHandoffP50, r.RawHandoffP99 = quantiles(handoffLags)
	r.HandoffP99Ratio = float64(r.RelayP99) / float64(r.RawHandoffP99)
	fmt.Fprintf(out, "raw in-process relay lag (commit returns -> the writer hands the rows to a plain publish -> JetStream ack) at %d events/s: p50 %s, p99 %s over %d events; ratio %.3f\n",
		opts.RelayRate, r.RawHandoffP50.Round(100*time.Microsecond), r.RawHandoffP99.Round(100*time.Microsecond), len(handoffLags), r.HandoffP99Ratio)
	return r, nil
}

// quantiles are the p50 and p99 of sorted lags (not empty).
func quantiles(lags []time.Duration) (p50, p99 time.Duration) {
	return lags[len(lags)/2], lags[len(lags)*99/100]
}

// rawPipelineOn is the raw pipeline between two services' databases, over two connections of
// its own to the harness's NATS server (open: the raw pipeline runs without security); close
// closes them.
func rawPipelineOn(h *harness.Harness, origin, consumer *harness.Service) (*RawPipeline, func(), error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := &RawPipeline{Origin: origin.Pool, Consumer: consumer.Pool}
	var conns []*nats.Conn
	closeAll := func() {
		for _, nc := range conns {
			nc.Close()
		}
	}
	for _, js := range []*jetstream.JetStream{&p.OriginJS, &p.ConsumerJS} {
		nc, err := wire.Connect(h.NATS.URL(), "bench-raw", wire.Security{}, quiet)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("raw pipeline: connect: %w", err)
		}
		conns = append(conns, nc)
		if *js, err = jetstream.New(nc); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return p, closeAll, nil
}

// appendTick is the steady append's period: RelayRate/100 events every 10 ms.
const appendTick = 10 * time.Millisecond

// appendedBatch is one tick's append: when its commit returned, and how many events it held.
type appendedBatch struct {
	at time.Time
	n  int
}

// steadyAppend calls appendBatch with RelayRate/100 fresh event ids every appendTick for
// RelayFor, prints what it achieved, and returns the appends in commit order (at least one).
// streamseal's relay-lag phase and the raw relay's offer the same rate through it.
func steadyAppend(ctx context.Context, out io.Writer, phase string, opts RepairOptions, appendBatch func(ctx context.Context, ids []string) error) ([]appendedBatch, error) {
	perTick := max(1, opts.RelayRate/100)
	var batches []appendedBatch
	ticker := time.NewTicker(appendTick)
	defer ticker.Stop()
	deadline := time.Now().Add(opts.RelayFor)
	var ids []string
	var appendTime time.Duration
	for len(batches) == 0 || time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ticker.C:
		}
		began := time.Now()
		ids = ids[:0]
		for range perTick {
			ids = append(ids, uuid.NewString())
		}
		if err := appendBatch(ctx, ids); err != nil {
			return nil, err
		}
		appendTime += time.Since(began)
		batches = append(batches, appendedBatch{at: time.Now(), n: perTick})
	}
	achieved := float64(len(batches)*perTick) / opts.RelayFor.Seconds()
	fmt.Fprintf(out, "%s lag phase: %d appends of %d events, %.0f events/s achieved, mean append %s\n",
		phase, len(batches), perTick, achieved, (appendTime / time.Duration(len(batches))).Round(10*time.Microsecond))
	return batches, nil
}

// relayRounds collects the relay's published pages (relay.Relay.OnRound).
type relayRounds struct {
	mu     sync.Mutex
	traces []relay.RoundTrace
}

// observe is the harness's hook on the origin service: it traces that service's relay.
func (rr *relayRounds) observe(s *harness.Service) {
	s.Relay.OnRound = func(t relay.RoundTrace) {
		rr.mu.Lock()
		rr.traces = append(rr.traces, t)
		rr.mu.Unlock()
	}
}

// relayLagResult is one relay-lag phase of streamseal's relay.
type relayLagResult struct {
	p50, p99, recordedP99 time.Duration
}

// relayStages names the relay lag's stages, in order, for the breakdown line.
var relayStages = []string{"commit->round", "round (stamp+read)", "publish", "ack", "cursor"}

// relayLags appends at a steady rate (10 ms ticks) and measures, per event, the time from its
// append committing to JetStream's acknowledgement of it (and to the relay's cursor recording
// it), and prints both and the breakdown by stage of the round that published it: from the
// commit to the start of that round's statement (the wake-up, or the previous round still
// running), the statement (stamp and read), handing the page to JetStream, the
// acknowledgements, the cursor write.
func relayLags(ctx context.Context, out io.Writer, orders *harness.Service, opts RepairOptions, rounds *relayRounds) (relayLagResult, error) {
	var res relayLagResult
	rounds.mu.Lock()
	rounds.traces = rounds.traces[:0]
	rounds.mu.Unlock()
	var base int64
	if err := orders.Pool.QueryRow(ctx, "select last_origin_seq from streamseal.stamp_state").Scan(&base); err != nil {
		return res, err
	}
	batches, err := steadyAppend(ctx, out, "relay", opts, func(ctx context.Context, ids []string) error {
		_, err := orders.Pool.Exec(ctx, `
			select streamseal.append(array(
				select row(id::uuid, 'acme', 'lag-' || id, 1, 'bench.a', 0, '{"lag":true}'::bytea, null, null)::streamseal.new_event
				from unnest($1::text[]) id))`, ids)
		return err
	})
	if err != nil {
		return res, err
	}
	perTick := batches[0].n
	total := len(batches) * perTick
	if err := waitUntil(ctx, func() (bool, error) {
		rounds.mu.Lock()
		defer rounds.mu.Unlock()
		return len(rounds.traces) > 0 && rounds.traces[len(rounds.traces)-1].Through >= base+int64(total), nil
	}); err != nil {
		return res, err
	}
	// Events are numbered in commit order, and batches committed in order: batch i holds
	// origin_seqs base + i*perTick + 1 .. base + (i+1)*perTick.
	rounds.mu.Lock()
	traces := slices.Clone(rounds.traces)
	rounds.mu.Unlock()
	var lags, recorded []time.Duration
	stages := make([][]time.Duration, len(relayStages))
	stamping := 0
	for i, b := range batches {
		last := base + int64((i+1)*perTick)
		j, _ := slices.BinarySearchFunc(traces, last, func(t relay.RoundTrace, seq int64) int {
			if t.Through < seq {
				return -1
			}
			return 1
		})
		t := traces[j]
		if t.Stamped > 0 {
			stamping += b.n
		}
		for range b.n {
			lags = append(lags, t.Acked.Sub(b.at))
			recorded = append(recorded, t.Recorded.Sub(b.at))
			for k, d := range []time.Duration{t.Began.Sub(b.at), t.Read.Sub(t.Began), t.Published.Sub(t.Read), t.Acked.Sub(t.Published), t.Recorded.Sub(t.Acked)} {
				stages[k] = append(stages[k], d)
			}
		}
	}
	slices.Sort(lags)
	slices.Sort(recorded)
	res.p50, res.p99 = quantiles(lags)
	_, res.recordedP99 = quantiles(recorded)
	fmt.Fprintf(out, "relay lag (append commit -> JetStream ack) at %d events/s: p50 %s, p99 %s over %d events; to the cursor recording it p99 %s\n",
		opts.RelayRate, res.p50.Round(100*time.Microsecond), res.p99.Round(100*time.Microsecond), len(lags), res.recordedP99.Round(100*time.Microsecond))
	var b strings.Builder
	for k, name := range relayStages {
		slices.Sort(stages[k])
		p50, p99 := quantiles(stages[k])
		fmt.Fprintf(&b, "; %s p50 %s p99 %s", name, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
	}
	fmt.Fprintf(out, "relay lag by stage (per event, of the round that published it; %d rounds, %.0f%% of events in rounds that stamped)%s\n",
		len(traces), 100*float64(stamping)/float64(total), b.String())
	return res, nil
}

func waitUntil(ctx context.Context, done func() (bool, error)) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("benchmark step did not finish within 10 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// appendHistory appends n own events of about payloadBytes each to pool's store in one statement:
// the history the repair and relay benchmarks start from (acme, 2000 streams, 4 types).
func appendHistory(ctx context.Context, pool *pgxpool.Pool, n, payloadBytes int) error {
	if _, err := pool.Exec(ctx, `
		select streamseal.append(array(
			select row(gen_random_uuid(), 'acme', 's' || (i % 2000), i / 2000 + 1, 'bench.' || chr(97 + i % 4), 0,
			           convert_to('{"n":' || i || ',"pad":"' || repeat('x', $2 - 20) || '"}', 'UTF8'), null, null)::streamseal.new_event
			from generate_series(0, $1 - 1) i))`, n, payloadBytes); err != nil {
		return fmt.Errorf("generate history: %w", err)
	}
	return nil
}
