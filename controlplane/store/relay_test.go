package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/store"
)

// DESIGN's control-plane jobs: one active relay per service, elected by the leader lock. No
// numbered invariant is this test's own; it proves the witness the fault suite's replica case
// (invariants 1 and 14 across a relay failover) waits on: the session holding the lock is found
// from outside the process, by pid and the application_name it connected with, and none is
// reported once that session ends (a leader killed with kill -9 frees the lock with its
// connection).
func TestRelayLeaderSession_NamesTheLockHolderAndNoneAfterItLeaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := lanePool(t, "relay-leader-session")
	if _, ok, err := store.RelayLeaderSession(ctx, pool); err != nil || ok {
		t.Fatalf("before any relay leads: ok = %v, err = %v; want no holder", ok, err)
	}
	pooled, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := pooled.Hijack()
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "set application_name = 'orders-r1'"); err != nil {
		t.Fatal(err)
	}
	if leader, err := store.RelayLeaderTryLock(ctx, conn); err != nil || !leader {
		t.Fatalf("take the relay leader lock: leader = %v, err = %v", leader, err)
	}
	got, ok, err := store.RelayLeaderSession(ctx, pool)
	want := store.RelaySession{PID: int32(conn.PgConn().PID()), ApplicationName: "orders-r1"}
	if err != nil || !ok || got != want {
		t.Fatalf("while a session leads: %+v, ok = %v, err = %v; want %+v", got, ok, err, want)
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The backend ends a moment after its client closes: wait on the witness, not a clock.
	deadline := time.Now().Add(failsafe)
	for {
		_, ok, err := store.RelayLeaderSession(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader's session closed %s ago and is still reported as holding the lock", failsafe)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
