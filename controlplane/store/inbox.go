// inbox.go: what the inbox records of a message it cannot store (streamseal.inbox_rejects).

package store

import (
	"context"

	"github.com/google/uuid"
)

// InboxReject is one message the inbox could not store. Origin and EventID are empty when the
// message did not decode that far.
type InboxReject struct {
	Subject string
	Origin  string
	EventID uuid.UUID
	Reason  string
	Headers map[string]string
	Payload []byte
}

// InboxRejectRecord records a rejected message.
func InboxRejectRecord(ctx context.Context, db Querier, r InboxReject) error {
	if _, err := db.Exec(ctx, `
		insert into streamseal.inbox_rejects (subject, origin, event_id, reason, headers, payload)
		values ($1, $2, $3, $4, $5, $6)`, r.Subject, nullString(r.Origin), nullUUID(r.EventID), r.Reason, r.Headers, r.Payload); err != nil {
		return classify("record rejected message", err)
	}
	return nil
}
