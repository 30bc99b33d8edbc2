package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/pgcluster"
)

// binary is the streamseal binary built once for these tests, so they see what a user sees:
// its output and its exit status.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "streamseal-cli-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "streamseal")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

// streamseal runs the binary with args and env (and no STREAMSEAL_* variable from the
// environment the tests run in).
func streamseal(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a failsafe against a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STREAMSEAL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

// TestHelpListsTheOptionsConfigDefines: `streamseal <cmd> -h` shows exactly the flags the
// option table defines for cmd, no more (a flag defined only in cmd/) and no fewer, each with
// the usage the table renders, and exits 0.
func TestHelpListsTheOptionsConfigDefines(t *testing.T) {
	t.Parallel()
	flagLine := regexp.MustCompile(`(?m)^\s+--?([a-z][a-z0-9-]*)\b`)
	for _, command := range config.Commands {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			r := streamseal(t, nil, command, "-h")
			if r.code != 0 {
				t.Errorf("exit status %d, want 0 for -h", r.code)
			}
			var shown []string
			for _, m := range flagLine.FindAllStringSubmatch(r.stdout, -1) {
				shown = append(shown, m[1])
			}
			var defined []string
			for _, o := range config.For(command) {
				defined = append(defined, o.Flag)
			}
			slices.Sort(shown)
			slices.Sort(defined)
			if !slices.Equal(shown, defined) {
				t.Errorf("-h shows %v\nconfig defines %v\nstdout:\n%s\nstderr:\n%s", shown, defined, r.stdout, r.stderr)
			}
			for _, o := range config.For(command) {
				if !strings.Contains(r.stdout, o.Usage(command)) {
					t.Errorf("-h lacks --%s's usage %q", o.Flag, o.Usage(command))
				}
			}
		})
	}
}

