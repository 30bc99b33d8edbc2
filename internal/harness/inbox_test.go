package harness_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// Bad input loses nothing and stops nothing: an event message the inbox cannot store is recorded
// in inbox_rejects with its reason (not acked silently), and the events around it are stored.
func TestInbox_RecordsWhatItCannotStoreAndGoesOn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	orders := start(t, h, "orders", harness.Options{}, nil)
	billing := start(t, h, "billing", harness.Options{Consumes: eventTypes}, nil)
	services := []*harness.Service{orders, billing}

	appendOrders(t, orders, 10, 2)
	waitFor(t, "the first events stored", services, func() bool { return countFrom(t, billing.Pool, "orders") == 10 })
	bad := nats.NewMsg(wire.LiveSubject("orders", "acme", eventTypes[0]))
	bad.Header.Set("Streamseal-Event-Id", "not-a-uuid")
	bad.Data = []byte(`{"broken":true}`)
	if _, err := orders.JS.PublishMsg(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	appendStreams(t, orders, 10, 2, "after")
	waitFor(t, "the events after the bad message stored", services, func() bool { return countFrom(t, billing.Pool, "orders") == 20 })

	var subject, reason string
	var payload []byte
	if err := billing.Pool.QueryRow(context.Background(), "select subject, reason, payload from streamseal.inbox_rejects").
		Scan(&subject, &reason, &payload); err != nil {
		t.Fatalf("no recorded reject: %v", err)
	}
	if subject != bad.Subject || string(payload) != `{"broken":true}` || reason == "" {
		t.Fatalf("reject = %s %q %q", subject, reason, payload)
	}
	if c := billing.Inbox.Counts(); c.Rejected != 1 {
		t.Fatalf("inbox counted %d rejects, want 1", c.Rejected)
	}
}
