package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

type bucketKey struct{ tenant, eventType string }

type fold struct{ x0, x1, n int64 }

func (f fold) xor(g fold) fold { return fold{f.x0 ^ g.x0, f.x1 ^ g.x1, f.n + g.n} }

// storedEvent is one event as the store holds it, with its hashes read back from Postgres, so
// the test's fold is independent of every streamseal fold function.
type storedEvent struct {
	seq               int64
	tenant, eventType string
	h0, h1            int64
	flags             int32
}

// Invariants 4 and 8 (digest truth, bounded cost): type_digests composes sealed epochs and live
// fringes, yet over random stores (own lane and a received lane with gaps, late arrivals into
// closed epochs, deletions, ephemeral and at-most-once events, random widths) every window
// equals a recompute, and half-open windows compose: [a,b) XOR [b,c) = [a,c).
func TestTypeDigests_HalfOpenWindowsComposeAndEqualTheRecompute(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for store := range 6 {
		t.Run(fmt.Sprintf("Store%d", store), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, uint64(store)))
			pool := randomStore(t, rng)
			for _, lane := range []string{"prop", "peer-a"} {
				events := readLane(t, pool, lane)
				maxSeq := int64(0)
				for _, e := range events {
					maxSeq = max(maxSeq, e.seq)
				}
				for range 25 {
					a := rng.Int64N(maxSeq + 6)
					b := a + rng.Int64N(maxSeq+6-a+1)
					c := b + rng.Int64N(maxSeq+6-b+1)
					checkWindows(t, pool, lane, events, a, b, c)
				}
			}
		})
	}
}

func checkWindows(t *testing.T, pool *pgxpool.Pool, lane string, events []storedEvent, a, b, c int64) {
	t.Helper()
	ctx := context.Background()
	ab, err := store.TypeDigests(ctx, pool, lane, a, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := store.TypeDigests(ctx, pool, lane, b, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := store.TypeDigests(ctx, pool, lane, a, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	composed := asMap(ab)
	for k, f := range asMap(bc) {
		composed[k] = composed[k].xor(f)
	}
	dropEmpty(composed)
	whole := asMap(ac)
	recomputed := recompute(events, a, ac.Watermark)
	if !equalFolds(composed, whole) {
		t.Fatalf("lane %s: [%d,%d) xor [%d,%d) = %v, but [%d,%d) = %v", lane, a, b, b, c, composed, a, c, whole)
	}
	if !equalFolds(whole, recomputed) {
		t.Fatalf("lane %s: type_digests [%d,%d) (watermark %d) = %v, recompute = %v", lane, a, c, ac.Watermark, whole, recomputed)
	}
}

func asMap(answer store.TypeAnswer) map[bucketKey]fold {
	out := map[bucketKey]fold{}
	for _, d := range answer.Digests {
		out[bucketKey{d.Tenant, d.EventType}] = fold{d.X0, d.X1, d.N}
	}
	return out
}

func dropEmpty(m map[bucketKey]fold) {
	for k, f := range m {
		if f == (fold{}) {
			delete(m, k)
		}
	}
}

func recompute(events []storedEvent, from, to int64) map[bucketKey]fold {
	out := map[bucketKey]fold{}
	for _, e := range events {
		if e.seq < from || e.seq >= to || e.flags&3 != 0 {
			continue
		}
		k := bucketKey{e.tenant, e.eventType}
		out[k] = out[k].xor(fold{e.h0, e.h1, 1})
	}
	return out
}

func equalFolds(a, b map[bucketKey]fold) bool {
	if len(a) != len(b) {
		return false
	}
	for k, f := range a {
		if b[k] != f {
			return false
		}
	}
	return true
}

func readLane(t *testing.T, pool *pgxpool.Pool, lane string) []storedEvent {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		select origin_seq, tenant, event_type, hashtextextended(event_id::text, 0), hashtextextended(event_id::text, 1), flags
		from streamseal.numbered_events where origin = $1`, lane)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []storedEvent
	for rows.Next() {
		var e storedEvent
		if err := rows.Scan(&e.seq, &e.tenant, &e.eventType, &e.h0, &e.h1, &e.flags); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// randomStore builds a service "prop" with an own lane and a received lane "peer-a", closes
// epochs at a random width, then lands late copies into closed epochs and deletes some history.
func randomStore(t *testing.T, rng *rand.Rand) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := store.Open(ctx, dbtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := store.ServiceNameSet(ctx, pool, "prop"); err != nil {
		t.Fatal(err)
	}
	tenants, types := []string{"t0", "t1", "t2"}, []string{"a", "b", "c", "d"}
	randomFlags := func() store.Flags {
		switch rng.IntN(10) {
		case 0:
			return store.Ephemeral
		case 1:
			return store.AtMostOnce
		case 2:
			return store.StateOnly
		}
		return 0
	}

	own := make([]store.NewEvent, 40+rng.IntN(80))
	for i := range own {
		own[i] = store.NewEvent{EventID: uuid.New(), Tenant: tenants[rng.IntN(3)], StreamID: fmt.Sprintf("o%d", i%9),
			StreamVersion: int64(i) + 1, EventType: types[rng.IntN(4)], Flags: randomFlags(), Payload: []byte("{}")}
	}
	for start := 0; start < len(own); start += 17 {
		if _, err := store.EventsAppend(ctx, pool, own[start:min(start+17, len(own))]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.EventsStamp(ctx, pool, 10000); err != nil {
		t.Fatal(err)
	}

	var copies, late []store.EventCopy
	for seq := int64(1); seq <= int64(40+rng.IntN(80)); seq++ {
		c := store.EventCopy{EventID: uuid.New(), Origin: "peer-a", OriginSeq: seq, TypeSeq: seq,
			Tenant: tenants[rng.IntN(3)], StreamID: fmt.Sprintf("p%d", seq%7), StreamVersion: seq,
			EventType: types[rng.IntN(4)], Flags: randomFlags(), Payload: []byte("{}")}
		if rng.IntN(6) == 0 {
			late = append(late, c) // a gap now, a repair later
		} else {
			copies = append(copies, c)
		}
	}
	rng.Shuffle(len(copies), func(i, j int) { copies[i], copies[j] = copies[j], copies[i] })
	if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'peer-a'"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EpochsClose(ctx, pool, store.EpochOptions{MaxEpochs: 1000, Width: 3 + rng.Int64N(13), Settle: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsIngest(ctx, pool, late); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "select streamseal.close_stream('t0', 'o1'), streamseal.close_stream('t1', 'o2', 40)"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "delete from streamseal.events where origin = 'peer-a' and origin_seq % 11 = 0"); err != nil {
		t.Fatal(err)
	}
	return pool
}
