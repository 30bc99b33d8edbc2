package natsauth_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Invariant 11: tenants are explicit (every tenant is "all_tenants": true, never implied by an empty
// list), and a topology permissions cannot be computed for is refused naming what is wrong.
func TestTopologyRefusesWhatPermissionsCannotBeComputedFor_Invariant11(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		json, want string
	}{
		{`{"services": []}`, "no services"},
		{`{"services": [{"name": "Orders"}]}`, `name "Orders" is not a service name`},
		{`{"services": [{"name": "orders"}, {"name": "orders"}]}`, "orders appears twice"},
		{`{"services": [{"name": "billing", "consumes": [{"origin": "*", "types": ["a"]}]}]}`, "billing.consumes[0]: no tenants"},
		{`{"services": [{"name": "billing", "consumes": [{"origin": "*", "all_tenants": true}]}]}`, "billing.consumes[0]: no types"},
		{`{"services": [{"name": "billing", "consumes": [{"origin": "Bad!", "types": ["a"], "all_tenants": true}]}]}`, `origin "Bad!" is not a service name`},
		{`{"services": [{"name": "billing", "grants": []}]}`, `unknown field "grants"`},
	} {
		path := filepath.Join(t.TempDir(), "topology.json")
		if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := natsauth.LoadTopology(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v; want one saying %q", tc.json, err, tc.want)
		}
	}
}

// Invariant 11: a service granted some tenants gets consumer create permissions for those
// tenants' filters only, so it cannot create a consumer on another tenant's events.
func TestPermissionsPinEachTenantsFilter_Invariant11(t *testing.T) {
	t.Parallel()
	svc := natsauth.Service{Name: "billing", Consumes: []natsauth.Consumption{{Origin: "orders", Types: []string{"order.paid"}, Tenants: []string{"acme"}}}}
	filters := svc.InboxFilters()
	if len(filters) != 1 || filters[0] != "streamseal.evt.orders.acme.order~2Epaid" {
		t.Fatalf("filters %v; want the one for orders/acme/order.paid", filters)
	}
	for _, p := range svc.Permissions().Publish {
		if strings.HasPrefix(p, "$JS.API.CONSUMER.CREATE.STREAMSEAL_EVENTS.") && !strings.HasSuffix(p, ".streamseal.evt.orders.acme.order~2Epaid") {
			t.Errorf("a consumer create beyond acme's filter: %s", p)
		}
	}
}

// Invariant 11: a named tenant is literal — the single-tenant service's tenant "" and a tenant
// called "*" never widen to every tenant; every tenant is its own explicit flag. The filters are
// the ones the inbox creates for the same subscriptions (wire.LiveTenantFilter / LiveFilter), so
// the permissions pin exactly the durables it uses.
func TestNamedTenantsStayLiteral_Invariant11(t *testing.T) {
	t.Parallel()
	svc := natsauth.Service{Name: "billing", Consumes: []natsauth.Consumption{
		{Origin: "orders", Types: []string{"t"}, Tenants: []string{"", "*"}},
		{Origin: "shipping", Types: []string{"t"}, AllTenants: true},
	}}
	want := []string{wire.LiveTenantFilter("orders", "", "t"), wire.LiveTenantFilter("orders", "*", "t"), wire.LiveFilter("shipping", "*", "t")}
	if got := svc.InboxFilters(); !slices.Equal(got, want) {
		t.Fatalf("filters %v; want %v", got, want)
	}
	for _, bad := range []string{
		`{"services": [{"name": "billing", "consumes": [{"origin": "*", "types": ["a"], "tenants": ["acme"], "all_tenants": true}]}]}`,
	} {
		path := filepath.Join(t.TempDir(), "topology.json")
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := natsauth.LoadTopology(path); err == nil || !strings.Contains(err.Error(), "both") {
			t.Errorf("%s: err %v; want one saying it names tenants and every tenant both", bad, err)
		}
	}
}
