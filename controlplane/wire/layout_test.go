package wire

import (
	"strings"
	"testing"
)

// Invariant 12 (authenticity) rests on the layout: the sender token parsed back from a subject is
// the one it was built with, and a subject that does not follow the layout names no sender.
func TestLayoutSenderRoundTrips_Invariant12(t *testing.T) {
	if got, ok := ControlSender(ControlSubjectFrom("orders", "billing")); !ok || got != "billing" {
		t.Fatalf("directed sender = %q, %v; want billing", got, ok)
	}
	if got, ok := ControlSender(ControlSubjectFrom(BroadcastInbox, "shipping")); !ok || got != "shipping" {
		t.Fatalf("broadcast sender = %q, %v; want shipping", got, ok)
	}
	if got, ok := EventSender(LiveSubject("orders", "acme", "order.placed")); !ok || got != "orders" {
		t.Fatalf("event sender = %q, %v; want orders", got, ok)
	}
	// A reply subject names its sender in the same place; its token is one more token.
	if to, from, reply, ok := ControlAddress(ReplySubject("billing", "orders", "audit-1")); !ok || to != "billing" || from != "orders" || reply != "audit-1" {
		t.Fatalf("reply address = %q %q %q, %v; want billing, orders, audit-1", to, from, reply, ok)
	}
	if f := ReplyFilter("billing", "audit-1"); f != "streamseal.ctl.billing.*.audit-1" {
		t.Fatalf("reply filter %q", f)
	}
	for _, bad := range []string{
		"streamseal.ctl.orders",                // the pre-authentication layout: no sender token
		"streamseal.ctl.orders.billing.more.x", // two tokens too many
		"streamseal.ctl._all.billing.audit-1",  // a broadcast has no reply address
		"streamseal.ctl.orders.billing.Audit",  // not a reply token
		"streamseal.ctl.orders.billing.*",      // a wildcard is no reply token
		"streamseal.ctl.orders.billing.",       // an empty reply token
		"streamseal.ctl.orders.Billing",        // not a service name
		"streamseal.ctl.Orders.billing",        // recipient not a service name
		"streamseal.evt.orders.x",              // not a control subject
		"other.ctl.orders.billing",
	} {
		if got, ok := ControlSender(bad); ok {
			t.Errorf("ControlSender(%q) = %q, want no sender", bad, got)
		}
	}
	for _, bad := range []string{"streamseal.evt.Orders.acme.t", "streamseal.evt.", "streamseal.ctl.orders.billing"} {
		if got, ok := EventSender(bad); ok {
			t.Errorf("EventSender(%q) = %q, want no sender", bad, got)
		}
	}
}

// Invariant 11 (isolation): distinct tenants never share a subject, the empty tenant included,
// and a tenant filter matches only its own tenant's token.
func TestLayoutTenantTokensAreDistinct_Invariant11(t *testing.T) {
	tenants := []string{"", "~", "acme", "ac.me", "ac~2Eme", "*", ">", "a b"}
	seen := map[string]string{}
	for _, tenant := range tenants {
		tok := TenantToken(tenant)
		if tok == "" || strings.ContainsAny(tok, ".*> ") {
			t.Fatalf("TenantToken(%q) = %q is not one literal subject token", tenant, tok)
		}
		if prev, dup := seen[tok]; dup {
			t.Fatalf("tenants %q and %q share token %q", prev, tenant, tok)
		}
		seen[tok] = tenant
	}
	if got, want := LiveFilter("orders", "acme", "order.placed"), LiveSubject("orders", "acme", "order.placed"); got != want {
		t.Fatalf("a one-tenant filter %q must be that tenant's subject %q", got, want)
	}
	if got := LiveFilter("", "*", "t"); got != "streamseal.evt.*.*.t" {
		t.Fatalf("any-origin any-tenant filter = %q", got)
	}
}

// Durable names are legal, stable and distinct per (service, filter): the generated permissions
// name them exactly.
func TestLayoutDurablesAreLegalAndDistinct(t *testing.T) {
	a := InboxDurable("billing", LiveFilter("orders", "*", "order.placed"))
	b := InboxDurable("billing", LiveFilter("orders", "acme", "order.placed"))
	c := ControlDurable("billing", ControlFilters("billing")[0])
	if a == b || a == c || b == c {
		t.Fatalf("durables collide: %s %s %s", a, b, c)
	}
	if a != InboxDurable("billing", LiveFilter("orders", "*", "order.placed")) {
		t.Fatal("durable name not stable")
	}
	for _, d := range []string{a, b, c} {
		if strings.ContainsAny(d, ".*> ") {
			t.Fatalf("illegal durable name %q", d)
		}
	}
}

// Invariant 11 (isolation): a named-tenant filter is literal for every tenant, the empty
// single-tenant one and "*" included, so subscribing to tenant "" or "*" never widens to every
// tenant; and an event's subject names exactly its (origin, tenant, type).
func TestLayoutTenantFiltersAreLiteral_Invariant11(t *testing.T) {
	for _, tenant := range []string{"", "*", ">", "acme"} {
		if got, want := LiveTenantFilter("orders", tenant, "order.placed"), LiveSubject("orders", tenant, "order.placed"); got != want {
			t.Errorf("LiveTenantFilter for tenant %q = %q, want its subject %q", tenant, got, want)
		}
	}
	if got := LiveTenantFilter("", "acme", "t"); got != "streamseal.evt.*.acme.t" {
		t.Errorf("any-origin one-tenant filter = %q", got)
	}
	subject := LiveSubject("orders", "acme", "order.placed")
	if !SubjectNamesEvent(subject, "orders", "acme", "order.placed") {
		t.Error("an event's own subject does not name it")
	}
	for _, other := range [][3]string{{"billing", "acme", "order.placed"}, {"orders", "globex", "order.placed"},
		{"orders", "acme", "order.paid"}, {"orders", "", "order.placed"}} {
		if SubjectNamesEvent(subject, other[0], other[1], other[2]) {
			t.Errorf("subject %s claims to name %v", subject, other)
		}
	}
}
