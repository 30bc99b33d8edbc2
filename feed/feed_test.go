package feed_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/feed"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const placed = "order.placed"

// copyOf is orders' event number seq (origin_seq = type_seq = seq, one stream each) as a copy.
func copyOf(seq int64) store.EventCopy {
	return store.EventCopy{EventID: idOf(seq), Origin: "orders", OriginSeq: seq, TypeSeq: seq, Tenant: "acme",
		StreamID: fmt.Sprint("s", seq), StreamVersion: 1, EventType: placed, Payload: []byte("{}")}
}

func idOf(seq int64) uuid.UUID {
	return uuid.MustParse(fmt.Sprintf("00000000-0000-0000-0000-%012d", seq))
}

func ingest(t testing.TB, db store.Querier, seqs ...int64) {
	t.Helper()
	var copies []store.EventCopy
	for _, s := range seqs {
		copies = append(copies, copyOf(s))
	}
	if _, err := store.EventsIngest(context.Background(), db, copies); err != nil {
		t.Fatal(err)
	}
}

// checkpoint verifies orders' checkpoint announcing type_seqs [1, last] of placed on db (the
// lane is born with floor 0 at the first one: everything announced is checked).
func checkpoint(t testing.TB, db *pgxpool.Pool, last int64) {
	t.Helper()
	ctx := context.Background()
	if err := store.SubscriptionsAdd(ctx, db, "orders", []string{placed}, store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `select streamseal.verify_checkpoint('orders', 0, $1::bigint + 1, $2, array['acme'], array[$1::bigint],
		array[1::bigint], array[$1::bigint], array['{}'::int8multirange])`, last, placed); err != nil {
		t.Fatal(err)
	}
}

// collector is a handler that records what it was handed, in order.
type collector struct {
	mu   sync.Mutex
	seen []int64 // origin_seq of each delivered copy of orders
}

func (c *collector) handle(_ context.Context, _ pgx.Tx, b feed.Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range b.Events {
		c.seen = append(c.seen, e.OriginSeq)
	}
	return nil
}

func (c *collector) has(seqs ...int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range seqs {
		found := false
		for _, x := range c.seen {
			found = found || x == s
		}
		if !found {
			return false
		}
	}
	return true
}

// run starts s with c until the test ends.
func run(t *testing.T, s *feed.Subscriber, c *collector) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, c.handle) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("subscriber: %v", err)
		}
	})
}

// readAll reads from token until a batch comes back empty and returns the origin_seqs read.
func readAll(t testing.TB, db store.Querier, token string) ([]int64, string) {
	t.Helper()
	return readScope(t, db, feed.Options{}, token)
}

// readUntilEmpty reads from token until a batch comes back empty, held copies or not: what a
// reader gets while a transaction holds the horizon.
func readUntilEmpty(t testing.TB, db store.Querier, token string) ([]int64, string) {
	t.Helper()
	var out []int64
	for {
		b, err := feed.Read(context.Background(), db, feed.Options{}, token, 100)
		if err != nil {
			t.Fatal(err)
		}
		token = b.Token
		if len(b.Events) == 0 {
			return out, token
		}
		for _, e := range b.Events {
			out = append(out, e.OriginSeq)
		}
	}
}

// readScope is readAll over the scope of opts. An empty batch ends it only when the read held
// nothing back: the horizon is the cluster's, so a transaction of a test running beside this one
// (any database of the throwaway cluster) can hold committed copies for a moment, and "held" is
// the witness that more is coming.
func readScope(t testing.TB, db store.Querier, opts feed.Options, token string) ([]int64, string) {
	t.Helper()
	var out []int64
	for {
		var b feed.Batch
		testrun.WaitFor(t, "a feed read that holds nothing back or returns events", func() bool {
			var err error
			b, err = feed.Read(context.Background(), db, opts, token, 100)
			if err != nil {
				t.Fatal(err)
			}
			return len(b.Events) > 0 || b.Held == 0
		})
		token = b.Token
		if len(b.Events) == 0 {
			return out, token
		}
		for _, e := range b.Events {
			out = append(out, e.OriginSeq)
		}
	}
}

