package feed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/feed"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// goProjection is a Go projection whose state is a table of the events it applied: a second apply
// of one event violates the primary key and stops the subscriber (the test fails).
type goProjection struct {
	table  string
	mu     sync.Mutex
	resets []string
	order  []string // stream/version as the handler applied them
}

func newGoProjection(t *testing.T, pool *pgxpool.Pool, table string) *goProjection {
	t.Helper()
	if _, err := pool.Exec(context.Background(), fmt.Sprintf(
		`create table public.%s (stream_id text not null, stream_version bigint not null, event_id uuid primary key)`, table)); err != nil {
		t.Fatal(err)
	}
	return &goProjection{table: table}
}

func (p *goProjection) fold(ctx context.Context, tx pgx.Tx, b feed.Batch) error {
	for _, e := range b.Events {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`insert into public.%s values ($1, $2, $3)`, p.table), e.StreamID, e.StreamVersion, e.EventID); err != nil {
			return err
		}
		p.mu.Lock()
		p.order = append(p.order, fmt.Sprint(e.StreamID, "/", e.StreamVersion))
		p.mu.Unlock()
	}
	return nil
}

func (p *goProjection) reset(ctx context.Context, tx pgx.Tx, s feed.Stream) error {
	if _, err := tx.Exec(ctx, fmt.Sprintf(`delete from public.%s where stream_id = $1`, p.table), s.StreamID); err != nil {
		return err
	}
	p.mu.Lock()
	p.resets = append(p.resets, s.StreamID)
	p.mu.Unlock()
	return nil
}

func (p *goProjection) applied() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.order)
}

