package harness_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/jobs"
	"github.com/streamseal/streamseal/controlplane/migrate"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/harness"
)

// refusals is a slog handler that keeps every record (at Warn or above) that names a refused
// privilege, so a control plane that fails somewhere out of sight (a loop's retry, a job's error)
// fails the test; it forwards errors to stderr like the other harness tests.
type refusals struct {
	mu     *sync.Mutex
	seen   *[]string
	attrs  []slog.Attr
	stderr slog.Handler
}

func newRefusals() *refusals {
	return &refusals{mu: &sync.Mutex{}, seen: &[]string{},
		stderr: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})}
}

func (r *refusals) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (r *refusals) Handle(ctx context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	for _, a := range r.attrs {
		fmt.Fprintf(&b, " %s", a)
	}
	rec.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s", a); return true })
	if line := b.String(); strings.Contains(line, "permission denied") || strings.Contains(line, "42501") ||
		strings.Contains(line, "must be owner") {
		r.mu.Lock()
		*r.seen = append(*r.seen, line)
		r.mu.Unlock()
	}
	if rec.Level >= slog.LevelError {
		return r.stderr.Handle(ctx, rec)
	}
	return nil
}

func (r *refusals) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *r
	c.attrs = append(append([]slog.Attr{}, r.attrs...), attrs...)
	c.stderr = r.stderr.WithAttrs(attrs)
	return &c
}

func (r *refusals) WithGroup(name string) slog.Handler {
	c := *r
	c.stderr = r.stderr.WithGroup(name)
	return &c
}

func (r *refusals) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), *r.seen...)
}

