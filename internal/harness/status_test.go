package harness_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/status"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/harness"
)

// streamseal status shows an operator what the tables say: the lane's floor held below a
// confirmed hole, the hole itself, liveness and the seal.
func TestStatus_ShowsTheFloorAndTheConfirmedHole(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	report := fast(config.ReportOnly, 10)
	orders := start(t, h, "orders", harness.Options{Settings: report}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: report, Consumes: eventTypes[:1],
		Suppress: func(e store.EventCopy) bool { return e.StreamVersion == 5 }}, nil)
	var events []store.NewEvent
	for i := range 9 {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "st", StreamVersion: int64(i + 1),
			EventType: eventTypes[0], Payload: []byte("{}")})
	}
	if _, err := store.EventsAppend(context.Background(), orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the hole confirmed", []*harness.Service{orders, billing}, func() bool { return len(gapReports(t, billing)) == 1 })
	origins, err := status.Read(context.Background(), billing.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(origins) != 1 || origins[0].Origin != "orders" || origins[0].Silent || origins[0].ConfirmedGaps != 1 ||
		len(origins[0].Lanes) != 1 || origins[0].Lanes[0].Floor != 4 || origins[0].Lanes[0].Confirmed != "{[5,6)}" {
		t.Fatalf("status = %+v", origins)
	}
	var table, js bytes.Buffer
	if err := status.Print(&table, origins, false); err != nil {
		t.Fatal(err)
	}
	if err := status.Print(&js, origins, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "[5,6)") || !strings.Contains(js.String(), `"floor": 4`) {
		t.Fatalf("table:\n%s\njson:\n%s", table.String(), js.String())
	}

	// The origin answers that 5 is gone (what the repair receiver records): the floor passes it
	// and status keeps it on record as an accepted loss.
	if _, err := billing.Pool.Exec(context.Background(), "select streamseal.accept_loss('orders', 'acme', $1, '{[5,6)}', 'absent')", eventTypes[0]); err != nil {
		t.Fatal(err)
	}
	if origins, err = status.Read(context.Background(), billing.Pool); err != nil {
		t.Fatal(err)
	}
	if l := origins[0].Lanes[0]; l.Floor != 9 || l.Confirmed != "{}" || l.AcceptedLosses != "{[5,6)}" {
		t.Fatalf("after the accepted loss the lane is %+v; want floor 9, nothing confirmed, loss {[5,6)} on record", l)
	}
}
