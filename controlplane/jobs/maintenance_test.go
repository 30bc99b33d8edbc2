package jobs

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// Invariant 1: the maintenance job reaps ephemeral events once they are older than the
// configured grace, and only those: a younger ephemeral event and an old ordinary one stay.
func TestMaintenance_ReapsEphemeralEventsPastTheGrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := store.Open(ctx, dbtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := store.ServiceNameSet(ctx, pool, "billing"); err != nil {
		t.Fatal(err)
	}
	copyOf := func(seq int64, flags store.Flags) store.EventCopy {
		return store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: seq, TypeSeq: seq, Tenant: "acme",
			StreamID: "s", StreamVersion: seq, EventType: "order.pinged", Flags: flags, Payload: []byte("{}")}
	}
	old, young, ordinary := copyOf(1, store.Ephemeral), copyOf(2, store.Ephemeral), copyOf(3, 0)
	if _, err := store.EventsIngest(ctx, pool, []store.EventCopy{old, young, ordinary}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "update streamseal.events set stored_at = now() - interval '2 hours' where event_id = any($1)",
		[]uuid.UUID{old.EventID, ordinary.EventID}); err != nil {
		t.Fatal(err)
	}

	cfg := config.Defaults()
	cfg.EphemeralGrace = time.Hour
	w := &maintenanceWorker{pool: pool, cfg: cfg, logger: slog.Default()}
	if err := w.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, "select event_id from streamseal.numbered_events order by origin_seq")
	if err != nil {
		t.Fatal(err)
	}
	var left []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		left = append(left, id)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(left) != 2 || left[0] != young.EventID || left[1] != ordinary.EventID {
		t.Fatalf("after maintenance the store holds %v; want the young ephemeral %s and the ordinary %s (the old ephemeral reaped)",
			left, young.EventID, ordinary.EventID)
	}

	t.Run("Defaults", func(t *testing.T) {
		if d := config.Defaults(); d.EphemeralGrace != 24*time.Hour || d.Redelivery.HoldLimit != time.Hour {
			t.Fatalf("ephemeral grace %s, hold limit %s; want 24h and 1h", d.EphemeralGrace, d.Redelivery.HoldLimit)
		}
	})
}
