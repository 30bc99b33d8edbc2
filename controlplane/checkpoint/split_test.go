package checkpoint

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/streamseal/streamseal/controlplane/wire"
)

// A type's checkpoint splits into messages of whole tenants, each within the budget and each
// carrying the same window and round; together they name every tenant once, in order.
func TestSplitByTenants_WholeTenantsWithinTheBudget(t *testing.T) {
	cp := wire.Checkpoint{Origin: "orders", Type: "order.placed", From: 1, To: 501}
	var names []string
	for i := range 500 {
		last := int64(i + 1)
		cp.Tenants = append(cp.Tenants, wire.CheckpointTenant{Tenant: fmt.Sprintf("tenant-%03d", i), N: 1, First: &last, Last: &last})
		names = append(names, fmt.Sprintf("tenant-%03d", i))
	}
	parts := splitByTenants(cp, 2000)
	if len(parts) < 2 {
		t.Fatalf("%d part(s) for 500 tenants in 2000 bytes each", len(parts))
	}
	var got []string
	for _, p := range parts {
		body, _ := json.Marshal(p.Tenants)
		if len(body) > 2000 || p.From != cp.From || p.To != cp.To || p.Type != cp.Type || p.At != cp.At || len(p.Tenants) == 0 {
			t.Fatalf("part of %d tenants, %d bytes, window [%d,%d) type %s: want ≤ 2000 bytes, the same window and type", len(p.Tenants), len(body), p.From, p.To, p.Type)
		}
		for _, tn := range p.Tenants {
			got = append(got, tn.Tenant)
		}
	}
	if !slices.Equal(got, names) {
		t.Fatal("the parts do not name every tenant once, in order")
	}
	if quiet := splitByTenants(wire.Checkpoint{Type: "quiet"}, 2000); len(quiet) != 1 || len(quiet[0].Tenants) != 0 {
		t.Fatalf("a quiet type became %d messages", len(quiet))
	}
}
