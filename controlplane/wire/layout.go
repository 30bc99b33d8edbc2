package wire

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
)

// The subject layout of the authenticated bus (invariant 12). Every subject a service publishes
// names the publisher, so the broker's permissions can bind a message to the identity that
// authenticated, and the receive seam can drop a message whose body claims anyone else:
//
//	events:    streamseal.evt.<origin>.<tenant-token>.<type-token>   published only by <origin>
//	control:   streamseal.ctl.<to>.<from>                              published only by <from>
//	broadcast: streamseal.ctl._all.<from>                              published only by <from>
//	reply:     streamseal.ctl.<to>.<from>.<reply-token>                published only by <from>, read only by <to>
//
// A reply subject is the private answer address of one process of <to> (an operator's
// `streamseal audit` beside the running service): the request names the token, the origin
// answers there, and no durable consumer of <to> matches it (their filters end at <from>), so the
// running service never sees those answers. The sender is still the subject's fourth token, which
// the broker binds to the publisher; the token only picks which of <to>'s listeners reads it.
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

// LiveTenantFilter is the filter for eventType of exactly tenant from origin ("" or "*": any
// origin). Unlike LiveFilter, every tenant is literal here, "" (the single-tenant service's
// tenant) and "*" included: it is what a subscription to named tenants consumes, so a
// subscription to tenant "" or "*" never widens to every tenant (invariant 11).
func LiveTenantFilter(origin, tenant, eventType string) string {
	if origin == "" {
		origin = "*"
	}
	return eventsPrefix + origin + "." + TenantToken(tenant) + "." + TypeToken(eventType)
}

// InboxFilter is the one filter a subscription to eventType from origin consumes: every tenant's
// (allTenants) or exactly tenant's. The inbox creates its durables from it and the generated
// permissions pin the same, so the two cannot disagree.
func InboxFilter(origin, tenant string, allTenants bool, eventType string) string {
	if allTenants {
		return LiveFilter(origin, "*", eventType)
	}
	return LiveTenantFilter(origin, tenant, eventType)
}

// SubjectNamesEvent reports whether subject is the subject an event of (origin, tenant, type) rides.
func SubjectNamesEvent(subject, origin, tenant, eventType string) bool {
	return subject == LiveSubject(origin, tenant, eventType)
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

// ControlSubjectFrom is the directed control subject from one service to another (to may be
// BroadcastInbox).
func ControlSubjectFrom(to, from string) string { return controlPrefix + to + "." + from }

// ControlFilters are the control subjects service consumes: its directed inbox from any sender,
// and broadcasts from any sender.
func ControlFilters(service string) []string {
	return []string{controlPrefix + service + ".*", controlPrefix + BroadcastInbox + ".*"}
}

// ControlSender returns the sender a control subject (directed, broadcast or reply) names.
func ControlSender(subject string) (string, bool) {
	_, from, _, ok := ControlAddress(subject)
	return from, ok
}

// ControlAddress splits a control subject into its recipient, its sender and its reply token
// ("" unless it is a reply subject), refusing anything outside the layout.
func ControlAddress(subject string) (to, from, reply string, ok bool) {
	rest, ok := strings.CutPrefix(subject, controlPrefix)
	if !ok {
		return "", "", "", false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 2 && len(parts) != 3 {
		return "", "", "", false
	}
	to, from = parts[0], parts[1]
	if len(parts) == 3 {
		reply = parts[2]
		if to == BroadcastInbox || !ValidReplyToken(reply) {
			return "", "", "", false
		}
	}
	if (to != BroadcastInbox && !ValidServiceName(to)) || !ValidServiceName(from) {
		return "", "", "", false
	}
	return to, from, reply, true
}

// ReplySubject is where from answers a request of to that named the reply token reply.
func ReplySubject(to, from, reply string) string {
	return controlPrefix + to + "." + from + "." + reply
}

// ReplyFilter is what the holder of service's reply token listens on: answers from any sender.
func ReplyFilter(service, reply string) string { return controlPrefix + service + ".*." + reply }

// ValidReplyToken reports whether s can be a reply token: 1 to 64 of [a-z0-9-], one subject
// token that is never a wildcard.
func ValidReplyToken(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// InboxDurable names service's JetStream consumer of one event filter.
func InboxDurable(service, filter string) string { return durable("inbox", service, filter) }

// ControlDurable names service's JetStream consumer of one control filter.
func ControlDurable(service, filter string) string { return durable("ctl", service, filter) }

// LegacyControlDurable is the name of service's one control consumer of the layout before the
// sender joined the subject (filters streamseal.ctl.<service> and streamseal.ctl._all): it
// matches nothing any more, and the control endpoint removes it at start.
func LegacyControlDurable(service string) string { return "streamseal-control-" + service }

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

// OriginEvents matches every subject origin publishes events and checkpoints on
// (streamseal.evt.<origin>.>): what the generated permissions let origin publish.
func OriginEvents(origin string) string { return eventsPrefix + origin + ".>" }

// beatToken is the last token of an origin's beat subject. The subject has four tokens where an
// event subject has five, so no event filter (LiveFilter, LiveTenantFilter) ever matches it and
// the token cannot collide with a tenant or type token.
const beatToken = "_beat"

// BeatSubject is where origin publishes its liveness beat, one per checkpoint round
// (streamseal.evt.<origin>._beat): quiet pairs are not repeated in checkpoints, so a consumer
// subscribed to some tenants only still sees the origin alive every interval. It lies under
// OriginEvents(origin), which origin may already publish.
func BeatSubject(origin string) string { return eventsPrefix + origin + "." + beatToken }

// BeatFilter is the filter of origin's beats; "" or "*" matches every origin's.
func BeatFilter(origin string) string {
	if origin == "" {
		origin = "*"
	}
	return eventsPrefix + origin + "." + beatToken
}

// BeatFilters are the beat filters a consumer of origins needs, one durable each: one per named
// origin, or the one any-origin filter when origins holds "" or "*" (it covers the others, and
// no beat may reach two consumers). Sorted, deduplicated.
func BeatFilters(origins []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range origins {
		if o == "" || o == "*" {
			return []string{BeatFilter("*")}
		}
		if f := BeatFilter(o); !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// BeatSender returns the origin a beat subject names, and whether subject is a beat subject.
func BeatSender(subject string) (string, bool) {
	rest, ok := strings.CutPrefix(subject, eventsPrefix)
	if !ok {
		return "", false
	}
	origin, last, ok := strings.Cut(rest, ".")
	return origin, ok && last == beatToken && ValidServiceName(origin)
}
