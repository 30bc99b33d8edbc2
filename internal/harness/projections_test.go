package harness_test

import (
	"context"
	"testing"

	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/harness"
)

// Issue 19 over the real wire (the proposal's "backfill builds state and never re-fires
// triggers"; invariant 2): billing registers a projection and a reactor over order.paid, then
// starts consuming it after orders wrote its history and the broker let it go. The backfill's
// state-only copies reach the projection, run by billing's control plane, and never the reactor;
// a live order.paid afterwards reaches both, once.
func TestProjections_BackfillBuildsStateAndNeverFiresAReactor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _ := newCountingHarness(t)
	settings := auditSettings()
	settings.ReadinessGrace = 0
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes},
		Limits: redelivery.Limits{MaxEventsPerRequest: 500}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1]}, quickBackfill)
	services := []*harness.Service{orders, billing}
	if _, err := billing.Pool.Exec(ctx, `create schema app;
		create table app.seen (handler text, event_id uuid, flags integer, primary key (handler, event_id));
		create function app.project(e streamseal.handler_event) returns void language sql
		    as $$ insert into app.seen values ('projection', e.event_id, e.flags) $$;
		create function app.react(e streamseal.handler_event) returns void language sql
		    as $$ insert into app.seen values ('reactor', e.event_id, e.flags) $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ProjectionRegister(ctx, billing.Pool, "paid-view", eventTypes[1:2], "app.project", nil, "", true); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ReactorRegister(ctx, billing.Pool, "paid-mailer", eventTypes[1:2], "app.react", nil); err != nil {
		t.Fatal(err)
	}
	appendOrders(t, orders, 500, 10) // 100 of them order.paid
	publishAllThenForget(t, orders, 500, true, services)

	if err := store.SubscriptionsAdd(ctx, billing.Pool, "", eventTypes[1:2], store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	seen := func(handler, where string) int {
		var n int
		if err := billing.Pool.QueryRow(ctx, `select count(*) from app.seen where handler = $1 and `+where, handler).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, "the backfilled history folded into the projection", services, func() bool {
		return consumedStatus(t, billing, eventTypes[1]) == store.ConsumedComplete && seen("projection", "flags & 4 <> 0") == 100
	})
	if n := seen("reactor", "true"); n != 0 {
		t.Fatalf("the reactor received %d backfilled events: backfill re-fired triggers", n)
	}

	if _, err := store.EventsAppend(ctx, orders.Pool, []store.NewEvent{{Tenant: "acme", StreamID: "order-live", StreamVersion: 1,
		EventType: eventTypes[1], Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the live event reaches both handlers", services, func() bool {
		return seen("projection", "flags = 0") == 1 && seen("reactor", "flags = 0") == 1
	})
	if p, r := seen("projection", "true"), seen("reactor", "true"); p != 101 || r != 1 {
		t.Fatalf("the projection holds %d events and the reactor %d; want 101 and 1", p, r)
	}
}
