package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/pgcluster"
)

// The local coverage audit from the command line (issue 19; invariant 9's caps): `streamseal
// audit --local` needs no broker; over a projection born after 8 streams of history it reports
// every gap and rebuilds --max-auto-rebuilds-per-audit streams; in report-only it names what it
// would rebuild and touches nothing.
func TestAuditLocalRebuildsABornLateProjectionCapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster, err := pgcluster.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	url := cluster.URL("postgres")
	if r := streamseal(t, nil, "migrate", "--database-url", url); r.code != 0 {
		t.Fatalf("migrate: %d %s", r.code, r.stderr)
	}
	pool, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := store.ServiceNameSet(ctx, pool, "billing"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `create schema app;
		create table app.totals (stream_id text primary key, n bigint);
		create function app.fold(e streamseal.handler_event) returns void language sql as $$
		    insert into app.totals values (e.stream_id, 1) on conflict (stream_id) do update set n = totals.n + 1 $$;
		create function app.reset(origin text, tenant text, stream_id text) returns void language sql
		    as $$ delete from app.totals t where t.stream_id = reset.stream_id $$`); err != nil {
		t.Fatal(err)
	}
	var events []store.NewEvent
	for i := 0; i < 8; i++ {
		events = append(events, store.NewEvent{Tenant: "t1", StreamID: fmt.Sprint("acct-", i), StreamVersion: 1,
			EventType: "invoice.paid", Payload: []byte("{}")})
	}
	if _, err := store.EventsAppend(ctx, pool, events); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsStamp(ctx, pool, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ProjectionRegister(ctx, pool, "invoices", []string{"invoice.paid"}, "app.fold", nil, "app.reset", false); err != nil {
		t.Fatal(err)
	}
	if s, err := store.HandlerRun(ctx, pool, "invoices", 100); err != nil || !s.CaughtUp {
		t.Fatalf("run: %+v %v", s, err)
	}
	rows := func() int64 {
		var n int64
		if err := pool.QueryRow(ctx, `select count(*) from app.totals`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The projection caught up within the last minute (the audit's settle): backdate the store's
	// buckets instead of waiting.
	if _, err := pool.Exec(ctx, `update streamseal.stream_digests set updated_at = updated_at - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}

	r := streamseal(t, nil, "audit", "--local", "--database-url", url, "--repair-mode", "report-only", "--max-auto-rebuilds-per-audit", "3")
	if r.code != 0 || !strings.Contains(r.stdout, "coverage audit (report-only): 8 gaps, 0 rebuilt (0 events replayed), 3 would rebuild, 5 deferred") ||
		!strings.Contains(r.stdout, "invoices born_late: origin billing tenant \"t1\" type invoice.paid stream acct-") {
		t.Fatalf("report-only: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if n := rows(); n != 0 {
		t.Fatalf("report-only wrote %d rows of state", n)
	}
	r = streamseal(t, nil, "audit", "--local", "--database-url", url, "--max-auto-rebuilds-per-audit", "3")
	if r.code != 0 || !strings.Contains(r.stdout, "8 gaps, 3 rebuilt (3 events replayed)") {
		t.Fatalf("audit --local: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if n := rows(); n != 3 {
		t.Fatalf("the capped audit rebuilt %d streams, want 3", n)
	}
}
