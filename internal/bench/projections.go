package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
)

// ProjectionsOptions sizes the projections benchmark.
type ProjectionsOptions struct {
	Events int // copies a SQL projection folds (ten per stream)
	// SmallStreams and LargeStreams: the coverage audit is timed over a healthy projection of
	// this many streams (one event each), for coverage_flatness.
	SmallStreams, LargeStreams int
}

// QuickProjections is the --quick size; FullProjections the default (issue 19: 1M events; the
// audit from 100k to 1M streams).
var (
	QuickProjections = ProjectionsOptions{Events: 100000, SmallStreams: 10000, LargeStreams: 100000}
	FullProjections  = ProjectionsOptions{Events: 1000000, SmallStreams: 100000, LargeStreams: 1000000}
)

// ProjectionsResult is what bench projections measured.
type ProjectionsResult struct {
	// AppliedPerSecond: run_handler (feed, cursors, token); LoopPerSecond: the same handler
	// called in a plain loop over the same rows; ApplyRatio = Applied / Loop.
	AppliedPerSecond, LoopPerSecond, ApplyRatio float64
	// AuditSmall and AuditLarge: one healthy coverage audit; CoverageFlatness: its cost per
	// stream at LargeStreams over SmallStreams.
	AuditSmall, AuditLarge time.Duration
	CoverageFlatness       float64
}

// Projections loads Events copies of one origin, folds them with a SQL projection through
// run_handler (batches of 500, a transaction each, as `streamseal run` does) and, in the same run,
// with the same handler body called in a plain loop over the same rows (one statement calling it
// per row, 500 rows a transaction, in the feed's order by its index: no feed, no cursor, no token);
// then times a healthy coverage audit at two store sizes.
func Projections(ctx context.Context, pool *pgxpool.Pool, opts ProjectionsOptions, out io.Writer) (ProjectionsResult, error) {
	var r ProjectionsResult
	watch := watchLoad(out)
	fmt.Fprintf(out, "bench projections: loading %d copies of one origin\n", opts.Events)
	if _, err := pool.Exec(ctx, `
		create schema if not exists bench_proj;
		create table bench_proj.via_runner (stream_id text primary key, n bigint, bytes bigint);
		create table bench_proj.via_loop (stream_id text primary key, n bigint, bytes bigint);
		create function bench_proj.runner(e streamseal.handler_event) returns void language sql as $$
		    insert into bench_proj.via_runner values (e.stream_id, 1, length(e.payload))
		    on conflict (stream_id) do update set n = via_runner.n + 1, bytes = via_runner.bytes + excluded.bytes $$;
		create function bench_proj.loop(e streamseal.handler_event) returns void language sql as $$
		    insert into bench_proj.via_loop values (e.stream_id, 1, length(e.payload))
		    on conflict (stream_id) do update set n = via_loop.n + 1, bytes = via_loop.bytes + excluded.bytes $$;
		create function bench_proj.loop_batch(landed xid8, after bigint, max integer) returns bigint language sql as $$
		    -- The handler called once per row, in order, by one statement over the next max rows:
		    -- the cheapest plain loop (no feed, no cursor, no token).
		    select coalesce(max(b.local_id), after) from (
		        select x.local_id, bench_proj.loop(row(x.event_id, x.origin, x.origin_seq, x.type_seq, x.tenant, x.stream_id,
		               x.stream_version, x.event_type, x.flags, x.payload, x.metadata, x.occurred_at, x.stored_at,
		               false)::streamseal.handler_event)
		        from streamseal.events x
		        where x.origin_seq is not null and (x.landed_xid, x.local_id) > (landed, after)
		        order by x.landed_xid, x.local_id limit max) b $$`); err != nil {
		return r, fmt.Errorf("schema: %w", err)
	}
	if _, err := pool.Exec(ctx, `
		insert into streamseal.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload)
		select gen_random_uuid(), 'orders', g, g, 't1', 's' || (g / 10), g % 10 + 1, 'order.placed', convert_to(repeat('x', 200), 'UTF8')
		from generate_series(1, $1::bigint) g`, opts.Events); err != nil {
		return r, fmt.Errorf("load: %w", err)
	}
	if _, err := pool.Exec(ctx, `vacuum analyze streamseal.events`); err != nil {
		return r, err
	}
	if _, err := store.ProjectionRegister(ctx, pool, "bench-view", []string{"order.placed"}, "bench_proj.runner", nil, "", true); err != nil {
		return r, err
	}

	// The baseline first, then the projection: each reads the same rows, in the same order and
	// by the same index (events_landed: the rows were loaded by one transaction).
	var landed string
	if err := pool.QueryRow(ctx, `select min(landed_xid)::text from streamseal.events`).Scan(&landed); err != nil {
		return r, err
	}
	start := time.Now()
	var after int64
	for {
		var last int64
		if err := pool.QueryRow(ctx, `select bench_proj.loop_batch($1::xid8, $2, 500)`, landed, after).Scan(&last); err != nil {
			return r, fmt.Errorf("plain loop: %w", err)
		}
		if last == after {
			break
		}
		after = last
	}
	r.LoopPerSecond = float64(opts.Events) / time.Since(start).Seconds()
	start = time.Now()
	applied := 0
	for {
		s, err := store.HandlerRun(ctx, pool, "bench-view", 500)
		if err != nil {
			return r, err
		}
		applied += s.Applied
		if s.Read == 0 {
			break
		}
	}
	r.AppliedPerSecond = float64(applied) / time.Since(start).Seconds()
	if applied != opts.Events {
		return r, fmt.Errorf("the projection applied %d events of %d", applied, opts.Events)
	}
	r.ApplyRatio = r.AppliedPerSecond / r.LoopPerSecond
	fmt.Fprintf(out, "  run_handler %.0f events/s, plain loop %.0f events/s: apply_ratio %.3f\n", r.AppliedPerSecond, r.LoopPerSecond, r.ApplyRatio)
	var differ int64
	if err := pool.QueryRow(ctx, `select count(*) from bench_proj.via_runner a full join bench_proj.via_loop b using (stream_id)
		where (a.n, a.bytes) is distinct from (b.n, b.bytes)`).Scan(&differ); err != nil {
		return r, err
	}
	if differ != 0 {
		return r, fmt.Errorf("the two read models differ on %d streams", differ)
	}

	if _, err := store.HandlerUnregister(ctx, pool, "bench-view"); err != nil {
		return r, err
	}
	// The coverage audit, healthy, at two sizes: one event per stream of its own type, cursors
	// seeded from the digests (as a projection that applied them holds them).
	for i, streams := range []int{opts.SmallStreams, opts.LargeStreams} {
		took, gaps, err := auditHealthy(ctx, pool, fmt.Sprint("cov.", i), streams)
		if err != nil {
			return r, err
		}
		if gaps != 0 {
			return r, fmt.Errorf("a healthy audit found %d gaps", gaps)
		}
		fmt.Fprintf(out, "  coverage audit over %d streams: %s (%.2f µs a stream)\n", streams, took.Round(time.Millisecond),
			float64(took.Microseconds())/float64(streams))
		if i == 0 {
			r.AuditSmall = took
		} else {
			r.AuditLarge = took
		}
	}
	r.CoverageFlatness = (r.AuditLarge.Seconds() / float64(opts.LargeStreams)) / (r.AuditSmall.Seconds() / float64(opts.SmallStreams))
	busy := watch.End()
	fmt.Fprintf(out, "RESULT projections apply_ratio=%.3f coverage_flatness=%.3f events_per_s=%.0f audit_large_ms=%d busy=%d\n",
		r.ApplyRatio, r.CoverageFlatness, r.AppliedPerSecond, r.AuditLarge.Milliseconds(), busy)
	return r, nil
}

