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

// InboxRejectRecord records a rejected message through streamseal.inbox_reject_record, which
// counts it under its reason and keeps it only as part of a bounded sample: at most a prefix of
// the body and headers, a capped number of rows per reason, none older than the age cap
// (streamseal.inbox_reject_caps).
func InboxRejectRecord(ctx context.Context, db Querier, r InboxReject) error {
	if _, err := db.Exec(ctx, "select streamseal.inbox_reject_record($1, $2, $3, $4, $5, $6)", r.Subject, nullString(r.Origin), nullUUID(r.EventID), r.Reason, r.Headers, r.Payload); err != nil {
		return classify("record rejected message", err)
	}
	return nil
}
