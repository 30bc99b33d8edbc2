package stamper_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/stamper"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// failsafe bounds every wait on a witness; it is never what a test asserts.
const failsafe = 30 * time.Second

type testBundle struct {
	pool *pgxpool.Pool
}

func setup(t *testing.T, service string) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool, err := store.Open(ctx, dbtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := store.ServiceNameSet(ctx, pool, service); err != nil {
		t.Fatal(err)
	}
	return &testBundle{pool: pool}
}

func event(stream string, version int64) store.NewEvent {
	return store.NewEvent{EventID: uuid.New(), Tenant: "t1", StreamID: stream, StreamVersion: version,
		EventType: "order.placed", Payload: []byte(`{"v":` + strconv.FormatInt(version, 10) + `}`)}
}

func appendEvents(t *testing.T, db store.Querier, events ...store.NewEvent) {
	t.Helper()
	if _, err := store.EventsAppend(context.Background(), db, events); err != nil {
		t.Fatal(err)
	}
}

func originSeq(t *testing.T, db store.Querier, id uuid.UUID) int64 {
	t.Helper()
	var seq *int64
	if err := db.QueryRow(context.Background(), `
		select n.origin_seq from streamseal.events e
		left join streamseal.numbered_events n on n.event_id = e.event_id
		where e.event_id = $1`, id).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	if seq == nil {
		t.Fatalf("event %s is unstamped", id)
	}
	return *seq
}

// requireDenseLane checks that the own lane is numbered 1..n exactly once each and type_seq is
// 1..k per (tenant, event_type): no number skipped, none reused.
func requireDenseLane(t *testing.T, db store.Querier, n int) {
	t.Helper()
	rows, err := db.Query(context.Background(), `
		select n.origin_seq from streamseal.events e
		left join streamseal.numbered_events n on n.event_id = e.event_id
		where e.origin = streamseal.service_name() order by n.origin_seq`)
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[*int64])
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != n {
		t.Fatalf("own lane holds %d events, want %d", len(seqs), n)
	}
	for i, s := range seqs {
		if s == nil || *s != int64(i+1) {
			t.Fatalf("origin_seq #%d is %v, want %d (lane must be dense 1..%d)", i, s, i+1, n)
		}
	}
	var badTypes int
	if err := db.QueryRow(context.Background(), `
		select count(*) from (
			select e.tenant, e.event_type from streamseal.events e
			left join streamseal.numbered_events n on n.event_id = e.event_id
			where e.origin = streamseal.service_name()
			group by e.tenant, e.event_type
			having min(n.type_seq) <> 1 or max(n.type_seq) <> count(*) or count(distinct n.type_seq) <> count(*)
		) broken`).Scan(&badTypes); err != nil {
		t.Fatal(err)
	}
	if badTypes != 0 {
		t.Fatalf("%d (tenant, event_type) lanes have a type_seq that is not dense 1..k", badTypes)
	}
}

// Invariant 7 (late commits): the transaction that inserted first but commits last receives the
// higher origin_seq, because the stamper numbers only what has committed.
func TestStamp_LateCommitGetsTheHigherSequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "late-commit")

	first, late := event("s-early", 1), event("s-late", 1)
	insertedFirst, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer insertedFirst.Rollback(ctx)
	appendEvents(t, insertedFirst, first)

	committedFirst, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	appendEvents(t, committedFirst, late)
	if err := committedFirst.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// Witness: the stamper sees exactly the committed event and numbers it alone.
	r, err := store.EventsStamp(ctx, b.pool, 100)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stamped != 1 || r.LastOriginSeq != 1 {
		t.Fatalf("first stamp = %+v, want the one committed event numbered 1", r)
	}

	if err := insertedFirst.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err = store.EventsStamp(ctx, b.pool, 100); err != nil || r.Stamped != 1 {
		t.Fatalf("second stamp = %+v, %v; want the late commit numbered", r, err)
	}

	// The premise: the early transaction really inserted first.
	var firstLocal, lateLocal int64
	if err := b.pool.QueryRow(ctx, "select (select local_id from streamseal.events where event_id = $1), (select local_id from streamseal.events where event_id = $2)",
		first.EventID, late.EventID).Scan(&firstLocal, &lateLocal); err != nil {
		t.Fatal(err)
	}
	if firstLocal >= lateLocal {
		t.Fatalf("premise broken: early insert has local_id %d, late %d", firstLocal, lateLocal)
	}
	if got, want := originSeq(t, b.pool, first.EventID), originSeq(t, b.pool, late.EventID); got <= want {
		t.Fatalf("inserted-first, committed-last event got origin_seq %d, not above the earlier commit's %d", got, want)
	}
	requireDenseLane(t, b.pool, 2)
}

