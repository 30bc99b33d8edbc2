package status_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/status"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
)

// Invariant 13 as an operator reads it: an own event the relay set aside is named (id, where,
// why, since when) in `streamseal quarantine` and `status`, and re-queued on the operator's word:
// the ids given, or every one; an id that is not one, or not quarantined, is refused by name.
func TestQuarantine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("NamesTheSetAsideEventAndRequeuesItOnRequest", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "orders")
		ids, err := store.EventsAppend(ctx, pool, []store.NewEvent{
			{Tenant: "acme", StreamID: "big", StreamVersion: 1, EventType: "order.placed", Payload: []byte(`{"big":true}`)},
			{Tenant: "acme", StreamID: "fine", StreamVersion: 1, EventType: "order.placed", Payload: []byte(`{}`)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.EventsStamp(ctx, pool, 10); err != nil {
			t.Fatal(err)
		}
		if err := store.QuarantineEvent(ctx, pool, ids[0], "relay", "nats: maximum payload exceeded"); err != nil {
			t.Fatal(err)
		}

		events, err := status.ReadQuarantine(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 || events[0].EventID != ids[0] || events[0].OriginSeq != 1 || events[0].StreamID != "big" ||
			events[0].Stage != "relay" || events[0].Reason != "nats: maximum payload exceeded" || events[0].RequeuedAt != nil {
			t.Fatalf("quarantine lists %+v; want the big event, set aside by the relay with the broker's reason", events)
		}
		var table strings.Builder
		if err := status.PrintQuarantine(&table, events, false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(table.String(), ids[0].String()) || !strings.Contains(table.String(), "maximum payload exceeded") {
			t.Fatalf("the table does not name the event and its reason:\n%s", table.String())
		}

		if _, err := status.Requeue(ctx, pool, []string{ids[0].String(), "not-an-id"}); err == nil ||
			!strings.Contains(err.Error(), `--event-ids: "not-an-id" is not an event id`) {
			t.Fatalf("a bad id: %v; want a refusal naming it", err)
		}
		if events, _ := status.ReadQuarantine(ctx, pool); events[0].RequeuedAt != nil {
			t.Fatal("a refused re-queue marked the event")
		}
		marked, err := status.Requeue(ctx, pool, nil)
		if err != nil || len(marked) != 1 || marked[0] != ids[0] {
			t.Fatalf("re-queue of every event marked %v (%v); want the one quarantined", marked, err)
		}
		if events, _ := status.ReadQuarantine(ctx, pool); events[0].RequeuedAt == nil {
			t.Fatal("the re-queued event shows no re-queue time")
		}
		stranger := uuid.NewString()
		if marked, err := status.Requeue(ctx, pool, []string{stranger}); err == nil || len(marked) != 0 ||
			!strings.Contains(err.Error(), stranger+" is not quarantined") {
			t.Fatalf("re-queue of an id never quarantined marked %v (%v); want a refusal naming it", marked, err)
		}
	})
}
