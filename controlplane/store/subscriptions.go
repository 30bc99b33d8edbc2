// subscriptions.go: what this service consumes (streamseal.subscriptions: subscribe,
// subscribe_all_tenants) and what it lets others receive in redelivery and manifest answers
// (streamseal.grants: grant_redelivery, grant_redelivery_all_tenants). Both are scoped by tenant
// (invariant 11); "every tenant" is said explicitly, never implied by an empty list.

package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TenantScope is which tenants a subscription or a grant covers: every tenant (All), or exactly
// Names ("" is the single-tenant service's tenant; "*" is a tenant like any other). The zero
// value names no tenant and is refused: an empty scope never means "every tenant".
type TenantScope struct {
	All   bool
	Names []string
}

// AllTenants is the explicit every-tenant scope.
func AllTenants() TenantScope { return TenantScope{All: true} }

// Tenants is the scope of exactly the named tenants.
func Tenants(names ...string) TenantScope { return TenantScope{Names: names} }

func (s TenantScope) check(what string) error {
	if s.All && len(s.Names) > 0 {
		return fmt.Errorf("%w: %s names tenants %q and every tenant: say one", ErrInvalidInput, what, s.Names)
	}
	if !s.All && len(s.Names) == 0 {
		return fmt.Errorf("%w: %s must name its tenants or say every tenant (store.AllTenants)", ErrInvalidInput, what)
	}
	return nil
}

// SubscriptionsAdd subscribes this service to eventTypes of the tenants in scope from origin
// ("" or "*": every origin) (streamseal.subscribe / subscribe_all_tenants). A bad name or an
// empty scope refuses the whole call with ErrInvalidInput.
func SubscriptionsAdd(ctx context.Context, db Querier, origin string, eventTypes []string, scope TenantScope) error {
	if err := scope.check("a subscription"); err != nil {
		return err
	}
	var o any
	if origin != "" && origin != "*" {
		o = origin
	}
	var err error
	if scope.All {
		_, err = db.Exec(ctx, "select streamseal.subscribe_all_tenants($1, $2)", eventTypes, o)
	} else {
		_, err = db.Exec(ctx, "select streamseal.subscribe($1, $2, $3)", eventTypes, o, scope.Names)
	}
	if err != nil {
		return classify("subscribe", err)
	}
	return nil
}

// GrantsAdd lets service receive eventTypes of the tenants in scope in redelivery and manifest
// answers (streamseal.grant_redelivery / grant_redelivery_all_tenants). A bad name or an empty
// scope refuses the whole call with ErrInvalidInput.
func GrantsAdd(ctx context.Context, db Querier, service string, eventTypes []string, scope TenantScope) error {
	if err := scope.check("a grant"); err != nil {
		return err
	}
	var err error
	if scope.All {
		_, err = db.Exec(ctx, "select streamseal.grant_redelivery_all_tenants($1, $2)", service, eventTypes)
	} else {
		_, err = db.Exec(ctx, "select streamseal.grant_redelivery($1, $2, $3)", service, eventTypes, scope.Names)
	}
	if err != nil {
		return classify("grant redelivery", err)
	}
	return nil
}

// Subscription is one row of what this service consumes: eventType from Origin ("*" means any),
// of Tenant, or of every tenant when AllTenants.
type Subscription struct {
	Origin, EventType string
	Tenant            string
	AllTenants        bool
}

// Subscriptions lists what this service consumes, by origin, type and tenant.
func Subscriptions(ctx context.Context, db Querier) ([]Subscription, error) {
	rows, err := db.Query(ctx, `
		select origin, event_type, coalesce(tenant, ''), all_tenants from streamseal.subscriptions
		order by origin, event_type, all_tenants desc, tenant`)
	if err != nil {
		return nil, classify("read subscriptions", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Subscription])
	if err != nil {
		return nil, classify("read subscriptions", err)
	}
	return out, nil
}

// SubscribedTypes lists the event types this service consumes from origin (named or "*"), of
// any tenant.
func SubscribedTypes(ctx context.Context, db Querier, origin string) ([]string, error) {
	rows, err := db.Query(ctx, "select distinct event_type from streamseal.subscriptions where origin in ($1, '*') order by 1", origin)
	if err != nil {
		return nil, classify("read subscribed types", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify("read subscribed types", err)
	}
	return out, nil
}

// TenantType is one (tenant, event type) pair.
type TenantType struct {
	Tenant, EventType string
}

// UngrantedPairs returns the pairs of tenants x eventTypes service is not granted
// (streamseal.ungranted_types). A malformed name or an empty list is ErrInvalidInput.
func UngrantedPairs(ctx context.Context, db Querier, service string, eventTypes, tenants []string) ([]TenantType, error) {
	rows, err := db.Query(ctx, "select tenant, event_type from streamseal.ungranted_types($1, $2, $3)", service, eventTypes, tenants)
	if err != nil {
		return nil, classify("check grants of "+service, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[TenantType])
	if err != nil {
		return nil, classify("check grants of "+service, err)
	}
	return out, nil
}
