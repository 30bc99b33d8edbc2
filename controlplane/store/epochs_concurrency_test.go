package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
)

const failsafe = 30 * time.Second

func lanePool(t *testing.T, service string) *pgxpool.Pool {
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
	return pool
}

func peerCopy(seq int64) store.EventCopy {
	return store.EventCopy{EventID: uuid.New(), Origin: "peer", OriginSeq: seq, TypeSeq: seq, Tenant: "t",
		StreamID: "s", StreamVersion: seq, EventType: "e", Payload: []byte("{}")}
}

// settledPeerLane stores peer copies 1..n except the listed gaps, as settled history.
func settledPeerLane(t *testing.T, pool *pgxpool.Pool, n int64, gaps ...int64) {
	t.Helper()
	ctx := context.Background()
	skip := map[int64]bool{}
	for _, g := range gaps {
		skip[g] = true
	}
	var copies []store.EventCopy
	for seq := int64(1); seq <= n; seq++ {
		if !skip[seq] {
			copies = append(copies, peerCopy(seq))
		}
	}
	if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "update streamseal.events set stored_at = now() - interval '2 hours'"); err != nil {
		t.Fatal(err)
	}
}

// requireEpochsExact checks every closed epoch and the sealed prefix against the store without
// healing: verify_digest_epochs heals, so read its drift count on a snapshot we roll back.
func requireEpochsExact(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	checks, err := store.EpochsVerify(ctx, tx, 100000)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) == 0 {
		t.Fatal("no closed epoch to verify")
	}
	for _, c := range checks {
		if c.Drifted != 0 || c.PrefixHealed {
			t.Fatalf("lane %s: %d of %d closed epochs drifted (prefix healed: %v)", c.Origin, c.Drifted, c.Checked, c.PrefixHealed)
		}
	}
}

// Invariant 4 (digest truth) under concurrency: a close never folds an epoch while a write into
// it is uncommitted. A writer holding the lane makes close_epochs skip the lane (it never waits);
// a close holding the lane makes the writer wait, and the writer's fold then lands in the closed
// epoch. Either order leaves every closed epoch equal to the store.
func TestEpochsClose_NeverRacesAnUncommittedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opts := store.EpochOptions{MaxEpochs: 100, Width: 10, Settle: time.Hour}

	t.Run("AnUncommittedRepairMakesTheCloseSkipTheLane", func(t *testing.T) {
		t.Parallel()
		pool := lanePool(t, "race-a")
		settledPeerLane(t, pool, 35, 4)

		repair, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer repair.Rollback(ctx)
		if _, err := store.EventsIngest(ctx, repair, []store.EventCopy{peerCopy(4)}); err != nil {
			t.Fatal(err)
		}
		closed, err := store.EpochsClose(ctx, pool, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(closed) != 0 {
			t.Fatalf("close_epochs closed %v while a write into the lane was uncommitted", closed)
		}
		if err := repair.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		// The repaired copy is a fresh arrival in epoch 0: let it settle.
		if _, err := pool.Exec(ctx, "update streamseal.events set stored_at = now() - interval '2 hours'"); err != nil {
			t.Fatal(err)
		}
		if closed, err = store.EpochsClose(ctx, pool, opts); err != nil || len(closed) != 3 {
			t.Fatalf("after the commit close_epochs = %v, %v; want epochs 0, 1, 2", closed, err)
		}
		requireEpochsExact(t, pool)
	})

	t.Run("ARepairDuringACloseWaitsAndLandsInTheClosedEpoch", func(t *testing.T) {
		t.Parallel()
		pool := lanePool(t, "race-b")
		settledPeerLane(t, pool, 35, 4)

		closer, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Rollback(ctx)
		if closed, err := store.EpochsClose(ctx, closer, opts); err != nil || len(closed) != 3 {
			t.Fatalf("close_epochs = %v, %v; want epochs 0, 1, 2", closed, err)
		}

		writer, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer writer.Release()
		var writerPID uint32
		if err := writer.QueryRow(ctx, "select pg_backend_pid()").Scan(&writerPID); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := store.EventsIngest(ctx, writer, []store.EventCopy{peerCopy(4)})
			done <- err
		}()
		// Witness: the repair waits on the lane lock the close holds.
		deadline := time.Now().Add(failsafe)
		for {
			var waiting bool
			if err := pool.QueryRow(ctx, `select exists (select 1 from pg_stat_activity
				where pid = $1 and wait_event_type = 'Lock' and wait_event = 'advisory')`, writerPID).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the repair never waited on the lane lock held by the close")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := closer.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(failsafe):
			t.Fatal("the repair never finished after the close committed")
		}
		requireEpochsExact(t, pool)
	})
}