// TestUsageErrorsNameTheFlag: a bad invocation exits with status 2 and says, one line per
// problem, which flag is missing or wrong and what it accepts.
func TestUsageErrorsNameTheFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   []string
		args  []string
		lines []string // stderr's problem lines, all of them, in order
	}{
		{name: "InvalidOriginIsNamedAlongsideEachMissingFlag", args: []string{"repair", "--origin", "BAD!"}, lines: []string{
			"streamseal repair: --database-url is required (or STREAMSEAL_DATABASE_URL): this service's database, a PostgreSQL URL",
			"streamseal repair: --nats-url is required (or STREAMSEAL_NATS_URL): the NATS server",
			`streamseal repair: --origin "BAD!" is not a service name: expected [a-z][a-z0-9-]{0,62}`,
			"streamseal repair: --types is required: comma-separated event types to ask for",
			"streamseal repair: --tenant is required: comma-separated tenants to ask for",
		}},
		{name: "OutOfRangeValueIsNamedWithItsRange", env: []string{"STREAMSEAL_DATABASE_URL=postgres://unused"},
			args:  []string{"repair", "--nats-url", "nats://unused", "--origin", "orders", "--types", "a", "--tenant", "t", "--max-events", "0"},
			lines: []string{"streamseal repair: --max-events 0 is out of range: expected >= 1"}},
		{name: "EmptyWindowNamesBothEnds", env: []string{"STREAMSEAL_DATABASE_URL=postgres://unused", "STREAMSEAL_NATS_URL=nats://unused"},
			args:  []string{"repair", "--origin", "orders", "--types", "a", "--tenant", "t", "--from", "10", "--to", "5"},
			lines: []string{"streamseal repair: --to 5 is not above --from 10: the window [from, to) would be empty"}},
		{name: "MissingRequiredFlag", args: []string{"migrate"}, lines: []string{
			"streamseal migrate: --database-url is required (or STREAMSEAL_DATABASE_URL): this service's database, a PostgreSQL URL",
		}},
		{name: "AuditNeedsNATS", args: []string{"audit", "--database-url", "postgres://unused"}, lines: []string{
			"streamseal audit: --nats-url is required (or STREAMSEAL_NATS_URL): the NATS server",
		}},
		{name: "AuditOriginIsAServiceName", args: []string{"audit", "--database-url", "postgres://unused", "--nats-url", "nats://unused", "--origin", "Orders"}, lines: []string{
			`streamseal audit: --origin "Orders" is not a service name: expected [a-z][a-z0-9-]{0,62}`,
		}},
		{name: "TunablesAreCheckedWithTheCommand", args: []string{"run", "--database-url", "postgres://unused", "--liveness-intervals", "1", "--repair-mode", "yolo"}, lines: []string{
			"streamseal run: --liveness-intervals 1 is out of range: expected 2..100",
			`streamseal run: --repair-mode "yolo" is not a mode: expected auto-repair-capped or report-only`,
		}},
		{name: "UnparsableEnvironmentIsNamed", env: []string{"STREAMSEAL_LIVENESS_INTERVALS=three"}, args: []string{"run", "--database-url", "postgres://unused"}, lines: []string{
			`streamseal run: STREAMSEAL_LIVENESS_INTERVALS "three": expected an integer`,
		}},
		{name: "UnparsableFlagIsNamed", args: []string{"run", "--epoch-width", "ten"}, lines: []string{
			`streamseal run: invalid value "ten" for flag -epoch-width: expected an integer`,
		}},
		{name: "UnknownFlag", args: []string{"status", "--nope"}, lines: []string{
			"streamseal status: flag provided but not defined: -nope",
		}},
		// The fault suite's flags exist only in a build tagged chaos (fault_chaos.go).
		{name: "FaultInjectionIsNotInTheProductBuild", args: []string{"run", "--database-url", "postgres://unused", "--fault-drop-first-delivery", "0.3"}, lines: []string{
			"streamseal run: flag provided but not defined: -fault-drop-first-delivery",
		}},
		{name: "UnexpectedArgument", args: []string{"status", "--database-url", "postgres://unused", "extra"}, lines: []string{
			`streamseal status: unexpected argument "extra"`,
		}},
		{name: "UnknownCommand", args: []string{"frobnicate"}, lines: []string{
			`streamseal: unknown command "frobnicate"`,
		}},
		{name: "BenchNeedsABenchmark", args: []string{"bench", "--quick"}, lines: []string{
			"streamseal bench: a benchmark name is required: expected write, epochs, repair, relay, detect, audit, tenants, tenant-checkpoints, feed, projections or backfill",
		}},
		{name: "UnknownBenchmark", args: []string{"bench", "fast"}, lines: []string{
			`streamseal bench: unknown benchmark "fast": expected write, epochs, repair, relay, detect, audit, tenants, tenant-checkpoints, feed, projections or backfill`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := streamseal(t, tt.env, tt.args...)
			if r.code != 2 {
				t.Errorf("exit status %d, want 2 (usage)", r.code)
			}
			lines := strings.Split(r.stderr, "\n")
			at := 0
			for _, want := range tt.lines {
				i := slices.Index(lines[at:], want)
				if i < 0 {
					t.Fatalf("stderr lacks the line (in order)\n%s\nstderr:\n%s", want, r.stderr)
				}
				at += i + 1
			}
			// The problems come first, one a line, then a blank line and a hint.
			if problems := slices.Index(lines, ""); problems != len(tt.lines) {
				t.Errorf("%d problem lines before the hint, want %d:\n%s", problems, len(tt.lines), r.stderr)
			}
		})
	}
}

// TestRuntimeErrorsExitWithStatusOne: a valid invocation that fails at its work (here, a
// database that does not answer) is not a usage error.
func TestRuntimeErrorsExitWithStatusOne(t *testing.T) {
	t.Parallel()
	r := streamseal(t, nil, "status", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=5")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "streamseal: ") {
		t.Fatalf("exit status %d, stderr %q; want 1 and a streamseal: line", r.code, r.stderr)
	}
}

// Operations (invariant 13's start-up half): status, audit and repair on a database that was
// never migrated say so and what to run, instead of a raw "relation does not exist".
func TestUnmigratedDatabaseSaysRunMigrate(t *testing.T) {
	cluster, err := pgcluster.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	url := cluster.URL("postgres") // exists, never migrated
	for _, args := range [][]string{
		{"status", "--database-url", url},
		{"audit", "--database-url", url, "--nats-url", "nats://127.0.0.1:1"},
		{"repair", "--database-url", url, "--nats-url", "nats://127.0.0.1:1", "--origin", "orders", "--types", "a", "--tenant", "t"},
	} {
		r := streamseal(t, nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "not migrated: run `streamseal migrate`") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 saying not migrated: run `streamseal migrate`", args[0], r.code, r.stderr)
		}
	}
}

