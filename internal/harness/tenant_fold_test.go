package harness_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariants 1 and 8 through the whole exchange with many tenants: 12 tenants x 2 types is 24
// (tenant, type) pairs at 3 digests per chunk. The consumer lost events of the first and the
// last tenant after receiving them; one audit finds both through the type folds, the range folds
// of the tenant key space and the stream pages of those tenants, repairs them, and the next round
// seals with one manifest answer (the folds: one digest per type).
func TestAudit_DamageInOneTenantAmongManyIsFoundAndRepaired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	settings := auditSettings()
	settings.MaxDigestsPerManifest = 3
	types := eventTypes[:2]
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": types}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: types}, nil)
	services := []*harness.Service{orders, billing}
	var events []store.NewEvent
	for i := range 12 {
		for _, ty := range types {
			events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: fmt.Sprintf("t%02d", i),
				StreamID: fmt.Sprintf("s%02d-%s", i, ty), StreamVersion: 1, EventType: ty, Payload: []byte("{}")})
		}
	}
	if _, err := store.EventsAppend(ctx, orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	// Every lane's floor, not one: the damage must lie below the floors, where only the audit
	// looks. Each type's checkpoints are verified on their own inbox consumer, so one lane's floor
	// says nothing of another type's; a lane deleted before its floor passed is a gap, which the
	// checkpoint path requests and repairs while the audit runs (the first audit then finds less).
	waitFor(t, "billing stored all 24 and all 24 lane floors passed them", services, func() bool {
		return countFrom(t, billing.Pool, "orders") == 24 && lanesAtFloor(t, billing, "orders", 1) == 24
	})
	if _, err := billing.Pool.Exec(ctx, "delete from streamseal.events where (tenant, event_type) in (('t00', $1), ('t11', $2))", types[0], types[1]); err != nil {
		t.Fatal(err)
	}

	// One audit finds both, the first tenant and the last alike: the drill bisects the tenant key
	// space (range folds, 3 digests a chunk), so where a tenant's name sorts does not matter.
	findings, err := billing.Auditor.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if findings[0].Sealed || len(findings[0].Unresolved) == 0 {
		t.Fatalf("first audit %+v; want no seal while damage remains, and the unresolved types named", findings[0])
	}
	var divergent []string
	for _, b := range findings[0].Divergent {
		divergent = append(divergent, fmt.Sprintf("%s:%s:%s", b.Tenant, b.Stream, b.Reason))
	}
	slices.Sort(divergent)
	want := fmt.Sprintf("[t00:s00-%s:deficit t11:s11-%s:deficit]", types[0], types[1])
	if fmt.Sprint(divergent) != want {
		t.Fatalf("divergent buckets of the first audit %v; want %s", divergent, want)
	}
	waitFor(t, "billing repaired", services, func() bool { return countFrom(t, billing.Pool, "orders") == 24 })

	answeredBefore, _ := orders.Manifest.Counts()
	findings, err = billing.Auditor.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	answeredAfter, _ := orders.Manifest.Counts()
	if len(findings[0].Divergent) != 0 || !findings[0].Sealed || findings[0].SealedThrough != 25 || answeredAfter-answeredBefore != 1 {
		t.Fatalf("second round %+v cost %d manifest answers; want nothing divergent, sealed through 25, one answer",
			findings[0], answeredAfter-answeredBefore)
	}
}

// lanesAtFloor counts s's lanes of origin whose floor is floor.
func lanesAtFloor(t *testing.T, s *harness.Service, origin string, floor int64) int {
	t.Helper()
	var n int
	if err := s.Pool.QueryRow(context.Background(), "select count(*) from streamseal.lanes where origin = $1 and floor = $2",
		origin, floor).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