// auditHealthy stores streams events of type eventType (one per stream), registers a projection
// over it whose cursors match the store, and times one coverage audit of it alone.
func auditHealthy(ctx context.Context, pool *pgxpool.Pool, eventType string, streams int) (time.Duration, int64, error) {
	if _, err := pool.Exec(ctx, `
		insert into streamseal.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload)
		select gen_random_uuid(), 'orders', m.top + g, g, 't1', $2 || '-' || g, 1, $2, '\x7b7d'
		from generate_series(1, $1::bigint) g, (select coalesce(max(origin_seq), 0) as top from streamseal.events where origin = 'orders') m`,
		streams, eventType); err != nil {
		return 0, 0, fmt.Errorf("load %d streams: %w", streams, err)
	}
	name := "bench-" + eventType[4:]
	projection := "cov-" + name
	if _, err := store.ProjectionRegister(ctx, pool, projection, []string{eventType}, "bench_proj.runner", nil, "", true); err != nil {
		return 0, 0, err
	}
	if _, err := pool.Exec(ctx, `
		insert into streamseal.projection_cursors (projection, origin, tenant, event_type, stream_id, n, x0, x1, stream_version, origin_seq)
		select $1, d.origin, d.tenant, d.event_type, d.stream_id, d.n, d.x0, d.x1, 1, 0
		from streamseal.stream_digests d where d.event_type = $2`, projection, eventType); err != nil {
		return 0, 0, fmt.Errorf("seed cursors: %w", err)
	}
	// Caught up (it never runs here): the audit judges every bucket.
	if _, err := pool.Exec(ctx, `update streamseal.handlers set caught_up_at = now() + interval '1 hour' where name = $1`, projection); err != nil {
		return 0, 0, err
	}
	if _, err := pool.Exec(ctx, `analyze streamseal.stream_digests; analyze streamseal.projection_cursors`); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	res, err := store.CoverageAudit(ctx, pool, store.CoverageLimits{MaxReports: 100, MaxRebuilds: 5})
	took := time.Since(start)
	if err != nil {
		return took, 0, err
	}
	// Each size is timed alone.
	_, err = store.HandlerUnregister(ctx, pool, projection)
	return took, res.Gaps, err
}