func scalar[T any](t *testing.T, pool *pgxpool.Pool, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// caughtUp: the named handler read the feed to its end after applying applied events.
func caughtUp(t *testing.T, pool *pgxpool.Pool, name string, applied int64) bool {
	return scalar[bool](t, pool, `select coalesce((select caught_up_at is not null and applied = $2 and caught_up_at > coalesce(
		(select max(updated_at) from streamseal.stream_digests), '-infinity') from streamseal.handlers where name = $1), false)`, name, applied)
}

func audit(t *testing.T, pool *pgxpool.Pool) store.CoverageAuditResult {
	t.Helper()
	res, err := store.CoverageAudit(context.Background(), pool, store.CoverageLimits{MaxReports: 100, MaxRebuilds: 5})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Coverage of Go projections (issue 19 item 1; invariant 1 for read models: no silent loss, and
// invariant 15: a reader never skips). A named Go projection keeps per-stream cursors written in
// its batches' transactions, so the coverage audit judges it as it judges a SQL one: covered when
// it applied everything; a stream it skipped (state and cursor lost) is found and rebuilt by the
// subscriber (Reset, then a replay of that stream alone); a projection born after its history
// is found born_late; and a late lower version of a stream is held from the Go handler and the
// stream rebuilt at once, in stream_version order (issue 19 item 2).
func TestFeed_ANamedGoProjectionIsCoveredAndRebuiltByTheAudit(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "billing")
	ingest(t, pool, 1, 2, 3) // streams s1, s2, s3

	p := newGoProjection(t, pool, "go_state")
	sub := feed.NewSubscriber(pool, feed.Options{Kind: feed.Projection, Name: "go-p", Types: []string{placed}, Reset: p.reset})
	testrun.Go(t, "named projection", func(ctx context.Context) error { return sub.Run(ctx, p.fold) })
	testrun.WaitFor(t, "the projection applies the history and catches up", func() bool { return caughtUp(t, pool, "go-p", 3) })
	if res := audit(t, pool); res.Gaps != 0 {
		t.Fatalf("audit of a projection that applied everything: %+v; want no gap", res)
	}

	// s2 skipped: its state and cursor lost alike.
	if _, err := pool.Exec(context.Background(), `delete from public.go_state where stream_id = 's2';
		delete from streamseal.projection_cursors where projection = 'go-p' and stream_id = 's2'`); err != nil {
		t.Fatal(err)
	}
	if res := audit(t, pool); res.Gaps != 1 || res.Requested != 1 || res.Rebuilt != 0 {
		t.Fatalf("audit after s2 was skipped: %+v; want one gap, one rebuild requested of the Go side", res)
	}
	testrun.WaitFor(t, "the subscriber rebuilds s2", func() bool {
		return scalar[int64](t, pool, `select count(*) from streamseal.projection_rebuild_requests`) == 0 &&
			scalar[int64](t, pool, `select count(*) from public.go_state where stream_id = 's2'`) == 1
	})
	p.mu.Lock()
	resets := slices.Clone(p.resets)
	p.mu.Unlock()
	if !slices.Equal(resets, []string{"s2"}) {
		t.Errorf("streams reset: %v; want only s2", resets)
	}
	if res := audit(t, pool); res.Gaps != 0 {
		t.Errorf("audit after the rebuild: %+v; want covered", res)
	}

	// Born late: a second projection starts at the feed's end, over history it never folds.
	late := newGoProjection(t, pool, "go_late")
	lateSub := feed.NewSubscriber(pool, feed.Options{Kind: feed.Projection, Name: "go-late", Types: []string{placed}, StartAtEnd: true})
	testrun.Go(t, "born-late projection", func(ctx context.Context) error { return lateSub.Run(ctx, late.fold) })
	testrun.WaitFor(t, "the late projection catches up", func() bool { return caughtUp(t, pool, "go-late", 0) })
	if res := audit(t, pool); res.Gaps != 3 || res.Requested != 0 {
		t.Errorf("audit with a born-late projection without Reset: %+v; want its 3 streams found, none rebuilt", res)
	}
	if n := scalar[int64](t, pool, `select count(*) from streamseal.coverage_findings
		where projection = 'go-late' and kind = 'born_late' and action = 'no_reset_hook'`); n != 3 {
		t.Errorf("born_late findings of go-late without a reset: %d; want 3", n)
	}

	// Out of order: stream o's version 2 lands, then its version 1 (a late repair).
	v2, v1 := copyOf(4), copyOf(5)
	v2.StreamID, v2.StreamVersion = "o", 2
	v1.StreamID, v1.StreamVersion = "o", 1
	for _, c := range []store.EventCopy{v2, v1} {
		if _, err := store.EventsIngest(context.Background(), pool, []store.EventCopy{c}); err != nil {
			t.Fatal(err)
		}
	}
	// The batch holding o/1 asks for o's rebuild at once; the subscriber performs it before reading on.
	testrun.WaitFor(t, "the subscriber rebuilds o in version order", func() bool {
		return scalar[int64](t, pool, `select count(*) from public.go_state where stream_id = 'o'`) == 2 &&
			scalar[int64](t, pool, `select count(*) from streamseal.projection_rebuild_requests`) == 0
	})
	var o []string
	for _, a := range p.applied() {
		if a == "o/1" || a == "o/2" {
			o = append(o, a)
		}
	}
	// o/2 as it landed, then the rebuild after Reset: o/1, o/2; never o/1 right after o/2.
	if !slices.Equal(o, []string{"o/2", "o/1", "o/2"}) && !slices.Equal(o, []string{"o/1", "o/2"}) {
		t.Errorf("the Go handler was handed o as %v; want o/2, then the rebuild o/1, o/2 (or, read together, o/1, o/2 in order)", o)
	}
	if n := scalar[int64](t, pool, `select count(*) from streamseal.projection_held where projection = 'go-p'`); n != 0 {
		t.Errorf("events still held from go-p after the rebuild: %d", n)
	}
	testrun.WaitFor(t, "the late projection reads o too", func() bool { return caughtUp(t, pool, "go-late", 1) })
	if res := audit(t, pool); res.Requested != 0 {
		t.Errorf("audit after the rebuild: %+v; want nothing requested", res)
	}
	if n := scalar[int64](t, pool, `select count(*) from streamseal.coverage_findings where projection = 'go-p'`); n != 0 {
		t.Errorf("findings of go-p after the rebuild: %d; want none", n)
	}
	// go-late (no Reset) holds o/1 too: it is reported, not rebuilt.
	if n := scalar[int64](t, pool, `select count(*) from streamseal.coverage_findings
		where projection = 'go-late' and stream_id = 'o' and kind = 'out_of_order' and action = 'no_reset_hook'`); n != 1 {
		t.Errorf("out_of_order findings of go-late on o: %d; want 1", n)
	}
}

// A named Go projection's state, cursors and token commit together (issue 19: "a crash never
// leaves state and cursor apart"): a handler that fails after writing part of a batch rolls the
// batch back whole, cursors and token with it; the subscriber restarted under the same name
// resumes from the stored token, applies every event once (a second apply would violate the
// state's primary key) and the coverage audit finds it covered.
func TestFeed_ANamedProjectionFailingMidBatchKeepsStateAndCursorsTogether(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "billing")
	ctx := context.Background()
	ingest(t, pool, 1, 2, 3, 4)
	p := newGoProjection(t, pool, "go_crash")
	opts := feed.Options{Kind: feed.Projection, Name: "go-crash", Types: []string{placed}, Reset: p.reset}
	crash := fmt.Errorf("the process dies mid-batch")
	err := feed.NewSubscriber(pool, opts).Run(ctx, func(ctx context.Context, tx pgx.Tx, b feed.Batch) error {
		if err := p.fold(ctx, tx, feed.Batch{Events: b.Events[:len(b.Events)/2]}); err != nil {
			return err
		}
		return crash
	})
	if !errors.Is(err, crash) {
		t.Fatalf("the failing run returned %v; want the handler's error", err)
	}
	if n := scalar[int64](t, pool, `select (select count(*) from public.go_crash) + (select count(*) from streamseal.projection_cursors)`); n != 0 {
		t.Fatalf("after the failed batch: %d rows of state and cursors; want none (the batch rolled back whole)", n)
	}
	testrun.Go(t, "restarted projection", func(ctx context.Context) error { return feed.NewSubscriber(pool, opts).Run(ctx, p.fold) })
	testrun.WaitFor(t, "the restarted projection catches up", func() bool { return caughtUp(t, pool, "go-crash", 4) })
	if n := scalar[int64](t, pool, `select count(*) from public.go_crash`); n != 4 {
		t.Errorf("state rows after the restart: %d; want 4", n)
	}
	if res := audit(t, pool); res.Gaps != 0 {
		t.Errorf("audit after the restart: %+v; want covered", res)
	}
}

// Invariant 13 (bad input refused with a reason, nothing changes): a named subscriber must be a
// Projection or a Reactor, takes no Resume (the store keeps its token), a reactor no Reset; the
// store refuses a name registered with another scope. Each is an error from Run, and nothing is
// registered by a refused one.
func TestFeed_NamedSubscriberRefusals(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "billing")
	ctx := context.Background()
	noop := func(context.Context, pgx.Tx, feed.Batch) error { return nil }
	reset := func(context.Context, pgx.Tx, feed.Stream) error { return nil }
	for _, tc := range []struct {
		name string
		opts feed.Options
		want string
	}{
		{"KindAll", feed.Options{Name: "x-all", Types: []string{placed}}, "a named subscriber is a Projection or a Reactor"},
		{"Resume", feed.Options{Kind: feed.Projection, Name: "x-resume", Types: []string{placed}, Resume: "abc"}, "Resume is set"},
		{"ReactorReset", feed.Options{Kind: feed.Reactor, Name: "x-reset", Types: []string{placed}, Reset: reset}, "Reset is set on a reactor"},
		{"NoTypes", feed.Options{Kind: feed.Projection, Name: "x-types"}, "event_types"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := feed.NewSubscriber(pool, tc.opts).Run(ctx, noop)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v; want an error saying %q", err, tc.want)
			}
		})
	}
	if _, err := store.FeedProjectionRegister(ctx, pool, "x-scope", []string{placed}, nil, false, true); err != nil {
		t.Fatal(err)
	}
	err := feed.NewSubscriber(pool, feed.Options{Kind: feed.Projection, Name: "x-scope", Types: []string{"order.shipped"}}).Run(ctx, noop)
	if !errors.Is(err, store.ErrInvalidInput) || !strings.Contains(err.Error(), "unregister_handler") {
		t.Fatalf("Run over another scope: %v; want ErrInvalidInput naming unregister_handler", err)
	}
	if n := scalar[int64](t, pool, `select count(*) from streamseal.handlers`); n != 1 {
		t.Errorf("handlers registered: %d; want only x-scope", n)
	}
}

