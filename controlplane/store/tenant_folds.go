// tenant_folds.go: the audit's origin -> type -> tenant exchange (sql/functions/tenant_folds.sql):
// the scope a consumer names, the origin's per-type folds over that scope and its tenant pages,
// and the consumer's comparisons of both with its copy.

package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// FoldScope is the set of (tenant, type) pairs both sides of an audit fold: per event type,
// every tenant (All) or exactly Tenants. A consumer names it from its subscriptions
// (SubscriptionScope), so the origin folds the same set.
type FoldScope []TypeScope

// TypeScope is one event type of a FoldScope.
type TypeScope struct {
	EventType string
	All       bool
	Tenants   []string
}

// arrays renders the scope as the SQL functions' parallel arrays (a null tenant: every tenant).
func (s FoldScope) arrays() (types []string, tenants []*string) {
	types, tenants = []string{}, []*string{}
	for _, t := range s {
		if t.All {
			types, tenants = append(types, t.EventType), append(tenants, nil)
			continue
		}
		for _, n := range t.Tenants {
			types, tenants = append(types, t.EventType), append(tenants, &n)
		}
	}
	return types, tenants
}

// Only returns the part of the scope of eventTypes.
func (s FoldScope) Only(eventTypes []string) FoldScope {
	var out FoldScope
	for _, t := range s {
		for _, e := range eventTypes {
			if t.EventType == e {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// SubscriptionScope is the scope this service names in its audit requests to origin
// (streamseal.subscription_scope), by event type.
func SubscriptionScope(ctx context.Context, db Querier, origin string) (FoldScope, error) {
	rows, err := db.Query(ctx, `select event_type, tenant from streamseal.subscription_scope($1)`, origin)
	if err != nil {
		return nil, classify("subscription scope", err)
	}
	defer rows.Close()
	var out FoldScope
	for rows.Next() {
		var eventType string
		var tenant *string
		if err := rows.Scan(&eventType, &tenant); err != nil {
			return nil, classify("subscription scope", err)
		}
		if len(out) == 0 || out[len(out)-1].EventType != eventType {
			out = append(out, TypeScope{EventType: eventType})
		}
		last := &out[len(out)-1]
		if tenant == nil {
			last.All, last.Tenants = true, nil
		} else if !last.All {
			last.Tenants = append(last.Tenants, *tenant)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, classify("subscription scope", err)
	}
	return out, nil
}

// AnswerTypeFolds answers this origin's lane over [from, to) to requester with one fold per
// event type over the tenants of scope it is granted (streamseal.answer_type_folds). The
// digests' Tenant is empty.
func AnswerTypeFolds(ctx context.Context, db Querier, requester, lane string, from, to int64, scope FoldScope) (TypeAnswer, error) {
	types, tenants := scope.arrays()
	rows, err := db.Query(ctx, `
		select '' as tenant, event_type, x0, x1, n, watermark
		from streamseal.answer_type_folds($1, $2, $3, $4, $5, $6)`, requester, lane, from, to, types, tenants)
	return typeAnswer(rows, err)
}

// TenantPage is one page of a tenant-level answer: the (tenant, type) folds of whole tenants
// after the requested cursor, the watermark, and the cursor to resume after ("": complete).
type TenantPage struct {
	Digests     []TypeDigest
	Watermark   int64
	ResumeAfter string
}

// AnswerTenantDigestsPage answers one tenant page of the scope (the drilled types) to requester
// (streamseal.answer_tenant_digests_page): at most max folds of whole tenants after afterTenant.
func AnswerTenantDigestsPage(ctx context.Context, db Querier, requester, lane string, from, to int64, scope FoldScope,
	afterTenant string, max int) (TenantPage, error) {
	types, tenants := scope.arrays()
	rows, err := db.Query(ctx, `
		select tenant, event_type, x0, x1, n, watermark, resume_after
		from streamseal.answer_tenant_digests_page($1, $2, $3, $4, $5, $6, $7, $8)`,
		requester, lane, from, to, types, tenants, textOrNull(afterTenant), max)
	if err != nil {
		return TenantPage{}, classify("tenant digests page", err)
	}
	defer rows.Close()
	var page TenantPage
	for rows.Next() {
		var tenant, eventType, resume *string
		var d TypeDigest
		if err := rows.Scan(&tenant, &eventType, &d.X0, &d.X1, &d.N, &page.Watermark, &resume); err != nil {
			return TenantPage{}, classify("tenant digests page", err)
		}
		if resume != nil {
			page.ResumeAfter = *resume
		}
		if eventType == nil {
			continue // the empty page's row: watermark only
		}
		d.Tenant, d.EventType = *tenant, *eventType
		page.Digests = append(page.Digests, d)
	}
	if err := rows.Err(); err != nil {
		return TenantPage{}, classify("tenant digests page", err)
	}
	return page, nil
}

// TypeFoldsCompare returns the event types of scope whose folds over [from, to) differ from the
// origin's answer (streamseal.compare_type_folds), in name order. An answer row outside the
// scope, a bad digest or a duplicate refuses the answer (ErrInvalidInput).
func TypeFoldsCompare(ctx context.Context, db Querier, origin string, from, to int64, digests []TypeDigest, scope FoldScope) ([]string, error) {
	n := len(digests)
	eventTypes, x0s, x1s, ns := make([]string, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, d := range digests {
		eventTypes[i], x0s[i], x1s[i], ns[i] = d.EventType, d.X0, d.X1, d.N
	}
	types, tenants := scope.arrays()
	rows, err := db.Query(ctx, `
		select event_type from streamseal.compare_type_folds($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		origin, from, to, eventTypes, x0s, x1s, ns, types, tenants)
	if err != nil {
		return nil, classify("compare type folds", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify("compare type folds", err)
	}
	return out, nil
}

// TenantDigestsCompare returns the (tenant, type) pairs of scope in the tenant range
// (after, through] ("": open) whose folds over [from, to) differ from the origin's tenant page
// (streamseal.compare_tenant_digests), in (tenant, type) order.
func TenantDigestsCompare(ctx context.Context, db Querier, origin string, from, to int64, digests []TypeDigest, scope FoldScope,
	after, through string) ([]TenantType, error) {
	n := len(digests)
	tenantsOf, eventTypes, x0s, x1s, ns := make([]string, n), make([]string, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, d := range digests {
		tenantsOf[i], eventTypes[i], x0s[i], x1s[i], ns[i] = d.Tenant, d.EventType, d.X0, d.X1, d.N
	}
	types, tenants := scope.arrays()
	rows, err := db.Query(ctx, `
		select tenant, event_type from streamseal.compare_tenant_digests($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		origin, from, to, tenantsOf, eventTypes, x0s, x1s, ns, types, tenants, textOrNull(after), textOrNull(through))
	if err != nil {
		return nil, classify("compare tenant digests", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[TenantType])
	if err != nil {
		return nil, classify("compare tenant digests", err)
	}
	return out, nil
}
