package harness_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariant 12 (authenticity) end to end, on an open bus (no broker permissions: the checks here
// are the second line). A plain client publishes a checkpoint on mallory's subject claiming
// orders with 1000 phantom type_seqs, and one on orders' own subject naming the control address
// streamseal.ctl.mallory. Neither inflates a lane nor moves where billing asks: a real loss
// after them is requested from orders on streamseal.ctl.orders.billing, repaired, and nothing
// is ever published under streamseal.ctl.mallory. Before, the forged checkpoint rewrote
// known_origins.control_subject and the repair request went to mallory.
func TestAuthenticity_ForgedCheckpointsNeitherInflateALaneNorRedirectRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	orders := start(t, h, "orders", harness.Options{Settings: fast(config.AutoRepairCapped, 10),
		Grants: map[string][]string{"billing": eventTypes}}, nil)
	lose := &suppressOnce{lose: map[uuid.UUID]bool{}}
	billing := start(t, h, "billing", harness.Options{Settings: fast(config.AutoRepairCapped, 10), Consumes: eventTypes, Suppress: lose.fn}, nil)
	services := []*harness.Service{orders, billing}

	first, last := int64(1), int64(1000)
	phantom, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", IntervalS: 60, At: time.Now(), From: 0, To: 1000,
		Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: 1000, First: &first, Last: &last}}})
	if err != nil {
		t.Fatal(err)
	}
	phantom.Subject = wire.LiveSubject("mallory", "acme", eventTypes[0])
	redirect, err := wire.CheckpointMessage(wire.Checkpoint{Origin: "orders", Control: "streamseal.ctl.mallory", IntervalS: 60,
		At: time.Now(), From: 0, To: 0, Type: eventTypes[0], Tenants: []wire.CheckpointTenant{{Tenant: "acme"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*nats.Msg{phantom, redirect} {
		if _, err := billing.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the phantom checkpoint rejected as forged", services, func() bool {
		var n int
		_ = billing.Pool.QueryRow(ctx, "select count(*) from streamseal.inbox_rejects where reason like 'forged_sender:%'").Scan(&n)
		return n == 1
	})

	// A real loss: one event of 100.
	var events []store.NewEvent
	for i := range 100 {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: fmt.Sprintf("order-%02d", i%10),
			StreamVersion: int64(i/10 + 1), EventType: eventTypes[0], Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	lose.lose[events[40].EventID] = true
	if _, err := store.EventsAppend(ctx, orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "billing converged to 100", services, func() bool { return countFrom(t, billing.Pool, "orders") == 100 })
	requireSameRows(t, rowsOf(t, orders.Pool, "orders"), rowsOf(t, billing.Pool, "orders"))

	var address string
	var highest int64 // the highest type_seq any checkpoint announced for a lane of orders
	if err := billing.Pool.QueryRow(ctx, `
		select k.control_subject, coalesce((select max(l.last_type_seq) from streamseal.lanes l where l.origin = 'orders'), 0)
		from streamseal.known_origins k where k.origin = 'orders'`).Scan(&address, &highest); err != nil {
		t.Fatal(err)
	}
	if address != wire.ControlSubjectFrom("orders", "billing") || highest > 100 {
		t.Fatalf("orders' address %q, highest announced type_seq %d; want the computed address and no phantom type_seqs", address, highest)
	}
	st, err := billing.JS.Stream(ctx, wire.ControlStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("streamseal.ctl.>"))
	if err != nil {
		t.Fatal(err)
	}
	asked := false
	for subject, n := range info.State.Subjects {
		if strings.HasPrefix(subject, "streamseal.ctl.mallory") {
			t.Fatalf("%d messages were sent to %s", n, subject)
		}
		asked = asked || subject == wire.ControlSubjectFrom("orders", "billing")
	}
	if !asked {
		t.Fatalf("billing never asked orders on %s: %v", wire.ControlSubjectFrom("orders", "billing"), info.State.Subjects)
	}
}
