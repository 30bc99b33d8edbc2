package harness_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariants 11 (isolation) and 1 (no silent loss): billing is subscribed to and granted tenant
// acme only. Beside an origin emitting acme and globex events of the same types on the real
// wire, billing's live inbox stores every acme event and is never delivered a globex one (the
// subjects carry the tenant and billing's consumers filter on acme's), and acme's checkpoints
// verify with no false gap: every acme lane reaches the origin's last type_seq with nothing
// suspected, and no globex lane exists.
func TestTenants_LiveInboxHoldsOnlyItsTenantsAndVerifiesThemWithNoFalseGap(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	orders := start(t, h, "orders", harness.Options{Settings: settings,
		Grants: map[string][]string{"billing": eventTypes}, Tenants: []string{"acme"}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes, Tenants: []string{"acme"}}, nil)
	services := []*harness.Service{orders, billing}
	ctx := context.Background()

	const n = 300
	var events []store.NewEvent
	for i := range n {
		tenant := []string{"acme", "globex"}[i%2]
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: tenant, StreamID: fmt.Sprintf("%s-%02d", tenant, i%20),
			StreamVersion: int64(i/20 + 1), EventType: eventTypes[(i/2)%len(eventTypes)], Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	for i := 0; i < n; i += 50 {
		if _, err := store.EventsAppend(ctx, orders.Pool, events[i:i+50]); err != nil {
			t.Fatal(err)
		}
	}
	countTenant := func(s *harness.Service, tenant string) int {
		var c int
		if err := s.Pool.QueryRow(ctx, "select count(*) from streamseal.events where origin = 'orders' and tenant = $1", tenant).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	waitFor(t, "every acme event stored at billing", services, func() bool { return countTenant(billing, "acme") == n/2 })

	// The origin's last acme type_seq per type; billing's lanes must reach each with nothing
	// suspected or confirmed: the checkpoints riding acme's subjects verified, no false gap.
	lastOf := map[string]int64{}
	rows, err := orders.Pool.Query(ctx, "select event_type, max(type_seq) from streamseal.numbered_events where tenant = 'acme' group by 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var eventType string
		var last int64
		if err := rows.Scan(&eventType, &last); err != nil {
			t.Fatal(err)
		}
		lastOf[eventType] = last
	}
	if rows.Close(); len(lastOf) != len(eventTypes) {
		t.Fatalf("fixture: acme emitted %d types, want %d", len(lastOf), len(eventTypes))
	}
	waitFor(t, "acme's checkpoints verified every lane to its last type_seq", services, func() bool {
		for eventType, last := range lastOf {
			if laneFloor(t, billing, "orders", "acme", eventType) != last {
				return false
			}
		}
		return true
	})

	var lanes, unclean, rejects int
	if err := billing.Pool.QueryRow(ctx, `
		select count(*), count(*) filter (where suspected <> '{}' or confirmed <> '{}'),
		       (select count(*) from streamseal.inbox_rejects)
		from streamseal.lanes where origin = 'orders'`).Scan(&lanes, &unclean, &rejects); err != nil {
		t.Fatal(err)
	}
	if lanes != len(eventTypes) || unclean != 0 || rejects != 0 {
		t.Fatalf("billing holds %d lanes of orders (%d with suspected or confirmed holes) and %d rejects; want acme's %d clean lanes and none",
			lanes, unclean, rejects, len(eventTypes))
	}
	if g := gapReports(t, billing); len(g) != 0 {
		t.Fatalf("gaps reported: %+v", g)
	}
	if c := countTenant(billing, "globex"); c != 0 {
		t.Fatalf("billing, subscribed to and granted acme only, holds %d globex events", c)
	}
	if got := billing.Inbox.Counts().Received; got != n/2 {
		t.Fatalf("billing's inbox was delivered %d events, want exactly acme's %d: no globex message reaches it", got, n/2)
	}
}
