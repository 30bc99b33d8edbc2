package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/internal/bench"
	"github.com/streamseal/streamseal/internal/scratchdb"
)

// benchmarks are what `streamseal bench <name>` runs, each at its full size or, with --quick,
// its smaller one, on scratch databases of server.
var benchmarks = []struct {
	name, about string
	run         func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error
}{
	{"write", "append + stamp + digests against a plain-insert baseline", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		return onBenchService(ctx, server, func(pool *pgxpool.Pool) error {
			_, err := bench.Write(ctx, pool, pick(quick, bench.QuickWrite, bench.FullWrite), out)
			return err
		})
	}},
	{"epochs", "whole-lane type_digests from sealed epochs against a full recompute, at two sizes", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		return onBenchService(ctx, server, func(pool *pgxpool.Pool) error {
			_, err := bench.Epochs(ctx, pool, pick(quick, bench.QuickEpochs, bench.FullEpochs), out)
			return err
		})
	}},
	{"repair", "end-to-end redelivery against a raw pipeline of the same rows, wire bytes against payload bytes, relay lag against a raw relay", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		_, err := bench.Repair(ctx, benchDatabases(server), pick(quick, bench.QuickRepair, bench.FullRepair), out)
		return err
	}},
	{"relay", "the relay-lag phase of repair alone: streamseal's relay against the outbox relay, alternating pairs, lag by stage", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		_, err := bench.Relay(ctx, benchDatabases(server), pick(quick, bench.QuickRepair, bench.FullRepair), out)
		return err
	}},
	{"detect", "gap detection latency in checkpoint intervals; checkpoint cost as the store grows", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		return bench.Detect(ctx, benchDatabases(server), pick(quick, bench.QuickDetect, bench.FullDetect), out)
	}},
	{"audit", "wire bytes and time of a healthy audit as the lane grows, of a damaged one, and the naive diff", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		return bench.Audit(ctx, benchDatabases(server), pick(quick, bench.QuickAudit, bench.FullAudit), out)
	}},
	{"tenants", "healthy audit wire bytes as the tenant count grows, the seal at every size, one lost event in the last tenant", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		return bench.Tenants(ctx, benchDatabases(server), pick(quick, bench.QuickTenants, bench.FullTenants), out)
	}},
	{"tenant-checkpoints", "the checkpoint part of tenants alone: quiet round bytes, a round with every pair active, live events behind it", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		return bench.TenantCheckpoints(ctx, benchDatabases(server), pick(quick, bench.QuickTenantCheckpoints, bench.FullTenantCheckpoints), out)
	}},
	{"feed", "the application feed: read_feed through a store against a plain ordered scan of the same rows, commit-to-handler p99 under live copies, token bytes per origin", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		return onBenchService(ctx, server, func(pool *pgxpool.Pool) error {
			_, err := bench.Feed(ctx, pool, pick(quick, bench.QuickFeed, bench.FullFeed), out)
			return err
		})
	}},
	{"projections", "a SQL projection through run_handler against the same handler in a plain loop over the same rows; the coverage audit's cost per stream at two store sizes", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		return onBenchService(ctx, server, func(pool *pgxpool.Pool) error {
			_, err := bench.Projections(ctx, pool, pick(quick, bench.QuickProjections, bench.FullProjections), out)
			return err
		})
	}},
	{"backfill", "history delivered to a consumer that starts consuming a type: events/s, wire bytes against payload bytes, the origin's live appends during it against without", func(ctx context.Context, server *scratchdb.Server, quick bool, out io.Writer) error {
		_, err := bench.Backfill(ctx, benchDatabases(server), pick(quick, bench.QuickBackfill, bench.FullBackfill), out)
		return err
	}},
}

func benchmarkNames() []string {
	var names []string
	for _, b := range benchmarks {
		names = append(names, b.name)
	}
	return names
}

// benchAbout lists the benchmarks in bench's -h.
var benchAbout = func() string {
	var b strings.Builder
	b.WriteString("benchmarks:\n")
	for _, bm := range benchmarks {
		fmt.Fprintf(&b, "  %-8s %s\n", bm.name, bm.about)
	}
	return b.String()
}()

// benchOpts are bench's options: the benchmark (its one argument), --quick, --durable,
// --database-url.
type benchOpts struct {
	config.Options
	Benchmark string
}

func (o *benchOpts) options() *config.Options { return &o.Options }

func (o *benchOpts) Validate() error { return o.ValidateFor(config.CommandBench) }

func (o *benchOpts) setArgs(args []string) error {
	names := benchmarkNames()
	expected := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	switch {
	case len(args) == 0:
		return fmt.Errorf("a benchmark name is required: expected %s", expected)
	case len(args) > 1:
		return fmt.Errorf("unexpected argument %q", args[1])
	}
	for _, n := range names {
		if args[0] == n {
			o.Benchmark = n
			return nil
		}
	}
	return fmt.Errorf("unknown benchmark %q: expected %s", args[0], expected)
}

// benchCmd runs one benchmark on a throwaway cluster, or on --database-url's server.
type benchCmd struct{ commandBase }

func (c *benchCmd) Run(ctx context.Context, o *benchOpts) error {
	open := scratchdb.Open
	if o.Durable {
		open = scratchdb.OpenDurable
	}
	server, err := open(ctx, o.ScratchURL)
	if err != nil {
		return err
	}
	c.onClose(func() { server.Close() })
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	for _, b := range benchmarks {
		if b.name == o.Benchmark {
			return b.run(ctx, server, o.Quick, c.Out)
		}
	}
	return fmt.Errorf("unknown benchmark %q", o.Benchmark) // Validate refused it already
}

// pick is the quick or the full size of a benchmark.
func pick[T any](quick bool, small, full T) T {
	if quick {
		return small
	}
	return full
}

// benchDatabases creates one scratch database per service a multi-service benchmark starts.
func benchDatabases(server *scratchdb.Server) func(ctx context.Context, service string) (string, error) {
	return func(ctx context.Context, service string) (string, error) {
		return server.CreateDatabase(ctx, "streamseal_bench_"+strings.ReplaceAll(service, "-", "_"))
	}
}

// onBenchService runs f on the one migrated service database a single-store benchmark uses.
func onBenchService(ctx context.Context, server *scratchdb.Server, f func(pool *pgxpool.Pool) error) error {
	pool, err := server.CreateService(ctx, "streamseal_bench", "bench")
	if err != nil {
		return err
	}
	defer pool.Close()
	return f(pool)
}