// Two processes running one named projection (replicas) apply each event once (invariant 2):
// a batch's token is stored only from the token it was read from, so the batch commits in one
// of them; the other reloads the token and reads on. The state's primary key would refuse a
// second apply (and stop that subscriber, failing the test).
func TestFeed_TwoSubscribersOfOneNameApplyEachEventOnce(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "billing")
	p := newGoProjection(t, pool, "go_twice")
	opts := feed.Options{Kind: feed.Projection, Name: "go-twice", Types: []string{placed}, BatchSize: 7}
	if _, err := store.FeedProjectionRegister(context.Background(), pool, "go-twice", []string{placed}, nil, false, true); err != nil {
		t.Fatal(err)
	}
	testrun.Go(t, "first replica", func(ctx context.Context) error { return feed.NewSubscriber(pool, opts).Run(ctx, p.fold) })
	testrun.Go(t, "second replica", func(ctx context.Context) error { return feed.NewSubscriber(pool, opts).Run(ctx, p.fold) })
	seqs := make([]int64, 100)
	for i := range seqs {
		seqs[i] = int64(i + 1)
	}
	for i := 0; i < len(seqs); i += 10 {
		ingest(t, pool, seqs[i:i+10]...)
	}
	testrun.WaitFor(t, "the replicas apply all 100 events", func() bool { return caughtUp(t, pool, "go-twice", 100) })
	if n := scalar[int64](t, pool, `select count(*) from public.go_twice`); n != 100 {
		t.Errorf("state rows: %d; want 100", n)
	}
	if res := audit(t, pool); res.Gaps != 0 {
		t.Errorf("audit: %+v; want covered", res)
	}
}