// Invariant 7 (no double stamp): a stamper that starts while another holds the lock waits for it,
// then numbers only what is left, above the first one's numbers. No sequence skipped or reused.
func TestStamp_ConcurrentStampersNeverDoubleStamp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "two-stampers")
	for i := range 100 {
		appendEvents(t, b.pool, event(fmt.Sprintf("s%d", i%7), int64(i)+1))
	}

	holder, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if r, err := store.EventsStamp(ctx, holder, 60); err != nil || r.Stamped != 60 {
		t.Fatalf("holder stamp = %+v, %v; want 60", r, err)
	}

	second, err := b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	var secondPID uint32
	if err := second.QueryRow(ctx, "select pg_backend_pid()").Scan(&secondPID); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		r   store.StampResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := store.EventsStamp(ctx, second, 1000)
		done <- outcome{r, err}
	}()

	// Witness: the second stamper is blocked behind the first (the advisory lock), not finished.
	waitFor(t, "second stamper blocked behind the first", func() bool {
		var waiting bool
		err := b.pool.QueryRow(ctx, `select exists (select 1 from pg_stat_activity
			where pid = $1 and wait_event_type = 'Lock')`, secondPID).Scan(&waiting)
		return err == nil && waiting
	})
	select {
	case o := <-done:
		t.Fatalf("second stamper returned %+v, %v while the first held the lock", o.r, o.err)
	default:
	}
	// Committed while the second waits: it must see these too, above the holder's numbers.
	for i := range 10 {
		appendEvents(t, b.pool, event("late", int64(i)+1))
	}
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("second stamper: %v", o.err)
		}
		if o.r.Stamped != 50 || o.r.LastOriginSeq != 110 {
			t.Fatalf("second stamper = %+v, want 50 stamped up to 110", o.r)
		}
	case <-time.After(failsafe):
		t.Fatal("second stamper never returned after the first committed")
	}
	requireDenseLane(t, b.pool, 110)
}

// The loop is woken by the insert's NOTIFY: with the failsafe poll set to an hour, an append
// is still stamped, and the stamp's own NOTIFY (streamseal_stamped) is the witness.
func TestLoop_StampsWhenAnAppendNotifies(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	b := setup(t, "loop-notify")

	listener, err := b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, "listen streamseal_stamped"); err != nil {
		t.Fatal(err)
	}

	loop := &stamper.Loop{Pool: b.pool, PollInterval: time.Hour}
	loopDone := make(chan error, 1)
	go func() { loopDone <- loop.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-loopDone; err != nil {
			t.Errorf("loop returned %v on cancellation, want nil", err)
		}
	}()

	for want := int64(1); want <= 3; want++ {
		e := event("s", want)
		appendEvents(t, b.pool, e)
		waitCtx, stop := context.WithTimeout(ctx, failsafe)
		n, err := listener.Conn().WaitForNotification(waitCtx)
		stop()
		if err != nil {
			t.Fatalf("no streamseal_stamped notification for append %d: %v", want, err)
		}
		if n.Payload != strconv.FormatInt(want, 10) {
			t.Fatalf("stamped notification says %q, want %d", n.Payload, want)
		}
		if got := originSeq(t, b.pool, e.EventID); got != want {
			t.Fatalf("append %d got origin_seq %d", want, got)
		}
	}
	requireDenseLane(t, b.pool, 3)
}

