package wire

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// The subject layout of the authenticated bus (invariant 12). Every subject a service publishes
// names the publisher, so the broker's permissions can bind a message to the identity that
// authenticated, and the receive seam can drop a message whose body claims anyone else:
//
//	events:    streamseal.evt.<origin>.<tenant-token>.<type-token>   published only by <origin>
//	control:   streamseal.ctl.<to>.<from>                              published only by <from>
//	broadcast: streamseal.ctl._all.<from>                              published only by <from>
//
// Tenants are a subject token so a consumer granted some tenants subscribes (and is permitted)
// to those tenants' subjects only (invariant 11). Every JetStream consumer streamseal creates has
// exactly one filter subject and a durable name derived from (service, filter): the broker's
// filtered create API ($JS.API.CONSUMER.CREATE.<stream>.<durable>.<filter>) then lets the
// generated permissions pin both, so a service can neither read another's consumer nor widen
// its own filter.

// TenantToken turns a tenant into one subject token with TypeToken's injective encoding; the
// empty tenant (single-tenant services) is "~", which no other tenant encodes to ('~' is always
// escaped as ~7E).
func TenantToken(tenant string) string {
	if tenant == "" {
		return "~"
	}
	return TypeToken(tenant)
}

// LiveSubject is where origin publishes events of (tenant, eventType), and the checkpoints that
// count them.
func LiveSubject(origin, tenant, eventType string) string {
	return eventsPrefix + origin + "." + TenantToken(tenant) + "." + TypeToken(eventType)
}

// LiveFilter is the filter for eventType from origin and tenant; an origin or tenant of "" or
// "*" matches any.
func LiveFilter(origin, tenant, eventType string) string {
	if origin == "" {
		origin = "*"
	}
	tenantToken := "*"
	if tenant != "*" && tenant != "" {
		tenantToken = TenantToken(tenant)
	}
	return eventsPrefix + origin + "." + tenantToken + "." + TypeToken(eventType)
}

// EventSender returns the origin an event subject names (its third token).
func EventSender(subject string) (string, bool) {
	rest, ok := strings.CutPrefix(subject, eventsPrefix)
	if !ok {
		return "", false
	}
	origin, _, ok := strings.Cut(rest, ".")
	return origin, ok && ValidServiceName(origin)
}

// SubjectNamesEvent reports whether subject is the subject an event of (origin, tenant, type) rides.
func SubjectNamesEvent(subject, origin, tenant, eventType string) bool {
	return subject == EventSubject(origin, eventType)
}

// ControlSubjectFrom is the directed control subject from one service to another (to may be
// BroadcastInbox).
func ControlSubjectFrom(to, from string) string { return controlPrefix + to + "." + from }

// ControlFilters are the control subjects service consumes: its directed inbox from any sender,
// and broadcasts from any sender.
func ControlFilters(service string) []string {
	return []string{controlPrefix + service + ".*", controlPrefix + BroadcastInbox + ".*"}
}

// ControlSender returns the sender a control subject names (its last token).
func ControlSender(subject string) (string, bool) {
	rest, ok := strings.CutPrefix(subject, controlPrefix)
	if !ok {
		return "", false
	}
	to, from, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(from, ".") || (to != BroadcastInbox && !ValidServiceName(to)) {
		return "", false
	}
	return from, ValidServiceName(from)
}

// InboxDurable names service's JetStream consumer of one event filter.
func InboxDurable(service, filter string) string { return durable("inbox", service, filter) }

// ControlDurable names service's JetStream consumer of one control filter.
func ControlDurable(service, filter string) string { return durable("ctl", service, filter) }

// durable is <role>-<service>-<fnv-1a 64 of filter, hex>: a legal durable name (no '.', '*',
// '>'), stable across restarts, distinct per filter.
func durable(role, service, filter string) string {
	h := fnv.New64a()
	h.Write([]byte(filter))
	return fmt.Sprintf("%s-%s-%016x", role, service, h.Sum64())
}

// InboxPrefix is the reply-subject prefix of service's connections: replies to its requests
// (JetStream pulls, publish acks) arrive under it, and the permissions let only service
// subscribe there, so no one else reads what its consumers fetch.
func InboxPrefix(service string) string { return "_INBOX_" + service }
