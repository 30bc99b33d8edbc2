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
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/migrate"
	"github.com/streamseal/streamseal/controlplane/node"
	"github.com/streamseal/streamseal/controlplane/progress"
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/status"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/bench"
	"github.com/streamseal/streamseal/internal/demo"
	"github.com/streamseal/streamseal/internal/scratchdb"
)

const usage = `streamseal: anti-entropy and repair for event-driven services on PostgreSQL

usage: streamseal <command> [flags]

commands:
  migrate   apply migrations and re-install the SQL functions (idempotent)
  run       run the control plane of one service: stamper, relay, inbox, redelivery
  repair    ask an origin to re-deliver events and show progress until they are stored
  audit     run one deep audit now against every known origin (or --origin) and print findings
  status    per origin: liveness, seal, unhealed buckets, lanes (floor and holes); --json
  demo      a walk-through on a throwaway database: append, stamp, digests, verification
  bench     run a benchmark: bench write|epochs|repair|detect|audit [--quick]

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
		"repair":  cmdRepair,
		"audit":   cmdAudit,
		"status":  cmdStatus,
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
	natsURL := natsURLFlag(fs)
	natsDir := fs.String("nats-data-dir", envOr("STREAMSEAL_NATS_DATA_DIR", "streamseal-nats"), "JetStream data dir of the embedded NATS server started when --nats-url is empty (env STREAMSEAL_NATS_DATA_DIR)")
	consumes := fs.String("consumes", os.Getenv("STREAMSEAL_CONSUMES"), "comma-separated event types this service consumes, from any origin; added to streamseal.subscriptions (env STREAMSEAL_CONSUMES)")
	metricsAddr := fs.String("metrics-addr", os.Getenv("STREAMSEAL_METRICS_ADDR"), "serve /metrics, /healthz and /readyz on this address, e.g. :9464 (env STREAMSEAL_METRICS_ADDR; empty: off)")
	var grants grantFlags
	fs.Var(&grants, "grant", "service=type1,type2: let service receive these event types in redelivery (repeatable; added to streamseal.grants)")
	settings := config.Defaults()
	if err := settings.RegisterFlags(fs); err != nil {
		fmt.Fprintln(os.Stderr, "streamseal run:", err)
		return errUsage
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := settings.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "streamseal run:", err)
		return errUsage
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
	if types := splitList(*consumes); len(types) > 0 {
		if err := store.SubscriptionsAdd(ctx, pool, types); err != nil {
			return fmt.Errorf("--consumes: %w", err)
		}
	}
	for grantee, types := range grants {
		if err := store.GrantsAdd(ctx, pool, grantee, types); err != nil {
			return fmt.Errorf("--grant %s: %w", grantee, err)
		}
	}
	url := *natsURL
	if url == "" {
		embedded, err := wire.StartEmbedded(*natsDir)
		if err != nil {
			return err
		}
		defer embedded.Shutdown()
		url = embedded.URL()
		slog.Info("streamseal run: embedded NATS started", "url", url, "data_dir", *natsDir)
	}
	nc, err := wire.Connect(url, name, slog.Default())
	if err != nil {
		return err
	}
	defer nc.Close()
	n, err := node.New(node.Config{Service: name, Pool: pool, NC: nc, Settings: settings})
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		return err
	}
	if *metricsAddr != "" {
		srv := &http.Server{Addr: *metricsAddr, Handler: n.Metrics.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				slog.Error("streamseal run: metrics server failed", "addr", *metricsAddr, "err", err)
			}
		}()
		defer srv.Close()
		slog.Info("streamseal run: serving /metrics, /healthz, /readyz", "addr", *metricsAddr)
	}
	slog.Info("streamseal run: control plane started", "service", name, "nats", url)
	n.Wait()
	return n.Err()
}

func cmdRepair(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("repair")
	databaseURL := databaseURLFlag(fs, "this (consumer) service's database")
	natsURL := natsURLFlag(fs)
	origin := fs.String("origin", "", "the origin to ask (required)")
	types := fs.String("types", "", "comma-separated event types (required)")
	tenant := fs.String("tenant", "", "comma-separated tenants (required; use '' quoting for the empty tenant)")
	from := fs.Int64("from", 0, "first origin_seq of the window (inclusive; 0 = from the start)")
	to := fs.Int64("to", 0, "end of the window (exclusive; 0 = no end)")
	maxEvents := fs.Int("max-events", 10000, "the most events to ask for (the origin clamps to its own cap)")
	stateOnly := fs.Bool("state-only", false, "mark the re-delivered events state-only (backfill: build state, fire no triggers)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *databaseURL == "", *natsURL == "", !wire.ValidServiceName(*origin), *types == "", *tenant == "":
		fmt.Fprintln(os.Stderr, "streamseal repair: --database-url, --nats-url, --origin, --types and --tenant are required")
		return errUsage
	case *from < 0 || *to < 0 || (*to > 0 && *to <= *from):
		fmt.Fprintf(os.Stderr, "streamseal repair: window [%d, %d) is invalid: expected 0 <= from < to\n", *from, *to)
		return errUsage
	case *maxEvents < 1:
		fmt.Fprintf(os.Stderr, "streamseal repair: --max-events %d is invalid: expected >= 1\n", *maxEvents)
		return errUsage
	}
	conn, err := openOperator(ctx, *databaseURL, *natsURL, "repair")
	if err != nil {
		return err
	}
	defer conn.close()
	pool, nc, service := conn.pool, conn.nc, conn.service
	req := wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: splitList(*tenant), Types: splitList(*types),
		MaxEvents: *maxEvents, StateOnly: *stateOnly}
	if *from > 0 {
		req.FromSeq = from
	}
	if *to > 0 {
		req.ToSeq = to
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	op := &redelivery.Operator{Pool: pool, NC: nc, Service: service, Out: out, Terminal: progress.IsTerminal(os.Stdout)}
	_, err = op.Run(ctx, *origin, req)
	return err
}

func cmdAudit(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("audit")
	databaseURL := databaseURLFlag(fs, "this (consumer) service's database")
	natsURL := natsURLFlag(fs)
	origin := fs.String("origin", "", "audit only this origin (default: every origin this service has heard from)")
	full := fs.Bool("full", false, "compare the whole history from 0, not just the window above the seal")
	settings := config.Defaults()
	if err := settings.RegisterFlags(fs); err != nil {
		fmt.Fprintln(os.Stderr, "streamseal audit:", err)
		return errUsage
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := settings.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "streamseal audit:", err)
		return errUsage
	}
	if *databaseURL == "" || *natsURL == "" {
		fmt.Fprintln(os.Stderr, "streamseal audit: --database-url and --nats-url are required")
		return errUsage
	}
	conn, err := openOperator(ctx, *databaseURL, *natsURL, "audit")
	if err != nil {
		return err
	}
	defer conn.close()
	pool, nc, service := conn.pool, conn.nc, conn.service
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	auditor := &audit.Auditor{Pool: pool, JS: js, Service: service, Config: settings, Logger: slog.Default(),
		Limits: audit.Limits{MaxDrillDownTypes: settings.MaxDrillDownTypesPerAudit, MaxDigests: settings.MaxDigestsPerManifest,
			MaxRequests: settings.MaxAutoRepairRequestsPerAudit}}
	report, end := audit.ProgressLines(out, progress.IsTerminal(os.Stdout))
	auditor.OnProgress = report
	findings, err := auditor.RunBeside(ctx, nc, audit.Scope{Origin: *origin, Full: *full})
	end()
	if err == nil || len(findings) > 0 {
		audit.WriteFindings(out, findings, settings.RepairMode)
	}
	return err
}

// operatorConn is what an operator command works with: this service's database, its name, and a
// NATS connection named after the command.
type operatorConn struct {
	pool    *pgxpool.Pool
	nc      *nats.Conn
	service string
}

func openOperator(ctx context.Context, databaseURL, natsURL, command string) (*operatorConn, error) {
	pool, err := store.Open(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	service, err := store.ServiceName(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	nc, err := wire.Connect(natsURL, service+"-"+command, slog.Default())
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &operatorConn{pool: pool, nc: nc, service: service}, nil
}

func (c *operatorConn) close() {
	c.nc.Close()
	c.pool.Close()
}

func cmdStatus(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("status")
	databaseURL := databaseURLFlag(fs, "the service database")
	asJSON := fs.Bool("json", false, "print JSON for machines instead of a table")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *databaseURL == "" {
		fmt.Fprintln(os.Stderr, "streamseal status: --database-url is required")
		return errUsage
	}
	pool, err := store.Open(ctx, *databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	origins, err := status.Read(ctx, pool)
	if err != nil {
		return err
	}
	return status.Print(out, origins, *asJSON)
}

func natsURLFlag(fs *flag.FlagSet) *string {
	return fs.String("nats-url", os.Getenv("STREAMSEAL_NATS_URL"), "NATS server URL (env STREAMSEAL_NATS_URL)")
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// grantFlags collects repeated --grant service=type1,type2 flags.
type grantFlags map[string][]string

func (g *grantFlags) String() string { return fmt.Sprint(map[string][]string(*g)) }

func (g *grantFlags) Set(v string) error {
	service, types, ok := strings.Cut(v, "=")
	if !ok || !wire.ValidServiceName(service) || len(splitList(types)) == 0 {
		return fmt.Errorf("%q is not service=type1,type2", v)
	}
	if *g == nil {
		*g = grantFlags{}
	}
	(*g)[service] = append((*g)[service], splitList(types)...)
	return nil
}

func cmdDemo(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("demo")
	serverURL := databaseURLFlag(fs, "a server to create the demo database on (default: a throwaway cluster)")
	keep := fs.Bool("keep", false, "after the verdict keep the services running, with a trickle of orders, serving metrics until Ctrl-C")
	metricsAddr := fs.String("metrics-addr", "127.0.0.1:9464", "with --keep: orders' metrics address; billing and shipping take the next two ports")
	if err := parse(fs, args); err != nil {
		return err
	}
	server, err := scratchdb.Open(ctx, *serverURL)
	if err != nil {
		return err
	}
	defer server.Close()
	return demo.Run(ctx, server, out, demo.Options{Keep: *keep, MetricsAddr: *metricsAddr})
}

func cmdBench(ctx context.Context, args []string, out io.Writer) error {
	benchmarks := map[string]bool{"write": true, "epochs": true, "repair": true, "detect": true, "audit": true}
	if len(args) == 0 || !benchmarks[args[0]] {
		fmt.Fprintln(os.Stderr, `usage: streamseal bench <write|epochs|repair|detect|audit> [--quick] [--database-url URL]

