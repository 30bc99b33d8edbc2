// subscriptions.go: what this service consumes (streamseal.subscriptions: subscribe, unsubscribe)
// and what it lets others receive in redelivery (streamseal.grants: grant_redelivery).

package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SubscriptionsAdd subscribes this service to eventTypes from every origin
// (streamseal.subscribe). A bad type refuses the whole call with ErrInvalidInput.
func SubscriptionsAdd(ctx context.Context, db Querier, eventTypes []string) error {
	if _, err := db.Exec(ctx, "select streamseal.subscribe($1)", eventTypes); err != nil {
		return classify("subscribe", err)
	}
	return nil
}

// GrantsAdd lets service receive eventTypes in redelivery and manifest answers
// (streamseal.grant_redelivery). A bad name refuses the whole call with ErrInvalidInput.
func GrantsAdd(ctx context.Context, db Querier, service string, eventTypes []string) error {
	if _, err := db.Exec(ctx, "select streamseal.grant_redelivery($1, $2)", service, eventTypes); err != nil {
		return classify("grant redelivery", err)
	}
	return nil
}

// Subscription is one (origin, event_type) this service consumes; origin "*" means any.
type Subscription struct {
	Origin, EventType string
}

// Subscriptions lists what this service consumes, by origin and type.
func Subscriptions(ctx context.Context, db Querier) ([]Subscription, error) {
	rows, err := db.Query(ctx, "select origin, event_type from streamseal.subscriptions order by 1, 2")
	if err != nil {
		return nil, classify("read subscriptions", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Subscription])
	if err != nil {
		return nil, classify("read subscriptions", err)
	}
	return out, nil
}

// SubscribedTypes lists the event types this service consumes from origin (named or "*").
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

// GrantedTypes lists the event types service may receive from this origin.
func GrantedTypes(ctx context.Context, db Querier, service string) ([]string, error) {
	rows, err := db.Query(ctx, "select event_type from streamseal.grants where service = $1", service)
	if err != nil {
		return nil, classify("read grants of "+service, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify("read grants of "+service, err)
	}
	return out, nil
}

// UngrantedTypes returns those of eventTypes service is not granted (streamseal.ungranted_types).
// A malformed name is ErrInvalidInput.
func UngrantedTypes(ctx context.Context, db Querier, service string, eventTypes []string) ([]string, error) {
	var ungranted []string
	if err := db.QueryRow(ctx, "select streamseal.ungranted_types($1, $2)", service, eventTypes).Scan(&ungranted); err != nil {
		return nil, classify("check grants of "+service, err)
	}
	return ungranted, nil
}
