// Command streamseal is the one binary: migrate a service database, run its control plane,
// repair, audit and status for operators, and the demo and benchmarks. Each command is a file
// of its own (migrate.go, run.go, …): an options struct whose Validate names every flag that
// is missing or wrong, and a command over the shared base in command.go. The options are
// defined in controlplane/config; this file only dispatches.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/redact"
)

// commands are streamseal's commands, in the order its usage lists them.
var commands = []struct {
	spec
	execute func(ctx context.Context, inv invocation) error
}{
	{spec{name: config.CommandMigrate, summary: "apply migrations and re-install the SQL functions (idempotent)"},
		func(ctx context.Context, inv invocation) error {
			return execute(ctx, inv, &migrateCmd{}, &migrateOpts{})
		}},
	{spec{name: config.CommandRun, summary: "run the control plane of one service: stamper, relay, inbox, redelivery"},
		func(ctx context.Context, inv invocation) error { return execute(ctx, inv, &runCmd{}, &runOpts{}) }},
	{spec{name: config.CommandRepair, summary: "ask an origin to re-deliver events and show progress until they are stored"},
		func(ctx context.Context, inv invocation) error { return execute(ctx, inv, &repairCmd{}, &repairOpts{}) }},
	{spec{name: config.CommandBackfill, summary: "ask every origin for the history of consumed types (state-only) and show each origin's progress until complete"},
		func(ctx context.Context, inv invocation) error {
			return execute(ctx, inv, &backfillCmd{}, &backfillOpts{})
		}},
	{spec{name: config.CommandAudit, summary: "run one deep audit now against every known origin (or --origin) and print findings"},
		func(ctx context.Context, inv invocation) error { return execute(ctx, inv, &auditCmd{}, &auditOpts{}) }},
	{spec{name: config.CommandStatus, summary: "per origin: liveness, seal, unhealed buckets, lanes (floor and holes); --json"},
		func(ctx context.Context, inv invocation) error { return execute(ctx, inv, &statusCmd{}, &statusOpts{}) }},
	{spec{name: config.CommandQuarantine, summary: "own events the relay set aside (why, since when); --requeue [--event-ids] publishes them again"},
		func(ctx context.Context, inv invocation) error {
			return execute(ctx, inv, &quarantineCmd{}, &quarantineOpts{})
		}},
	{spec{name: config.CommandTail, summary: "print the application feed (commit order) as JSON lines until interrupted; --types, --tenant, --resume TOKEN"},
		func(ctx context.Context, inv invocation) error { return execute(ctx, inv, &tailCmd{}, &tailOpts{}) }},
	{spec{name: config.CommandDemo, summary: "a walk-through on a throwaway database: append, stamp, digests, verification"},
		func(ctx context.Context, inv invocation) error { return execute(ctx, inv, &demoCmd{}, &demoOpts{}) }},
	{spec{name: config.CommandBench, args: "<" + strings.Join(benchmarkNames(), "|") + ">", summary: "run a benchmark: bench write|epochs|repair|detect|audit|tenants|tenant-checkpoints|feed|projections|backfill [--quick]", about: benchAbout},
		func(ctx context.Context, inv invocation) error { return execute(ctx, inv, &benchCmd{}, &benchOpts{}) }},
	{spec{name: config.CommandNATSConfig, summary: "print the nats-server authorization block (least-privilege users) for a topology; --out DIR writes NKey seeds", about: natsConfigAbout},
		func(ctx context.Context, inv invocation) error {
			return execute(ctx, inv, &natsConfigCmd{}, &natsConfigOpts{})
		}},
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	slog.SetDefault(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var usage *usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, usage.Error())
		if usage.hint != "" {
			fmt.Fprint(os.Stderr, "\n"+usage.hint)
		}
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "streamseal:", redact.String(err.Error())) // a wrapped URL keeps no secret
		os.Exit(1)
	}
}

// dispatch runs the command args name. A bad invocation is a *usageError (exit status 2).
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &usageError{problems: []error{errors.New("a command is required")}, hint: usage()}
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage())
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.execute(ctx, invocation{spec: c.spec, args: args[1:], stdout: stdout, stderr: stderr, logger: slog.Default()})
		}
	}
	return &usageError{problems: []error{fmt.Errorf("unknown command %q", args[0])}, hint: usage()}
}

// usage is streamseal's own help: its commands.
func usage() string {
	var b strings.Builder
	b.WriteString("streamseal: anti-entropy and repair for event-driven services on PostgreSQL\n\n")
	b.WriteString("usage: streamseal <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'streamseal <command> -h' for a command's flags.\n")
	return b.String()
}