// Invariants 15 and 7: the late lower-key commit. Transaction A lands copy 1 first (the lower
// xid and local_id) and commits last; B lands copy 2 and commits while A is open. A live reader
// gets both, 1 before 2 (commit order held behind A, never skipped); a token taken while A was
// open resumes to deliver both.
func TestFeed_LateLowerKeyCommitReachesALiveReaderAndAResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t, "billing")
	s := feed.NewSubscriber(pool, feed.Options{})
	var c collector
	run(t, s, &c)

	txA, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback(ctx)
	ingest(t, txA, 1)
	ingest(t, pool, 2)

	// While A is open, 2 waits behind it: a reader past 2 would later find 1 below it.
	held, open := readUntilEmpty(t, pool, "")
	if len(held) != 0 {
		t.Fatalf("with A open a reader got %v: want nothing (2 committed above A's open xid)", held)
	}
	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Delivered counts a batch once its token is the subscriber's: Token() below covers both.
	testrun.WaitFor(t, "the live reader gets and acknowledges both copies", func() bool { return c.has(1, 2) && s.Delivered() >= 2 })
	c.mu.Lock()
	got := append([]int64(nil), c.seen...)
	c.mu.Unlock()
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("the live reader got %v, want [1 2] (commit order: A's xid is the lower)", got)
	}
	resumed, _ := readAll(t, pool, open)
	if len(resumed) != 2 || resumed[0] != 1 || resumed[1] != 2 {
		t.Fatalf("resuming the token taken while A was open read %v, want [1 2]", resumed)
	}
	if again, _ := readAll(t, pool, s.Token()); len(again) != 0 {
		t.Fatalf("resuming the live reader's token read %v again, want nothing", again)
	}
}

