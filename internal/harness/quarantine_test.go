package harness_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// setEventsMaxMsgSize changes the events stream's max message size: a broker whose limit
// shrank (or grew back).
func setEventsMaxMsgSize(t *testing.T, js jetstream.JetStream, size int32) {
	t.Helper()
	ctx := context.Background()
	stream, err := js.Stream(ctx, wire.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	cfg.MaxMsgSize = size
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// inboxConsumersExist reports whether every service's inbox durables (one per subscribed type,
// any origin, every tenant: eventTypes) are on the events stream.
func inboxConsumersExist(t *testing.T, js jetstream.JetStream, services ...string) bool {
	t.Helper()
	ctx := context.Background()
	for _, service := range services {
		for _, eventType := range eventTypes {
			if _, err := js.Consumer(ctx, wire.EventsStream, wire.InboxDurable(service, wire.LiveFilter("*", "*", eventType))); err != nil {
				return false
			}
		}
	}
	return true
}

// Invariant 13 (no wedge): an own event the broker refuses (above the events stream's max
// message size) is quarantined with the reason, the relay goes on, and the next 1000 ordinary
// events reach every consumer; the quarantine is named (list, metric, readiness). Re-queued
// after the broker's limit is raised, the event is delivered. Before the quarantine the relay
// retried the refused event forever and nothing behind it reached anyone.
func TestQuarantine_PoisonedEventDoesNotWedgeTheRelayAndIsDeliveredOnceRequeued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	orders := start(t, h, "orders", harness.Options{}, nil)
	billing := start(t, h, "billing", harness.Options{Consumes: eventTypes}, nil)
	shipping := start(t, h, "shipping", harness.Options{Consumes: eventTypes}, nil)
	services := []*harness.Service{orders, billing, shipping}
	// The consumers exist before the stream changes: nats-server's stream update races its own
	// consumer creation on that stream (a data race inside the server, seen with -race).
	waitFor(t, "billing's and shipping's inbox consumers exist", services, func() bool {
		return inboxConsumersExist(t, orders.JS, "billing", "shipping")
	})
	setEventsMaxMsgSize(t, orders.JS, 4096)

	poison := uuid.New()
	if _, err := store.EventsAppend(ctx, orders.Pool, []store.NewEvent{{EventID: poison, Tenant: "acme", StreamID: "big-1",
		StreamVersion: 1, EventType: eventTypes[0], Payload: bytes.Repeat([]byte("x"), 8000)}}); err != nil {
		t.Fatal(err)
	}
	appendOrders(t, orders, 1000, 40)
	waitFor(t, "the 1000 ordinary events behind the poisoned one reach billing and shipping", services, func() bool {
		return countFrom(t, billing.Pool, "orders") == 1000 && countFrom(t, shipping.Pool, "orders") == 1000
	})

	quarantined, err := store.QuarantineList(ctx, orders.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(quarantined) != 1 || quarantined[0].EventID != poison || quarantined[0].OriginSeq != 1 ||
		quarantined[0].Stage != "relay" || !strings.Contains(quarantined[0].Reason, "maximum") {
		t.Fatalf("quarantine %+v, want the poisoned event (origin_seq 1) with the broker's reason", quarantined)
	}
	if got := metricValue(t, orders, "streamseal_events_quarantined_total", nil); got != 1 {
		t.Fatalf("streamseal_events_quarantined_total = %v, want 1", got)
	}
	if err := orders.Metrics.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, orders, "streamseal_quarantined_events", nil); got != 1 {
		t.Fatalf("streamseal_quarantined_events = %v, want 1", got)
	}

	setEventsMaxMsgSize(t, orders.JS, -1)
	if ids, err := store.QuarantineRequeue(ctx, orders.Pool, nil); err != nil || len(ids) != 1 {
		t.Fatalf("requeue = %v, %v", ids, err)
	}
	waitFor(t, "the re-queued event reaches billing and shipping", services, func() bool {
		return countFrom(t, billing.Pool, "orders") == 1001 && countFrom(t, shipping.Pool, "orders") == 1001
	})
	requireSameRows(t, rowsOf(t, orders.Pool, "orders"), rowsOf(t, billing.Pool, "orders"))
	if n, err := store.QuarantineCount(ctx, orders.Pool); err != nil || n != 0 {
		t.Fatalf("quarantine holds %d after the delivery (%v), want 0", n, err)
	}
}