// silentListener accepts TCP connections and never answers: a database or broker that hangs.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// Invariant 13's start-up half: a database that accepts TCP and never answers once hung migrate
// and run for ever. migrate fails within the default connect timeout; run, which retries while a
// dependency is unreachable, fails when its start-up timeout passes, naming the database.
func TestSilentDatabaseFailsWithinTheConnectTimeout(t *testing.T) {
	t.Parallel()
	url := "postgres://nobody@" + silentListener(t) + "/none"
	r := streamseal(t, nil, "migrate", "--database-url", url)
	if r.code != 1 || !strings.Contains(r.stderr, "connect to database") || !strings.Contains(r.stderr, "timeout") {
		t.Errorf("migrate: exit %d, stderr %q; want exit 1 naming a connect timeout", r.code, r.stderr)
	}
	r = streamseal(t, nil, "run", "--database-url", url+"?connect_timeout=1", "--nats-url", "nats://127.0.0.1:1", "--start-timeout", "3s")
	if r.code != 1 || !strings.Contains(r.stderr, "database unreachable") || !strings.Contains(r.stderr, "--start-timeout") {
		t.Errorf("run: exit %d, stderr %q; want exit 1 saying the database stayed unreachable for --start-timeout", r.code, r.stderr)
	}
}

// migratedDatabase starts a throwaway cluster and migrates its postgres database with the binary.
func migratedDatabase(t *testing.T) string {
	t.Helper()
	cluster, err := pgcluster.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	url := cluster.URL("postgres")
	if r := streamseal(t, nil, "migrate", "--database-url", url); r.code != 0 {
		t.Fatalf("migrate: exit %d, stderr %q", r.code, r.stderr)
	}
	return url
}

// Invariant 13: run once wrote the service name, subscriptions and grants and only then found
// NATS unreachable. Now it waits (with backoff, up to --start-timeout) for both dependencies and
// writes nothing until both answer; the password in the NATS URL appears nowhere in its output.
func TestUnreachableNATSAtStartWritesNothing(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	r := streamseal(t, nil, "run", "--database-url", url, "--service", "orders", "--consumes", "order.placed",
		"--grant-all-tenants", "billing=order.placed", "--nats-url", "nats://ops:s3cret-pw@"+silentListener(t), "--start-timeout", "3s")
	if r.code != 1 || !strings.Contains(r.stderr, "NATS unreachable") {
		t.Fatalf("run: exit %d, stderr %q; want exit 1 saying NATS stayed unreachable", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret-pw") {
		t.Errorf("the NATS password appears in run's output: %s%s", r.stdout, r.stderr)
	}
	pool, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if name, err := store.ServiceName(context.Background(), pool); !errors.Is(err, store.ErrNotNamed) {
		t.Fatalf("after a failed start the database names the service %q (err %v); want nothing written", name, err)
	}
	subs, err := store.Subscriptions(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 0 {
		t.Fatalf("after a failed start the database holds subscriptions %v; want nothing written", subs)
	}
}

// A wrong NATS password fails at once (no retry can fix it) and neither the error nor the
// start-up log line shows the password.
func TestWrongNATSPasswordIsNotPrinted(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		Username: "ops", Password: "right-pw"})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS did not start")
	}
	natsURL := "nats://ops:wrong-pw@" + srv.Addr().String()
	r := streamseal(t, nil, "run", "--database-url", url, "--service", "orders", "--nats-url", natsURL, "--start-timeout", "1m")
	if r.code != 1 || !strings.Contains(r.stderr, "Authorization Violation") {
		t.Fatalf("run: exit %d, stderr %q; want exit 1 naming the authorization failure", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout+r.stderr, "nats://ops:xxxxx@") {
		t.Errorf("run's output does not show the NATS URL redacted (nats://ops:xxxxx@…): %s%s", r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "wrong-pw") {
		t.Errorf("the NATS password appears in run's output: %s%s", r.stdout, r.stderr)
	}
}

// A --metrics-addr that cannot be bound once only logged, and run went on without /metrics or
// /readyz. It is a start-up error naming the flag.
func TestBusyMetricsAddrIsAStartUpError(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	r := streamseal(t, nil, "run", "--database-url", url, "--service", "orders", "--nats-data-dir", t.TempDir(),
		"--metrics-addr", busy.Addr().String())
	if r.code != 1 || !strings.Contains(r.stderr, "--metrics-addr "+busy.Addr().String()) {
		t.Fatalf("run: exit %d, stderr %q; want exit 1 naming --metrics-addr", r.code, r.stderr)
	}
}