func waitFor(t *testing.T, what string, witness func() bool) {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for !witness() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Invariant 7, one numbering at a time: while this process's relay leads and stamps as it
// publishes, the standalone stamper stands aside (Yield) yet takes its wake-ups, and once the
// relay stops it numbers what is waiting. Witnesses: the loop asks Yield at every wake-up, so
// by its third question it has finished whatever it did after the second (when two appends
// were waiting), and the stamp's own NOTIFY once it no longer yields.
func TestLoop_StandsAsideWhileTheRelayStamps(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	b := setup(t, "loop-yield")

	listener, err := b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, "listen streamseal_stamped"); err != nil {
		t.Fatal(err)
	}

	asked := make(chan struct{})
	var yielding atomic.Bool
	yielding.Store(true)
	loop := &stamper.Loop{Pool: b.pool, PollInterval: time.Hour, Coalesce: -1, Yield: func() bool {
		y := yielding.Load()
		if y {
			asked <- struct{}{}
		}
		return y
	}}
	loopDone := make(chan error, 1)
	go func() { loopDone <- loop.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-loopDone; err != nil {
			t.Errorf("loop returned %v on cancellation, want nil", err)
		}
	}()
	receive := func(what string) {
		t.Helper()
		select {
		case <-asked:
		case <-time.After(failsafe):
			t.Fatalf("gave up waiting for %s", what)
		}
	}

	receive("the loop's first question, at start")
	first, second := event("s", 1), event("s", 2)
	appendEvents(t, b.pool, first)
	receive("the question after the first append's wake-up")
	appendEvents(t, b.pool, second)
	receive("the question after the second append's wake-up")
	var unstamped int
	if err := b.pool.QueryRow(ctx, "select count(*) from streamseal.unstamped").Scan(&unstamped); err != nil {
		t.Fatal(err)
	}
	if unstamped != 2 {
		t.Fatalf("%d of 2 appends unstamped while the loop yields: it stamped beside the relay", unstamped)
	}

	yielding.Store(false)
	appendEvents(t, b.pool, event("s", 3))
	waitCtx, stop := context.WithTimeout(ctx, failsafe)
	n, err := listener.Conn().WaitForNotification(waitCtx)
	stop()
	if err != nil {
		t.Fatalf("no streamseal_stamped notification once the loop stopped yielding: %v", err)
	}
	if n.Payload != "3" {
		t.Fatalf("stamped notification says %q, want 3 (everything waiting numbered)", n.Payload)
	}
	requireDenseLane(t, b.pool, 3)
}

// Invariants 4 and 7 (issue 16: stamp() takes an event's keys from its claimed queue row and
// never reads events): a stamper whose claim waits on the queue row of an event an application is
// rewriting (its stream, type and flags, in a transaction still open) numbers and folds the event
// under its new keys once that transaction commits. The claim's DELETE ... RETURNING re-reads the
// row the UPDATE's trigger changed; a claim that returned the version it first saw would number
// the event under its old stream and type and fold the wrong buckets.
func TestStamp_ClaimWaitingOnARewriteNumbersTheNewKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "claim-rewrite")
	e := event("before", 1)
	appendEvents(t, b.pool, e)

	rewrite, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rewrite.Rollback(ctx)
	if _, err := rewrite.Exec(ctx, `update streamseal.events set stream_id = 'after', event_type = 'order.amended', flags = 4
		where event_id = $1`, e.EventID); err != nil {
		t.Fatal(err)
	}

	stamping, err := b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stamping.Release()
	var stampingPID uint32
	if err := stamping.QueryRow(ctx, "select pg_backend_pid()").Scan(&stampingPID); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		r   store.StampResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := store.EventsStamp(ctx, stamping, 100)
		done <- outcome{r, err}
	}()
	// Witness: the claim waits on the queue row the rewrite holds.
	waitFor(t, "stamper's claim blocked behind the rewrite", func() bool {
		var waiting bool
		err := b.pool.QueryRow(ctx, `select exists (select 1 from pg_stat_activity
			where pid = $1 and wait_event_type = 'Lock')`, stampingPID).Scan(&waiting)
		return err == nil && waiting
	})
	if err := rewrite.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	select {
	case o := <-done:
		if o.err != nil || o.r.Stamped != 1 {
			t.Fatalf("stamp = %+v, %v; want the rewritten event numbered", o.r, o.err)
		}
	case <-time.After(failsafe):
		t.Fatal("stamper never returned after the rewrite committed")
	}
	var stream, eventType string
	var flags int
	if err := b.pool.QueryRow(ctx, `select stream_id, event_type, flags from streamseal.own_numbers where event_id = $1`,
		e.EventID).Scan(&stream, &eventType, &flags); err != nil {
		t.Fatal(err)
	}
	if stream != "after" || eventType != "order.amended" || flags != 4 {
		t.Fatalf("numbered under (%s, %s, %d), want the rewrite's (after, order.amended, 4)", stream, eventType, flags)
	}
	var drift int
	if err := b.pool.QueryRow(ctx, `select count(*) from streamseal.verify_stream_digests(heal => false)`).Scan(&drift); err != nil {
		t.Fatal(err)
	}
	if drift != 0 {
		t.Fatalf("%d digest buckets differ from a recompute after the stamp", drift)
	}
	requireDenseLane(t, b.pool, 1)
}
