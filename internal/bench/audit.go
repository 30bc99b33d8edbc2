package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// AuditOptions sizes the audit benchmark.
type AuditOptions struct {
	Small, Large int64 // lane sizes for the healthy audit
	Types        int   // event types (one tenant)
	Missing      int   // events lost at the consumer for the damaged audit
	Streams      int   // ... spread over this many streams
	Scatter      ScatterOptions
}

// QuickAudit and FullAudit are the --quick and default sizes.
var (
	QuickAudit = AuditOptions{Small: 100_000, Large: 1_000_000, Types: 20, Missing: 500, Streams: 50, Scatter: QuickScatter}
	FullAudit  = AuditOptions{Small: 1_000_000, Large: 10_000_000, Types: 20, Missing: 500, Streams: 50, Scatter: FullScatter}
)

// Audit measures the wire bytes and time of a healthy audit as the lane grows, of an audit that
// finds Missing events over Streams streams, and the naive alternative (ship every event id of
// the lane and diff) in the same run; then the damaged sweep (AuditScatter) on a store of its own.
func Audit(ctx context.Context, newDB harness.NewDatabase, opts AuditOptions, out io.Writer) error {
	load := watchLoad(out)
	figures, err := auditGrowth(ctx, newDB, opts, out)
	if err != nil {
		return err
	}
	scatter, err := AuditScatter(ctx, newDB, opts.Scatter, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "RESULT audit %s %s busy=%d\n", figures, scatterFigures(scatter), load.End())
	return nil
}

// auditGrowth is the healthy and damaged audits of one growing lane; it returns its RESULT figures.
func auditGrowth(ctx context.Context, newDB harness.NewDatabase, opts AuditOptions, out io.Writer) (string, error) {
	h, err := harness.New(ctx, newDB, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return "", err
	}
	defer h.Close()
	settings := config.Defaults()
	settings.CheckpointInterval = time.Hour
	settings.MaintenanceInterval = time.Hour
	settings.SettleWindow = time.Millisecond
	var wireBytes atomic.Int64
	tap := func(s *harness.Service) {
		s.Control.Tap = func(_ string, data []byte) {
			if env, _, err := wire.Decode(data, 0); err == nil && (env.Kind == wire.KindManifestAnswer || env.Kind == wire.KindManifestRequest) {
				wireBytes.Add(int64(len(data)))
			}
		}
	}
	types := make([]string, opts.Types)
	for i := range types {
		types[i] = fmt.Sprintf("bench.t%02d", i)
	}
	orders, err := h.Start(ctx, "orders", harness.Options{Settings: settings, NoRelay: true, Grants: map[string][]string{"billing": types}}, tap)
	if err != nil {
		return "", err
	}
	billing, err := h.Start(ctx, "billing", harness.Options{Settings: settings, Consumes: types}, tap)
	if err != nil {
		return "", err
	}
	// The periodic startup audit (30 s plus up to 5 min of jitter after start) would land inside
	// this run's minutes of loading and auditing: its manifest bytes would be counted with a
	// measured audit's, or the measured audit declined while it runs. No job is measured here.
	if err := billing.River.Stop(ctx); err != nil {
		return "", err
	}
	if _, err := billing.Pool.Exec(ctx, "select streamseal.observe_origin('orders', $1, 3600, 0, 0)", wire.ControlSubjectFrom("orders", "billing")); err != nil {
		return "", err
	}
	fmt.Fprintf(out, "audit benchmark: one lane of %d event types; healthy audits at %d and %d events; then %d events lost over %d streams\n",
		opts.Types, opts.Small, opts.Large, opts.Missing, opts.Streams)

	type run struct {
		bytes int64
		took  time.Duration
	}
	runAudit := func(full bool) (run, error) {
		wireBytes.Store(0)
		start := time.Now()
		findings, err := billing.Auditor.Run(ctx, audit.Scope{Full: full})
		if err != nil {
			return run{}, err
		}
		if len(findings) != 1 {
			return run{}, fmt.Errorf("audited %d origins, want 1", len(findings))
		}
		return run{wireBytes.Load(), time.Since(start)}, nil
	}
	var healthy []run
	loaded := int64(0)
	for _, size := range []int64{opts.Small, opts.Large} {
		if err := loadBoth(ctx, "orders", orders.Pool, billing.Pool, loaded, size, opts.Types, 1000); err != nil {
			return "", err
		}
		loaded = size
		// A full-history audit: every type of the whole lane at type level (what the sweep asks;
		// sealed epochs answer it). Then the steady state: the window above the seal.
		r, err := runAudit(true)
		if err != nil {
			return "", err
		}
		steady, err := runAudit(false)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(out, "healthy full-history audit at %d events: %d bytes on the wire (%.0f per type), %s; windowed steady state: %d bytes, %s\n",
			size, r.bytes, float64(r.bytes)/float64(opts.Types), r.took.Round(100*time.Microsecond), steady.bytes, steady.took.Round(100*time.Microsecond))
		healthy = append(healthy, r)
	}
	var naive int64
	if err := orders.Pool.QueryRow(ctx, "select sum(length(event_id::text) + 3) from streamseal.events where origin = 'orders'").Scan(&naive); err != nil {
		return "", err
	}
	if _, err := billing.Pool.Exec(ctx, `
		delete from streamseal.events where event_id in (
			select event_id from streamseal.events where origin = 'orders' and stream_id = any($1) order by origin_seq desc limit $2)`,
		streamNames(opts.Streams), opts.Missing); err != nil {
		return "", err
	}
	damaged, err := runAudit(true) // loss after receipt lies below the seal: the sweep's full audit finds it
	if err != nil {
		return "", err
	}
	fmt.Fprintf(out, "audit finding %d missing events over %d streams: %d bytes, %s\n", opts.Missing, opts.Streams, damaged.bytes, damaged.took.Round(time.Millisecond))
	fmt.Fprintf(out, "naive (every event id of the %d-event lane shipped and diffed): %d bytes: %.0fx the healthy audit, %.0fx the damaged one\n",
		loaded, naive, float64(naive)/float64(healthy[1].bytes), float64(naive)/float64(damaged.bytes))
	perType := float64(healthy[1].bytes) / float64(opts.Types)
	flatness := ratio(healthy[1].took, healthy[0].took)
	fmt.Fprintf(out, "healthy bytes per type %.0f (target <= 100); time %d vs %d events: %.2fx (flat = 1)\n", perType, opts.Large, opts.Small, flatness)
	return fmt.Sprintf("healthy_bytes_per_type=%.1f flatness=%.3f naive_bytes_ratio=%.1f damaged_bytes=%d",
		perType, flatness, float64(naive)/float64(healthy[1].bytes), damaged.bytes), nil
}

func streamNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "s" + strconv.Itoa(i)
	}
	return out
}

// loadBoth loads own events (from, to] over streams streams (event g in stream s<g mod streams>,
// of type g mod types) into the origin name and identical copies into the consumer as
// settled, already-relayed history, with the write-path triggers off (a fixture: pushing ten
// million events through the wire would measure the wire), then rebuilds the digests from the
// stores and closes the epochs on both sides as maintenance would.
func loadBoth(ctx context.Context, name string, origin, consumer *pgxpool.Pool, from, to int64, types, streams int) error {
	bounds := strings.NewReplacer("$1", strconv.FormatInt(from, 10), "$2", strconv.FormatInt(to, 10), "$T", strconv.Itoa(types),
		"$S", strconv.Itoa(streams), "$O", name)
	ids := `('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid`
	history := `select ` + ids + ` as event_id, '$O' as origin, g as origin_seq, g as type_seq, 'acme' as tenant,
		        's' || (g % $S) as stream_id, g as stream_version, 'bench.t' || lpad((g % $T)::text, 2, '0') as event_type,
		        '\x7b7d'::bytea as payload, now() - interval '2 hours' as stored_at
		 from generate_series($1 + 1, $2) g`
	originSteps := []string{
		"alter table streamseal.events disable trigger user",
		ownHistory(history),
		"alter table streamseal.events enable trigger user",
		"update streamseal.stamp_state set last_origin_seq = $2",
		"update streamseal.relay_state set published_through = $2",
		"update streamseal.checkpoint_state set published_through = $2 + 1",
	}
	consumerSteps := []string{
		"alter table streamseal.events disable trigger user",
		copyHistory(history),
		"alter table streamseal.events enable trigger user",
	}
	for pool, steps := range map[*pgxpool.Pool][]string{origin: originSteps, consumer: consumerSteps} {
		for _, step := range steps {
			if _, err := pool.Exec(ctx, bounds.Replace(step)); err != nil {
				return fmt.Errorf("load %d..%d: %w", from, to, err)
			}
		}
		if err := finishBulkLoad(ctx, pool); err != nil {
			return err
		}
	}
	return nil
}

// historyColumns are the columns a history source (ownHistory, copyHistory) selects, in order.
const historyColumns = "event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload, stored_at"

// ownHistory is one statement loading a history source (a SELECT of historyColumns, write-path
// triggers off) as own events the way the stamper leaves them (issue 16): the row in events
// without numbers, the numbers in own_numbers keyed by the row's local_id (migration 047).
// (Inserting numbered rows and moving the numbers with _own_numbers_adopt left a dead tuple per
// event in the fixture, which reads of events then visited: bench detect's checkpoint took
// 50-90 ms instead of 2-4 ms at 200k events.)
func ownHistory(source string) string {
	return `with history as (` + source + `), stored as (
		 insert into streamseal.events (event_id, origin, tenant, stream_id, stream_version, event_type, payload, stored_at)
		 select h.event_id, h.origin, h.tenant, h.stream_id, h.stream_version, h.event_type, h.payload, h.stored_at from history h
		 returning event_id, local_id)
		 insert into streamseal.own_numbers (origin, origin_seq, type_seq, event_id, tenant, event_type, stream_id, flags, local_id)
		 select h.origin, h.origin_seq, h.type_seq, h.event_id, h.tenant, h.event_type, h.stream_id, 0, s.local_id
		 from history h join stored s on s.event_id = h.event_id
		 order by h.origin, h.origin_seq`
}

// copyHistory is one statement loading a history source as copies of another origin's events
// (their numbers in events, as ingest stores them).
func copyHistory(source string) string {
	return `insert into streamseal.events (` + historyColumns + `) ` + source
}

// finishBulkLoad brings a store loaded with its triggers disabled to what the product would
// have made of it: the folds the triggers skipped rebuilt from the store (the sweep's own path),
// statistics taken, and every closable epoch closed.
func finishBulkLoad(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "select count(*) from streamseal.verify_stream_digests(true)"); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, "vacuum analyze streamseal.events"); err != nil {
		return err
	}
	for {
		var closed int
		if err := pool.QueryRow(ctx, "select count(*) from streamseal.close_epochs(1000, 100000, interval '1 hour', interval '1 hour')").Scan(&closed); err != nil {
			return err
		}
		if closed == 0 {
			break
		}
	}
	_, err := pool.Exec(ctx, "vacuum analyze streamseal.sealed_prefix, streamseal.digest_epochs, streamseal.stream_digests")
	return err
}
