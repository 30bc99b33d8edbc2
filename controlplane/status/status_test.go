package status_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/checkpoint"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/status"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/checkpointtest"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const placed = "order.placed"

func TestStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// The service under test is "billing", consuming order.placed from "orders".
	type testBundle struct {
		pool *pgxpool.Pool
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "", []string{placed}, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		return &testBundle{pool: pool}
	}

	read := func(t *testing.T, b *testBundle) []status.Origin {
		t.Helper()
		origins, err := status.Read(ctx, b.pool)
		if err != nil {
			t.Fatal(err)
		}
		return origins
	}

	// lanes renders an origin's lanes compactly: tenant floor suspected confirmed requested accepted.
	lanes := func(o status.Origin) string {
		var out []string
		for _, l := range o.Lanes {
			out = append(out, fmt.Sprintf("%s %s %d %s %s %s %s", l.Tenant, l.EventType, l.Floor, l.Suspected, l.Confirmed, l.Requested, l.AcceptedLosses))
		}
		return strings.Join(out, "; ")
	}

	// Invariant 6 (no leapfrog), as an operator reads it: a lane's floor stops below its hole; the
	// hole is shown suspected after one checkpoint, confirmed and requested after the next (the
	// verifier asks the origin, over an embedded NATS server); it clears only when the event
	// itself arrives.
	t.Run("ReportsALanesHoleFromSuspectedToConfirmedToHealed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, js := natstest.Start(t).Connect(t, "billing")
		ingest(t, b.pool, copyOf("acme", 1), copyOf("acme", 2), copyOf("acme", 4), copyOf("acme", 5), copyOf("globex", 1))
		checkpointtest.Verify(t, b.pool, "billing", checkpointtest.Announcing("orders", placed, 1, 7, "acme", 1, 5))
		checkpointtest.Verify(t, b.pool, "billing", checkpointtest.Announcing("orders", placed, 1, 7, "globex", 1, 1))

		origins := read(t, b)
		if len(origins) != 1 || origins[0].Origin != "orders" || origins[0].ConfirmedGaps != 0 || origins[0].Silent {
			t.Fatalf("after one checkpoint: %+v", origins)
		}
		if got, want := lanes(origins[0]), "acme order.placed 2 {[3,4)} {} {} {}; globex order.placed 1 {} {} {} {}"; got != want {
			t.Fatalf("after one checkpoint the lanes are %q, want %q", got, want)
		}

		checkpointtest.VerifyAndRequest(t, b.pool, js, "billing", checkpointtest.Heartbeat("orders", placed, "acme", 7, 7))
		origins = read(t, b)
		if got, want := lanes(origins[0]), "acme order.placed 2 {} {[3,4)} {[3,4)} {}; globex order.placed 1 {} {} {} {}"; got != want || origins[0].ConfirmedGaps != 1 {
			t.Fatalf("after the second checkpoint the lanes are %q (%d with confirmed gaps), want %q and 1", got, origins[0].ConfirmedGaps, want)
		}
		// Invariant 14 as an operator reads it: the request is outstanding (no summary yet), asked
		// once, with the time it will be asked again if the hole is still there.
		if l := origins[0].Lanes[0]; l.RequestAttempts != 1 || l.NextRequestAt == "" || origins[0].Unanswered != 1 {
			t.Fatalf("the requested lane shows %d asks, next ask %q, %d unanswered requests; want 1, a time, 1",
				l.RequestAttempts, l.NextRequestAt, origins[0].Unanswered)
		}

		ingest(t, b.pool, copyOf("acme", 3))
		checkpointtest.Verify(t, b.pool, "billing", checkpointtest.Heartbeat("orders", placed, "acme", 7, 7))
		origins = read(t, b)
		if got, want := lanes(origins[0]), "acme order.placed 5 {} {} {} {}; globex order.placed 1 {} {} {} {}"; got != want || origins[0].ConfirmedGaps != 0 {
			t.Fatalf("after the hole arrived the lanes are %q (%d with confirmed gaps), want %q and 0", got, origins[0].ConfirmedGaps, want)
		}
	})

	// Invariants 9 and 10 as an operator reads them: unhealed buckets counted by class, those
	// whose repair budget is spent counted apart, with the seal and the origin's generation.
	t.Run("CountsUnhealedBucketsByClassAndSpentBudgets", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		cp := checkpointtest.Heartbeat("orders", placed, "acme", 0, 0)
		cp.Generation = 3
		checkpointtest.Verify(t, b.pool, "billing", cp)
		if _, err := b.pool.Exec(ctx, "select streamseal.advance_seal('orders', 40)"); err != nil {
			t.Fatal(err)
		}
		var buckets []map[string]any
		for i, reason := range []string{"deficit", "deficit", "identity_mismatch", "local_extra"} {
			localN, originN := 1, 2
			switch reason {
			case "identity_mismatch":
				localN = 2
			case "local_extra":
				localN = 3
			}
			buckets = append(buckets, map[string]any{"stream_id": fmt.Sprintf("s%d", i), "tenant": "acme", "event_type": placed,
				"local_x0": i + 1, "local_x1": 1, "local_n": localN, "origin_x0": 7, "origin_x1": 7, "origin_n": originN,
				"reason": reason, "skipped": false})
		}
		body, err := json.Marshal(buckets)
		if err != nil {
			t.Fatal(err)
		}
		// The auditor's ledger step, with a budget of one attempt: each deficit spends it at once.
		if _, err := b.pool.Exec(ctx, "select * from streamseal.ledger_observe('orders', $1::jsonb, max_attempts => 1)", body); err != nil {
			t.Fatal(err)
		}

		origins := read(t, b)
		o := origins[0]
		if want := map[string]int{"deficit": 2, "identity_mismatch": 1, "local_extra": 1}; !reflect.DeepEqual(o.Unhealed, want) || o.Exhausted != 2 {
			t.Fatalf("unhealed %v, exhausted %d; want %v and the 2 deficits exhausted", o.Unhealed, o.Exhausted, want)
		}
		if o.SealedThrough != 40 || o.Generation != 3 {
			t.Fatalf("sealed through %d at generation %d, want 40 and 3", o.SealedThrough, o.Generation)
		}
	})

	// Liveness as an operator reads it: an origin silent for the configured intervals shows as
	// silent (the checkpoint verifier's liveness check marks it), and clears when it speaks again.
	t.Run("ReportsASilentOriginUntilItSpeaksAgain", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		checkpointtest.Verify(t, b.pool, "billing", checkpointtest.Heartbeat("orders", placed, "acme", 0, 0))
		// The clock: the last checkpoint (interval 60 s) was an hour ago.
		if _, err := b.pool.Exec(ctx, "update streamseal.known_origins set last_checkpoint_at = now() - interval '1 hour'"); err != nil {
			t.Fatal(err)
		}
		v := &checkpoint.Verifier{Pool: b.pool, Service: "billing", Config: config.Defaults(), Logger: testrun.Logger(t)}
		if err := v.CheckLiveness(ctx); err != nil {
			t.Fatal(err)
		}
		origins := read(t, b)
		var table bytes.Buffer
		if err := status.Print(&table, origins, false); err != nil {
			t.Fatal(err)
		}
		if !origins[0].Silent || !strings.Contains(table.String(), "SILENT") {
			t.Fatalf("a silent origin reads as %+v:\n%s", origins[0], table.String())
		}

		checkpointtest.Verify(t, b.pool, "billing", checkpointtest.Heartbeat("orders", placed, "acme", 0, 0))
		if origins = read(t, b); origins[0].Silent || time.Since(origins[0].LastCheckpoint) > time.Minute {
			t.Fatalf("after a new checkpoint the origin reads as %+v", origins[0])
		}
	})

	// Print: an aligned table for people (holes without braces, "-" for none) and JSON for
	// machines that reads back into what Read returned; a service that has heard no origin says
	// where origins come from.
	t.Run("PrintsATableForPeopleAndJSONForMachines", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var empty bytes.Buffer
		if err := status.Print(&empty, read(t, b), false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(empty.String(), "no known origin (origins are learned from their checkpoints)") {
			t.Fatalf("status of a service that heard no origin:\n%s", empty.String())
		}

		ingest(t, b.pool, copyOf("acme", 1), copyOf("acme", 3))
		checkpointtest.Verify(t, b.pool, "billing", checkpointtest.Announcing("orders", placed, 1, 4, "acme", 1, 3))
		origins := read(t, b)
		var table, js bytes.Buffer
		if err := status.Print(&table, origins, false); err != nil {
			t.Fatal(err)
		}
		if err := status.Print(&js, origins, true); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(table.String(), "\n")
		var laneLine string
		for _, l := range lines {
			if strings.HasPrefix(l, "orders ") && strings.Contains(l, placed) {
				laneLine = strings.Join(strings.Fields(l), " ")
			}
		}
		if laneLine != "orders acme order.placed 1 [2,3) - - - - -" {
			t.Fatalf("lane row %q in:\n%s", laneLine, table.String())
		}
		var back []status.Origin
		if err := json.Unmarshal(js.Bytes(), &back); err != nil {
			t.Fatalf("status JSON does not read back: %v\n%s", err, js.String())
		}
		if fmt.Sprint(back[0].Lanes) != fmt.Sprint(origins[0].Lanes) || back[0].Origin != "orders" || !strings.Contains(js.String(), `"floor": 1`) {
			t.Fatalf("JSON %s reads back as %+v, want %+v", js.String(), back, origins)
		}
	})
}

func copyOf(tenant string, typeSeq int64) store.EventCopy {
	return store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: typeSeq*10 + int64(len(tenant)), TypeSeq: typeSeq,
		Tenant: tenant, StreamID: tenant + "-s", StreamVersion: typeSeq, EventType: placed, Payload: []byte("{}")}
}

func ingest(t *testing.T, pool *pgxpool.Pool, copies ...store.EventCopy) {
	t.Helper()
	if _, err := store.EventsIngest(context.Background(), pool, copies); err != nil {
		t.Fatal(err)
	}
}