benchmarks:
  write    append + stamp + digests against a plain-insert baseline
  epochs   whole-lane type_digests from sealed epochs against a full recompute, at two sizes
  repair   end-to-end redelivery throughput, wire bytes against payload bytes, relay lag
  detect   gap detection latency in checkpoint intervals; checkpoint cost as the store grows
  audit    wire bytes and time of a healthy audit as the lane grows, of a damaged one, and the naive diff`)
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
	newDB := func(ctx context.Context, service string) (string, error) {
		return server.CreateDatabase(ctx, "streamseal_bench_"+strings.ReplaceAll(service, "-", "_"))
	}
	if name == "audit" {
		opts := bench.FullAudit
		if *quick {
			opts = bench.QuickAudit
		}
		return bench.Audit(ctx, newDB, opts, out)
	}
	if name == "detect" {
		opts := bench.FullDetect
		if *quick {
			opts = bench.QuickDetect
		}
		return bench.Detect(ctx, newDB, opts, out)
	}
	if name == "repair" {
		opts := bench.FullRepair
		if *quick {
			opts = bench.QuickRepair
		}
		_, err = bench.Repair(ctx, func(ctx context.Context, service string) (string, error) {
			return server.CreateDatabase(ctx, "streamseal_bench_"+strings.ReplaceAll(service, "-", "_"))
		}, opts, out)
		return err
	}
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
