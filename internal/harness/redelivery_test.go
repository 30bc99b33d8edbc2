package harness_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariant 11 (isolation): billing is granted two types of tenant acme. A request for an
// ungranted type, or for tenant globex, is refused and nothing is sent. Witness without sleeping:
// the origin builds requests in order, so once a later, valid request's summary has arrived, the
// refused ones were handled before it.
func TestRedelivery_RefusesUngrantedTypesAndTenants(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	orders := start(t, h, "orders", harness.Options{Grants: map[string][]string{"billing": eventTypes[:2]}, Tenants: []string{"acme"}}, nil)
	var got summaries
	billing := start(t, h, "billing", harness.Options{Consumes: eventTypes[:2]}, func(s *harness.Service) {
		s.Repair.OnSummary = got.record
	})
	services := []*harness.Service{orders, billing}
	appendOrders(t, orders, 50, 5)

	from, to := int64(1), int64(1000)
	ungranted, err := requestFrom(billing, "orders", wire.RedeliveryRequest{Tenants: []string{"acme"},
		Types: []string{eventTypes[0], eventTypes[3]}, FromSeq: &from, ToSeq: &to, MaxEvents: 100})
	if err != nil {
		t.Fatal(err)
	}
	globex, err := requestFrom(billing, "orders", wire.RedeliveryRequest{Tenants: []string{"globex"}, Types: eventTypes[:1],
		FromSeq: &from, ToSeq: &to, MaxEvents: 100})
	if err != nil {
		t.Fatal(err)
	}
	valid := requestAll(t, billing, "orders", eventTypes[:2])
	waitFor(t, "the valid request's summary", services, func() bool { _, ok := got.get(valid); return ok })

	for _, id := range []string{ungranted, globex} {
		if _, ok := got.get(id); ok {
			t.Fatalf("refused request %s got a summary", id)
		}
	}
	received, refused, _ := orders.Redelivery.Counts()
	if received != 3 || refused != 2 {
		t.Fatalf("origin received %d requests and refused %d; want 3 and 2", received, refused)
	}
	sum, _ := got.get(valid)
	bundles, _, _ := billing.Repair.Counts()
	if bundles != int64(sum.Bundles) {
		t.Fatalf("billing received %d bundles, all of them for the valid request's %d", bundles, sum.Bundles)
	}
}

// One redelivery build at a time per process: two requests sent together are built one after
// the other. The witness is the order of the builds' start and end, not a timing.
func TestRedelivery_BuildsOneRequestAtATime(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var mu sync.Mutex
	var phases []string
	orders := start(t, h, "orders", harness.Options{Grants: map[string][]string{"billing": eventTypes},
		Limits: redelivery.Limits{PageSize: 7, MaxBundleEvents: 5}}, func(s *harness.Service) {
		s.Redelivery.OnBuild = func(id, phase string) {
			mu.Lock()
			defer mu.Unlock()
			phases = append(phases, id+":"+phase)
		}
	})
	var got summaries
	billing := start(t, h, "billing", harness.Options{}, func(s *harness.Service) { s.Repair.OnSummary = got.record })
	services := []*harness.Service{orders, billing}
	appendOrders(t, orders, 300, 10)
	waitFor(t, "the relay published everything", services, func() bool {
		var n int64
		_ = orders.Pool.QueryRow(context.Background(), "select published_through from streamseal.relay_state").Scan(&n)
		return n == 300
	})

	first := requestAll(t, billing, "orders", eventTypes)
	second := requestAll(t, billing, "orders", eventTypes)
	waitFor(t, "both summaries", services, func() bool {
		_, a := got.get(first)
		_, b := got.get(second)
		return a && b
	})
	mu.Lock()
	defer mu.Unlock()
	want := []string{first + ":start", first + ":end", second + ":start", second + ":end"}
	if len(phases) != 4 {
		t.Fatalf("build phases = %v, want %v", phases, want)
	}
	for i := range want {
		if phases[i] != want[i] {
			t.Fatalf("build phases = %v, want %v (one build at a time)", phases, want)
		}
	}
}

// The origin's cap wins over the requester's max, and the summary says the answer was cut.
func TestRedelivery_ClampsTheRequesterMaxToTheOriginCap(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	orders := start(t, h, "orders", harness.Options{Grants: map[string][]string{"billing": eventTypes},
		Limits: redelivery.Limits{MaxEventsPerRequest: 40, PageSize: 15}}, nil)
	var got summaries
	billing := start(t, h, "billing", harness.Options{}, func(s *harness.Service) { s.Repair.OnSummary = got.record })
	services := []*harness.Service{orders, billing}
	appendOrders(t, orders, 100, 10)
	waitFor(t, "the stamper numbered everything", services, func() bool {
		var n int64
		_ = orders.Pool.QueryRow(context.Background(), "select last_origin_seq from streamseal.stamp_state").Scan(&n)
		return n == 100
	})
	id := requestAll(t, billing, "orders", eventTypes) // asks for up to 10000
	waitFor(t, "the summary", services, func() bool { _, ok := got.get(id); return ok })
	sum, _ := got.get(id)
	if sum.Shipped != 40 || !sum.Truncated {
		t.Fatalf("summary = %+v; want 40 shipped (the origin's cap) and truncated", sum)
	}
	// The truncated answer is followed (the receiver asks for the rest as soon as it fetches the
	// summary, issue 18), so the store never has to rest at exactly 40: the witness is the whole
	// history, the clamped 40 and the follow-ups' rest.
	waitFor(t, "billing stored the 40 and the rest through follow-ups", services, func() bool {
		return countFrom(t, billing.Pool, "orders") == 100
	})
}

// Invariant 3: a bundle whose events and payload bytes disagree is refused whole: nothing of it
// is stored, even the events that would have parsed.
func TestRepair_RefusesAnInconsistentBundleWhole(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	billing := start(t, h, "billing", harness.Options{}, nil)
	bundle := wire.Bundle{RequestID: "r", Origin: "orders", StreamID: "s", Events: []wire.BundleEvent{
		{ID: uuid.New(), OriginSeq: 1, TypeSeq: 1, Tenant: "acme", Type: "order.placed", Version: 1, Len: 2},
		{ID: uuid.New(), OriginSeq: 2, TypeSeq: 2, Tenant: "acme", Type: "order.placed", Version: 2, Len: 5},
	}}
	env, err := wire.NewEnvelope(wire.KindRedeliveryBundle, "orders", "billing", bundle)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.Publish(context.Background(), billing.JS, env, []byte("{}{}")); err != nil { // 4 bytes, not 7
		t.Fatal(err)
	}
	waitFor(t, "billing handled the bundle", []*harness.Service{billing}, func() bool { return billing.Control.Finished() >= 1 })
	if _, _, refused := billing.Repair.Counts(); refused != 1 {
		t.Fatalf("billing refused %d bundles, want 1", refused)
	}
	if n := countFrom(t, billing.Pool, "orders"); n != 0 {
		t.Fatalf("billing stored %d events of an inconsistent bundle", n)
	}
}