// Invariants 15 and 7 on the own lane: two appends, the lower local_id committing last; the
// stamper numbers in commit order and the reader gets both.
func TestFeed_OwnLateCommitIsNumberedAndRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t, "orders")
	own := func(v int64) store.NewEvent {
		return store.NewEvent{EventID: idOf(100 + v), Tenant: "acme", StreamID: fmt.Sprint("s", v), StreamVersion: 1,
			EventType: placed, Payload: []byte("{}")}
	}
	txA, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback(ctx)
	if _, err := store.EventsAppend(ctx, txA, []store.NewEvent{own(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsAppend(ctx, pool, []store.NewEvent{own(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsStamp(ctx, pool, 100); err != nil {
		t.Fatal(err)
	}
	first, token := readAll(t, pool, "")
	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsStamp(ctx, pool, 100); err != nil {
		t.Fatal(err)
	}
	second, _ := readAll(t, pool, token)
	if len(first) != 1 || first[0] != 1 || len(second) != 1 || second[0] != 2 {
		t.Fatalf("read %v then %v, want [1] then [2] (the late commit numbered 2 and read after the token)", first, second)
	}
}

// Invariants 15 and 6, the reference's bug: copy 2 is lost, 1 and 3 arrive and a checkpoint
// holds the lane's floor at 1. The live reader passes 3; the token it holds then names
// boundary 2 for orders (never past the hole). The repair lands below the reader's position
// and reaches it; the token taken while the hole was open resumes to deliver the repair, on
// this store and on shipping's (another service's copy of orders: portable), with no skip.
func TestFeed_RepairBelowALiveReaderAndAHoleTokenResumeEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	billing := dbtest.NewPool(t, "billing")
	shipping := dbtest.NewPool(t, "shipping")
	ingest(t, billing, 1, 3)
	checkpoint(t, billing, 3)
	ingest(t, shipping, 1, 2, 3)
	checkpoint(t, shipping, 3)

	s := feed.NewSubscriber(billing, feed.Options{Types: []string{placed}})
	var c collector
	run(t, s, &c)
	// Delivered counts a batch once its token is the subscriber's.
	testrun.WaitFor(t, "the live reader acknowledged 1 and 3", func() bool { return s.Delivered() >= 2 })
	if !c.has(1, 3) {
		t.Fatalf("the reader acknowledged %v, want 1 and 3", c.seen)
	}
	holeToken := s.Token()
	b, err := store.FeedTokenBoundaries(ctx, billing, holeToken)
	if err != nil {
		t.Fatal(err)
	}
	if b[0].Origin != "orders" || b[0].Boundary != 2 {
		t.Fatalf("with the hole at 2 open the token names %+v, want orders at boundary 2", b)
	}

	ingest(t, billing, 2) // the repair
	testrun.WaitFor(t, "the live reader gets the repair below its position", func() bool { return c.has(2) })

	scope := feed.Options{Types: []string{placed}}
	here, _ := readScope(t, billing, scope, holeToken)
	if !contains(here, 2) {
		t.Fatalf("the hole token resumed on billing read %v, want the repair 2", here)
	}
	there, _ := readScope(t, shipping, scope, holeToken)
	if !contains(there, 2) || !contains(there, 3) || contains(there, 1) {
		t.Fatalf("the hole token resumed on shipping read %v, want 2 and 3 (inclusive from the boundary) and not 1", there)
	}
}

// Invariant 15, portability both ways: billing's token resumes on shipping and shipping's on
// billing, with no skip (duplicates allowed and counted).
func TestFeed_TokensMoveBetweenStoresCopyingTheSameOrigin(t *testing.T) {
	t.Parallel()
	billing := dbtest.NewPool(t, "billing")
	shipping := dbtest.NewPool(t, "shipping")
	ingest(t, billing, 1, 2, 3, 4)
	checkpoint(t, billing, 4)
	ingest(t, shipping, 3, 1, 2) // another arrival order; 4 not yet
	checkpoint(t, shipping, 4)   // shipping's floor stops at 3
	for _, dir := range []struct {
		name     string
		from, to *pgxpool.Pool
		want     []int64
	}{{"billing to shipping", billing, shipping, []int64{4}}, {"shipping to billing", shipping, billing, []int64{4}}} {
		read, token := readAll(t, dir.from, "")
		after, _ := readAll(t, dir.to, token)
		all := append(read, after...)
		for _, seq := range []int64{1, 2, 3} {
			if !contains(all, seq) {
				t.Fatalf("%s: read %v then %v: %d skipped", dir.name, read, after, seq)
			}
		}
		if dir.name == "shipping to billing" && !contains(after, 4) {
			t.Fatalf("%s: read %v then %v: 4 (shipping never held it) skipped", dir.name, read, after)
		}
		t.Logf("%s: %d read, %d after the move (%d duplicates)", dir.name, len(read), len(after), len(all)-len(uniq(all)))
	}
}

// Invariant 15, admission through Go: each refusal is its typed error.
func TestFeed_RefusalsAreTypedErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	billing := dbtest.NewPool(t, "billing")
	other := dbtest.NewPool(t, "audit")
	ingest(t, billing, 1)
	checkpoint(t, billing, 1)
	_, token := readAll(t, billing, "")

	if _, err := feed.Read(ctx, other, feed.Options{}, token, 10); !errors.Is(err, feed.ErrGone) {
		t.Fatalf("a token naming orders on a store without orders: %v, want ErrGone", err)
	}
	if _, err := feed.Read(ctx, billing, feed.Options{Types: []string{"other"}}, token, 10); !errors.Is(err, feed.ErrBadRequest) {
		t.Fatalf("a token read with another scope: %v, want ErrBadRequest", err)
	}
	tampered := []byte(token)
	tampered[len(tampered)/2] ^= 1
	if _, err := feed.Read(ctx, billing, feed.Options{}, string(tampered), 10); !errors.Is(err, feed.ErrBadRequest) {
		t.Fatalf("a tampered token: %v, want ErrBadRequest", err)
	}
	shipping := dbtest.NewPool(t, "shipping")
	ingest(t, shipping, 1)
	checkpoint(t, shipping, 1)
	if _, err := shipping.Exec(ctx, `insert into streamseal.known_origins (origin, control_subject, interval_seconds, generation,
		last_checkpoint_at, last_window_to) values ('orders', 'streamseal.ctl.orders', 60, 1, now(), 2)`); err != nil {
		t.Fatal(err)
	}
	if _, err := feed.Read(ctx, shipping, feed.Options{}, token, 10); !errors.Is(err, feed.ErrConflict) {
		t.Fatalf("a token at orders' generation 0 on a store at generation 1: %v, want ErrConflict", err)
	}
}

func contains(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func uniq(xs []int64) map[int64]bool {
	m := map[int64]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// Invariant 15 at the door: whatever string arrives as a token, Read admits it (a valid token)
// or refuses it with one of the feed's typed errors: never a panic, another error, or a silent
// fresh start.
func FuzzFeedToken(f *testing.F) {
	ctx := context.Background()
	pool := dbtest.NewPool(f, "billing")
	ingest(f, pool, 1, 2)
	checkpoint(f, pool, 2)
	_, good := readAll(f, pool, "")
	for _, seed := range []string{good, good[:len(good)-3], good[:20], good + "A", "AAAA", "-_-_", "Zm9v", "\x00", "é"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		if token == "" {
			return // the API's "from the beginning"
		}
		b, err := feed.Read(ctx, pool, feed.Options{}, token, 10)
		switch {
		case err == nil:
			if b.Token == "" {
				t.Fatalf("token %q admitted without a next token", token)
			}
		case errors.Is(err, feed.ErrBadRequest), errors.Is(err, feed.ErrConflict), errors.Is(err, feed.ErrGone):
		default:
			t.Fatalf("token %q: %v: want admission or a typed refusal", token, err)
		}
	})
}

// Invariant 15, liveness: a copy committed behind an open transaction that writes no event (so
// its end sends no NOTIFY) reaches a live reader once that transaction ends: read_feed says
// copies are held and the subscriber looks again.
func TestFeed_CopyHeldBehindASilentTransactionArrivesWhenItEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t, "billing")
	silent, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Rollback(ctx)
	if _, err := silent.Exec(ctx, "select pg_current_xact_id()"); err != nil { // takes an xid, writes nothing
		t.Fatal(err)
	}
	s := feed.NewSubscriber(pool, feed.Options{})
	var c collector
	run(t, s, &c)
	ingest(t, pool, 1)
	b, err := store.FeedRead(ctx, pool, store.FeedScope{}, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Events) != 0 || b.Held != 1 {
		t.Fatalf("behind the open transaction a read got %d events and held %d, want 0 and 1", len(b.Events), b.Held)
	}
	if err := silent.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	testrun.WaitFor(t, "the held copy reaches the live reader", func() bool { return c.has(1) })
}

// Invariant 15, liveness: the horizon is this database's, not the cluster's. A transaction that
// holds an xid in ANOTHER database of the same cluster cannot land a row here, so it holds
// nothing back; one in this database still does (the test above).
func TestFeed_AnOpenTransactionOfAnotherDatabaseHoldsNothingBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t, "billing")
	elsewhere := dbtest.NewPool(t, "shipping")
	open, err := elsewhere.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Rollback(ctx)
	if _, err := open.Exec(ctx, "select pg_current_xact_id()"); err != nil { // takes an xid, in the other database
		t.Fatal(err)
	}
	ingest(t, pool, 1)
	// A read may still hold the copy for a moment: a transaction of a test beside this one that
	// ended between the read's snapshot and its look at pg_stat_activity is not seen there, and
	// only a sighting exempts. The other database's transaction stays open throughout: with the
	// cluster's xmin as the horizon, no read returns the copy until it ends.
	testrun.WaitFor(t, "a read beside the other database's open transaction returns the copy", func() bool {
		b, err := store.FeedRead(ctx, pool, store.FeedScope{}, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(b.Events) == 1 && b.Held == 0
	})
}

// Invariant 15, a restored copy: billing's token (boundary 5: 1-4 taken) resumes on a copy of
// billing restored from an earlier state (it holds 1 and 2): admitted (another database: its
// position is not honoured) and replayed from 5. As the copy catches up by repair (3, 4, landing
// after the admission) and live delivery (5), the reader gets 5 (no skip) and the repairs again
// (duplicates: live delivery is not gated by boundaries).
func TestFeed_ATokenResumesOnARestoredCopyThatCatchesUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	billing := dbtest.NewPool(t, "billing")
	ingest(t, billing, 1, 2, 3, 4)
	checkpoint(t, billing, 4)
	_, token := readAll(t, billing, "")
	b, err := store.FeedTokenBoundaries(ctx, billing, token)
	if err != nil || len(b) != 1 || b[0].Boundary != 5 {
		t.Fatalf("billing's token: %+v %v, want orders at 5", b, err)
	}

	restored := dbtest.NewPool(t, "billing") // the earlier state: 1 and 2
	ingest(t, restored, 1, 2)
	checkpoint(t, restored, 2)
	s := feed.NewSubscriber(restored, feed.Options{Resume: token})
	var c collector
	run(t, s, &c)
	testrun.WaitFor(t, "the token admitted on the restored copy", func() bool { return s.Token() != token })
	ingest(t, restored, 3, 4) // repair catches the copy up
	ingest(t, restored, 5)    // then live
	testrun.WaitFor(t, "the reader on the restored copy gets 3, 4 and 5", func() bool { return c.has(3, 4, 5) })
	c.mu.Lock()
	t.Logf("after the move the reader got %v (3 and 4 again: duplicates)", c.seen)
	c.mu.Unlock()
}
