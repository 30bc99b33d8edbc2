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
	if len(filters) != 2 || filters[0] != "streamseal.evt.orders.acme.order~2Epaid" || filters[1] != "streamseal.evt.orders._beat" {
		t.Fatalf("filters %v; want the one for orders/acme/order.paid and orders' beat", filters)
	}
	for _, p := range svc.Permissions().Publish {
		if strings.HasPrefix(p, "$JS.API.CONSUMER.CREATE.STREAMSEAL_EVENTS.") && !strings.HasSuffix(p, ".streamseal.evt.orders.acme.order~2Epaid") &&
			!strings.HasSuffix(p, ".streamseal.evt.orders._beat") {
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
	want := []string{wire.LiveTenantFilter("orders", "", "t"), wire.LiveTenantFilter("orders", "*", "t"), wire.LiveFilter("shipping", "*", "t"),
		wire.BeatFilter("orders"), wire.BeatFilter("shipping")}
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

// Liveness (issue 21 item 3): the inbox consumes each subscribed origin's beat with one more
// single-filter durable (wire.BeatFilters: the named origins', or the one any-origin filter when
// it subscribes to any origin); the permissions allow whichever it creates for any part of what
// the topology lets it consume, and no other origin's beat durable is needed.
func TestPermissionsAllowTheBeatDurablesTheInboxCreates_Liveness(t *testing.T) {
	t.Parallel()
	svc := natsauth.Service{Name: "billing", Consumes: []natsauth.Consumption{
		{Origin: "orders", Types: []string{"t"}, Tenants: []string{"acme"}},
		{Origin: natsauth.AnyOrigin, Types: []string{"u"}, AllTenants: true},
		{Origin: "shipping", Types: []string{"u"}, AllTenants: true},
	}}
	allowed := map[string]bool{}
	for _, p := range svc.Permissions().Publish {
		allowed[p] = true
	}
	for _, origins := range [][]string{{"orders"}, {"shipping"}, {"orders", "shipping"}, {"*"}, {"orders", "*"}} {
		for _, f := range wire.BeatFilters(origins) {
			create := "$JS.API.CONSUMER.CREATE." + wire.EventsStream + "." + wire.InboxDurable("billing", f) + "." + f
			if !allowed[create] || !allowed["$JS.API.CONSUMER.MSG.NEXT."+wire.EventsStream+"."+wire.InboxDurable("billing", f)] {
				t.Errorf("subscribed to %v, the inbox's beat durable on %s is not allowed", origins, f)
			}
		}
	}
	if slices.Contains(svc.InboxFilters(), wire.BeatFilter("payments")) {
		t.Error("a beat durable of an origin the topology does not consume is allowed")
	}
}