// roles creates what a DBA creates once per cluster (README "Database roles"): an owner login
// role with no special attribute (not a superuser, no CREATEROLE, no CREATEDB), which
// `streamseal migrate` runs as, and a control login role granted only streamseal_control, which
// `streamseal run` runs as. Both are dropped when the test ends.
func roles(t *testing.T) (owner, control string) {
	t.Helper()
	ctx := context.Background()
	srv, err := dbtest.StartServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dbtest.New(t) // the migrated template exists, and with it the group roles migrations 011 and 021 create
	suffix := strings.ReplaceAll(uuid.NewString()[:13], "-", "_")
	owner, control = "owner_"+suffix, "control_"+suffix
	if err := srv.Exec(ctx, fmt.Sprintf("create role %s login nosuperuser nocreaterole nocreatedb; create role %s login; grant streamseal_control to %[2]s",
		pgx.Identifier{owner}.Sanitize(), pgx.Identifier{control}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	// Registered before the databases and services: cleanups run last-first, so the roles go
	// after them.
	t.Cleanup(func() {
		_ = srv.Exec(context.Background(), fmt.Sprintf("drop role if exists %s, %s", pgx.Identifier{control}.Sanitize(), pgx.Identifier{owner}.Sanitize()))
	})
	return owner, control
}

// ownedDatabase creates an empty database owned by owner and migrates it as owner (what
// `streamseal migrate --database-url postgres://owner@…` does), returning the owner's URL.
func ownedDatabase(t *testing.T, owner string) (string, error) {
	ctx := context.Background()
	srv, err := dbtest.StartServer(ctx)
	if err != nil {
		return "", err
	}
	name := "streamseal_roles_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "_")
	if err := srv.Exec(ctx, fmt.Sprintf("create database %s owner %s", pgx.Identifier{name}.Sanitize(), pgx.Identifier{owner}.Sanitize())); err != nil {
		return "", err
	}
	t.Cleanup(func() { _ = srv.DropDatabase(context.Background(), srv.URL(name)) })
	u, err := url.Parse(srv.URL(name))
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Del("user")
	u.RawQuery = q.Encode()
	u.User = url.User(owner)
	if _, err := migrate.MigrateURL(ctx, u.String()); err != nil {
		return "", fmt.Errorf("migrate as the owner %s: %w", owner, err)
	}
	return u.String(), nil
}

// Issue 14 item 6 with invariants 1, 6 and 14: each service's database is migrated by an owner
// role that is no superuser, then both services' control planes run as a login role granted
// only streamseal_control. Each configures itself (service name, subscriptions, grants: what
// run's flags write), stamps, relays, checkpoints, closes epochs, audits and sweeps under that
// role: a delivery lost at the consumer's receive seam is named by a checkpoint and repaired, the
// audit certifies the window, the River jobs complete, and nothing anywhere is refused a
// privilege.
func TestRoles_RunWorksUnderTheControlRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logs := newRefusals()
	owner, role := roles(t)
	h, err := harness.New(ctx, func(ctx context.Context, service string) (string, error) {
		return ownedDatabase(t, owner)
	}, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)

	settings := auditSettings()
	settings.MaxDigestsPerManifest = 500 // one chunk: a multi-chunk window compares but never certifies
	orders := start(t, h, "orders", harness.Options{Settings: settings, DatabaseUser: role,
		Grants: map[string][]string{"billing": eventTypes}}, nil)
	lose := &suppressOnce{lose: map[uuid.UUID]bool{}}
	billing := start(t, h, "billing", harness.Options{Settings: settings, DatabaseUser: role, Consumes: eventTypes,
		Suppress: lose.fn}, nil)
	services := []*harness.Service{orders, billing}
	for _, s := range services {
		var user string
		var owner bool
		if err := s.Pool.QueryRow(ctx, "select current_user, pg_has_role(current_user, 'streamseal_application', 'member') or "+
			"exists (select 1 from pg_class where relname = 'events' and relowner = (select oid from pg_roles where rolname = current_user))").
			Scan(&user, &owner); err != nil {
			t.Fatal(err)
		}
		if user != role || owner {
			t.Fatalf("%s connects as %q (owner or application: %v); want %q, granted streamseal_control only", s.Name, user, owner, role)
		}
	}

	var events []store.NewEvent
	for i := range 100 {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: fmt.Sprintf("order-%02d", i%10),
			StreamVersion: int64(i/10 + 1), EventType: eventTypes[i%len(eventTypes)], Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	lose.lose[events[49].EventID] = true
	if _, err := store.EventsAppend(ctx, orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the checkpoint names the lost delivery and billing is repaired to 100", services, func() bool {
		requested := false
		for _, g := range gapReports(t, billing) {
			requested = requested || g.Action == "requested"
		}
		return requested && countFrom(t, billing.Pool, "orders") == 100
	})
	requireSameRows(t, rowsOf(t, orders.Pool, "orders"), rowsOf(t, billing.Pool, "orders"))

	findings, err := billing.Auditor.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || len(findings[0].Divergent) != 0 || !findings[0].Sealed {
		t.Fatalf("audit under the control role: %+v; want nothing divergent and the window sealed", findings)
	}
	sweeper := &jobs.Sweeper{Pool: billing.Pool, Auditor: billing.Auditor, Logger: slog.New(logs), MaxEpochs: 1000,
		Metrics: billing.Auditor.Metrics}
	if err := sweeper.Sweep(ctx); err != nil {
		t.Fatalf("sweep under the control role: %v", err)
	}
	if err := billing.Metrics.Refresh(ctx); err != nil {
		t.Fatalf("metrics refresh under the control role: %v", err)
	}
	// River ran its periodic jobs under the role: each service completed a maintenance cycle and
	// checkpoints, and no job carries an error.
	for _, s := range services {
		waitFor(t, s.Name+"'s maintenance and checkpoint jobs completed", services, func() bool {
			var maintained, checkpointed int
			_ = s.Pool.QueryRow(ctx, `select count(*) filter (where kind = $1), count(*) filter (where kind = $2)
				from streamseal_river.river_job where state = 'completed'`,
				jobs.MaintenanceArgs{}.Kind(), jobs.CheckpointArgs{}.Kind()).Scan(&maintained, &checkpointed)
			return maintained > 0 && checkpointed > 0
		})
		var failed []string
		rows, err := s.Pool.Query(ctx, "select kind || ': ' || errors::text from streamseal_river.river_job where errors is not null")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			failed = append(failed, line)
		}
		rows.Close()
		if len(failed) > 0 {
			t.Fatalf("%s's River jobs failed under the control role: %v", s.Name, failed)
		}
	}
	if refused := logs.lines(); len(refused) > 0 {
		t.Fatalf("the control plane was refused privileges under streamseal_control:\n%s", strings.Join(refused, "\n"))
	}
}
