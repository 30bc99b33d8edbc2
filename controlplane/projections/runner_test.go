package projections_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/projections"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const placed = "order.placed"

func idOf(n int64) uuid.UUID { return uuid.MustParse(fmt.Sprintf("00000000-0000-0000-0000-%012d", n)) }

// copyOf is the origin orders' event seq of stream s<stream>, version v, as a copy.
func copyOf(seq int64, stream, v int64, flags store.Flags) store.EventCopy {
	return store.EventCopy{EventID: idOf(seq), Origin: "orders", OriginSeq: seq, TypeSeq: seq, Tenant: "acme",
		StreamID: fmt.Sprint("s", stream), StreamVersion: v, EventType: placed, Flags: flags, Payload: []byte("{}")}
}

func ingest(t *testing.T, pool *pgxpool.Pool, copies ...store.EventCopy) {
	t.Helper()
	if _, err := store.EventsIngest(context.Background(), pool, copies); err != nil {
		t.Fatal(err)
	}
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// setup creates the application's read model: app.seen(handler, event_id) written by a projection
// app.project and a reactor app.react.
func setup(t *testing.T, service string) *pgxpool.Pool {
	t.Helper()
	pool := dbtest.NewPool(t, service)
	exec(t, pool, `create schema app;
		create table app.seen (handler text, event_id uuid, stream_id text, primary key (handler, event_id));
		create function app.project(e streamseal.handler_event) returns void language sql
		    as $$ insert into app.seen values ('projection', e.event_id, e.stream_id) $$;
		create function app.react(e streamseal.handler_event) returns void language sql
		    as $$ insert into app.seen values ('reactor', e.event_id, e.stream_id) $$;
		create function app.reset(origin text, tenant text, stream_id text) returns void language sql
		    as $$ delete from app.seen s where s.handler = 'projection' and s.stream_id = reset.stream_id $$;`)
	return pool
}

// State-only copies (a backfill, `repair --state-only`) reach projections and never reactors; a
// plain repaired copy (landing after a later one, into its hole) reaches both, and every event
// reaches each handler once: the reactor as it lands, the projection in its stream's version
// order (read after version 2, it is held and the coverage audit rebuilds the stream; issue 19
// item 2). The runner is woken by the store's NOTIFY: it starts before the
// events land and never polls. (Invariant 2: no trigger fires where nothing was missing.)
func TestRunner_StateOnlyCopiesReachProjectionsNeverReactors(t *testing.T) {
	pool := setup(t, "proj-runner")
	ctx := context.Background()
	if _, err := store.ProjectionRegister(ctx, pool, "orders-view", []string{placed}, "app.project", nil, "app.reset", true); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ReactorRegister(ctx, pool, "orders-mailer", []string{placed}, "app.react", nil); err != nil {
		t.Fatal(err)
	}
	r := &projections.Runner{Pool: pool, Logger: testrun.Logger(t)}
	testrun.Go(t, "runner", r.Run)

	ingest(t, pool, copyOf(2, 1, 2, 0))               // live
	ingest(t, pool, copyOf(1, 1, 1, 0))               // the repair of the hole below it
	ingest(t, pool, copyOf(3, 2, 1, store.StateOnly)) // backfilled history
	ingest(t, pool, copyOf(4, 3, 1, 0))               // live, after it
	seen := func(handler string, id int64) bool {
		return count(t, pool, `select count(*) from app.seen where handler = $1 and event_id = $2`, handler, idOf(id)) == 1
	}
	testrun.WaitFor(t, "both handlers reach the last event", func() bool { return seen("projection", 4) && seen("reactor", 4) })
	testrun.WaitFor(t, "the projection catches up", func() bool {
		return count(t, pool, `select count(*) from streamseal.handlers where name = 'orders-view'
			and caught_up_at > (select max(updated_at) from streamseal.stream_digests)`) == 1
	})
	held := count(t, pool, `select count(*) from streamseal.projection_held where projection = 'orders-view'`)
	res, err := store.CoverageAudit(ctx, pool, store.CoverageLimits{MaxReports: 10, MaxRebuilds: 5})
	if err != nil || res.Rebuilt != held || held > 1 {
		t.Fatalf("coverage audit: %+v, %v; want the stream of the held repair (%d) rebuilt", res, err, held)
	}

	for _, id := range []int64{1, 2, 3, 4} {
		if !seen("projection", id) {
			t.Errorf("the projection did not receive event %d", id)
		}
	}
	for _, id := range []int64{1, 2, 4} {
		if !seen("reactor", id) {
			t.Errorf("the reactor did not receive event %d", id)
		}
	}
	if seen("reactor", 3) {
		t.Error("the reactor received the state-only copy: backfill re-fired a trigger")
	}
	if n := count(t, pool, `select count(*) from app.seen`); n != 7 {
		t.Errorf("handlers received %d events, want 7 (each once)", n)
	}
}

// A crash between a projection's write and its cursor cannot be observed: the handler's
// connection is killed mid-batch (after it wrote state for earlier events of the batch, while
// it waits on a later one); nothing of the batch is visible, and after a restart state and cursor
// agree event for event, and the coverage audit finds nothing short.
func TestRunner_KilledMidBatchStateAndCursorAgreeAfterRestart(t *testing.T) {
	pool := setup(t, "proj-kill")
	ctx := context.Background()
	// The handler waits on an advisory lock the test holds at stream s3's event: by then it has
	// written the state of the events before it in the batch.
	exec(t, pool, `create function app.slow(e streamseal.handler_event) returns void language plpgsql as $$
		begin
		    insert into app.seen values ('projection', e.event_id, e.stream_id);
		    if e.stream_id = 's3' then perform pg_advisory_xact_lock(4242); end if;
		end $$`)
	if _, err := store.ProjectionRegister(ctx, pool, "slow-view", []string{placed}, "app.slow", nil, "", true); err != nil {
		t.Fatal(err)
	}
	var copies []store.EventCopy
	for i := int64(1); i <= 12; i++ {
		copies = append(copies, copyOf(i, 1+(i-1)/3, 1+(i-1)%3, 0)) // streams s1..s4, three events each
	}
	ingest(t, pool, copies...)

	lock, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if _, err := lock.Exec(ctx, `select pg_advisory_lock(4242)`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := store.HandlerRun(ctx, pool, "slow-view", 500); done <- err }()
	var pid int32
	testrun.WaitFor(t, "the handler waits on the lock mid-batch", func() bool {
		err := pool.QueryRow(ctx, `select pid from pg_stat_activity
			where wait_event_type = 'Lock' and wait_event = 'advisory' and query like '%run_handler%'`).Scan(&pid)
		return err == nil
	})
	exec(t, pool, `select pg_terminate_backend($1)`, pid)
	if err := testrun.Receive(t, "the killed run returns", done); err == nil {
		t.Fatal("the killed run returned no error")
	}
	if _, err := lock.Exec(ctx, `select pg_advisory_unlock(4242)`); err != nil {
		t.Fatal(err)
	}
	if n, c := count(t, pool, `select count(*) from app.seen`),
		count(t, pool, `select coalesce(sum(n), 0) from streamseal.projection_cursors`); n != 0 || c != 0 {
		t.Fatalf("after the kill: %d state rows, cursors count %d: want 0 and 0 (the batch was one transaction)", n, c)
	}

	// Restart: a new runner picks up from the stored token.
	r := &projections.Runner{Pool: pool, Logger: testrun.Logger(t)}
	for busy := true; busy; {
		busy, _ = r.Pass(ctx)
	}
	if n := count(t, pool, `select count(*) from app.seen`); n != 12 {
		t.Fatalf("after the restart the projection holds %d events, want 12", n)
	}
	if bad := count(t, pool, `select count(*) from (select stream_id, count(*) as n from app.seen group by stream_id) s
		full join streamseal.projection_cursors c on c.stream_id = s.stream_id
		where s.n is distinct from c.n`); bad != 0 {
		t.Fatalf("%d streams where the state and the cursor disagree", bad)
	}
	res, err := store.CoverageAudit(ctx, pool, store.CoverageLimits{MaxReports: 10, MaxRebuilds: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Gaps != 0 {
		t.Fatalf("coverage audit after the restart: %+v, want no gap", res)
	}
}

// A runner started before any handler exists listens only for registrations; a projection
// registered while it runs is run at once, and the events that land after it reach it (woken by
// NOTIFY: the runner's idle failsafe is ten minutes, the test's thirty seconds).
func TestRunner_AHandlerRegisteredWhileRunningIsRun(t *testing.T) {
	pool := setup(t, "proj-late-register")
	ctx := context.Background()
	r := &projections.Runner{Pool: pool, Logger: testrun.Logger(t)}
	testrun.Go(t, "runner", r.Run)
	ingest(t, pool, copyOf(1, 1, 1, 0))
	if _, err := store.ProjectionRegister(ctx, pool, "orders-view", []string{placed}, "app.project", nil, "", true); err != nil {
		t.Fatal(err)
	}
	testrun.WaitFor(t, "the history before the registration is folded", func() bool {
		return count(t, pool, `select count(*) from app.seen where event_id = $1`, idOf(1)) == 1
	})
	ingest(t, pool, copyOf(2, 1, 2, 0))
	testrun.WaitFor(t, "an event landing after it is applied", func() bool {
		return count(t, pool, `select count(*) from app.seen where event_id = $1`, idOf(2)) == 1
	})
}

// Invariant 13 (what cannot be processed is named): a handler whose run fails as a whole (here a
// damaged token, refused by the feed) is recorded with the reason, shown by status, and the
// other handlers go on.
func TestRunner_AHandlerThatCannotRunIsNamedAndOthersGoOn(t *testing.T) {
	pool := setup(t, "proj-broken")
	ctx := context.Background()
	for _, name := range []string{"a-view", "b-view"} {
		if _, err := store.ProjectionRegister(ctx, pool, name, []string{placed}, "app.project", nil, "", true); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, pool, `update streamseal.handlers set token = 'AAAA' where name = 'a-view'`)
	exec(t, pool, `create function app.project_b(e streamseal.handler_event) returns void language sql
		as $$ insert into app.seen values ('b', e.event_id, e.stream_id) $$`)
	if _, err := store.ProjectionRegister(ctx, pool, "b-view", []string{placed}, "app.project_b", nil, "", true); err != nil {
		t.Fatal(err)
	}
	ingest(t, pool, copyOf(1, 1, 1, 0))
	r := &projections.Runner{Pool: pool, Logger: testrun.Logger(t)}
	r.Pass(ctx)
	if n := count(t, pool, `select count(*) from app.seen where handler = 'b'`); n != 1 {
		t.Fatalf("the healthy handler applied %d events, want 1", n)
	}
	states, err := store.HandlerStates(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states[0].Name != "a-view" || !strings.Contains(states[0].RunError, "resume token is malformed") || states[1].RunError != "" {
		t.Fatalf("handler states = %+v: want a-view's refused token named, b-view clean", states)
	}
}
