// Command streamseal is the one binary: migrate a service database, run its control plane,
// and the demo and benchmarks. Flags fall back to STREAMSEAL_* environment variables. This file
// only wires flags to packages; the work lives in controlplane/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/streamseal/streamseal/controlplane/bench"
	"github.com/streamseal/streamseal/controlplane/demo"
	"github.com/streamseal/streamseal/controlplane/migrate"
	"github.com/streamseal/streamseal/controlplane/scratchdb"
	"github.com/streamseal/streamseal/controlplane/stamper"
	"github.com/streamseal/streamseal/controlplane/store"
)

const usage = `streamseal: anti-entropy and repair for event-driven services on PostgreSQL

usage: streamseal <command> [flags]

commands:
  migrate   apply migrations and re-install the SQL functions (idempotent)
  run       run the control plane for one service database (today: the commit-order stamper)
  demo      a walk-through on a throwaway database: append, stamp, digests, verification
  bench     run a benchmark: bench write|epochs [--quick]

Run 'streamseal <command> -h' for a command's flags.
`

// errUsage marks bad invocations: exit status 2 instead of 1.
var errUsage = errors.New("usage")

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	slog.SetDefault(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := dispatch(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "streamseal:", err)
		os.Exit(1)
	}
}

func dispatch(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errUsage
	}
	commands := map[string]func(context.Context, []string, io.Writer) error{
		"migrate": cmdMigrate,
		"run":     cmdRun,
		"demo":    cmdDemo,
		"bench":   cmdBench,
	}
	cmd, ok := commands[args[0]]
	if !ok {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			fmt.Fprint(out, usage)
			return nil
		}
		fmt.Fprintf(os.Stderr, "streamseal: unknown command %q\n\n%s", args[0], usage)
		return errUsage
	}
	return cmd(ctx, args[1:], out)
}

// newFlags makes a command's flag set; parse errors print usage and yield errUsage.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("streamseal "+name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errUsage
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return errUsage
	}
	return nil
}

func databaseURLFlag(fs *flag.FlagSet, help string) *string {
	return fs.String("database-url", os.Getenv("STREAMSEAL_DATABASE_URL"), help+" (env STREAMSEAL_DATABASE_URL)")
}

func cmdMigrate(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("migrate")
	databaseURL := databaseURLFlag(fs, "the service database to migrate")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *databaseURL == "" {
		fmt.Fprintln(os.Stderr, "streamseal migrate: --database-url is required")
		return errUsage
	}
	r, err := migrate.MigrateURL(ctx, *databaseURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "migrated: schema version %d -> %d; functions re-installed\n", r.From, r.To)
	return nil
}

func cmdRun(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("run")
	databaseURL := databaseURLFlag(fs, "the service database")
	service := fs.String("service", os.Getenv("STREAMSEAL_SERVICE"), "this service's name, [a-z][a-z0-9-]{0,62}; set once per database (env STREAMSEAL_SERVICE)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *databaseURL == "" {
		fmt.Fprintln(os.Stderr, "streamseal run: --database-url is required")
		return errUsage
	}
	pool, err := store.Open(ctx, *databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if *service != "" {
		if err := store.SetServiceName(ctx, pool, *service); err != nil {
			return err
		}
	}
	name, err := store.ServiceName(ctx, pool)
	if err != nil {
		return fmt.Errorf("%w (pass --service)", err)
	}
	slog.Info("streamseal run: control plane started", "service", name)
	loop := &stamper.Loop{Pool: pool}
	return loop.Run(ctx)
}

func cmdDemo(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("demo")
	serverURL := databaseURLFlag(fs, "a server to create the demo database on (default: a throwaway cluster)")
	if err := parse(fs, args); err != nil {
		return err
	}
	server, err := scratchdb.Open(ctx, *serverURL)
	if err != nil {
		return err
	}
	defer server.Close()
	return demo.Run(ctx, server, out)
}

func cmdBench(ctx context.Context, args []string, out io.Writer) error {
	benchmarks := map[string]bool{"write": true, "epochs": true}
	if len(args) == 0 || !benchmarks[args[0]] {
		fmt.Fprintln(os.Stderr, `usage: streamseal bench <write|epochs> [--quick] [--database-url URL]

benchmarks:
  write    append + stamp + digests against a plain-insert baseline
  epochs   whole-lane type_digests from sealed epochs against a full recompute, at two sizes`)
		return errUsage
	}
	name := args[0]
	fs := newFlags("bench " + name)
	quick := fs.Bool("quick", false, "run a smaller size")
	serverURL := databaseURLFlag(fs, "a server to create the benchmark database on (default: a throwaway cluster)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	server, err := scratchdb.Open(ctx, *serverURL)
	if err != nil {
		return err
	}
	defer server.Close()
	pool, err := server.CreateService(ctx, "streamseal_bench", "bench")
	if err != nil {
		return err
	}
	defer pool.Close()
	switch name {
	case "epochs":
		opts := bench.FullEpochs
		if *quick {
			opts = bench.QuickEpochs
		}
		_, err = bench.Epochs(ctx, pool, opts, out)
	default:
		opts := bench.FullWrite
		if *quick {
			opts = bench.QuickWrite
		}
		_, err = bench.Write(ctx, pool, opts, out)
	}
	return err
}
