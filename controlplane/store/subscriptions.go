// subscriptions.go: what this service consumes (streamseal.subscriptions: subscribe, unsubscribe)
// and what it lets others receive in redelivery (streamseal.grants: grant_redelivery).

package store

import "context"

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
