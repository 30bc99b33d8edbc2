// audit_requests.go: the repair requests an audit sent or, in report-only mode, would have sent
// (streamseal.audit_requests), byte for byte.

package store

import (
	"context"
	"time"
)

// Actions of an audit's repair request.
const (
	ActionRequested    = "requested"
	ActionWouldRequest = "would_request"
)

// AuditRequestRecord records one repair request an audit sent (ActionRequested) or would have
// sent in report-only mode (ActionWouldRequest); request is its body as sent.
func AuditRequestRecord(ctx context.Context, db Querier, origin, action string, request []byte) error {
	if _, err := db.Exec(ctx, "insert into streamseal.audit_requests (origin, action, request) values ($1, $2, $3)",
		origin, action, request); err != nil {
		return classify("record audit request", err)
	}
	return nil
}

// AuditRequestsPrune forgets the audit requests recorded before now - olderThan.
func AuditRequestsPrune(ctx context.Context, db Querier, olderThan time.Duration) (int64, error) {
	tag, err := db.Exec(ctx, "delete from streamseal.audit_requests where recorded_at < now() - make_interval(secs => $1)", olderThan.Seconds())
	if err != nil {
		return 0, classify("prune audit requests", err)
	}
	return tag.RowsAffected(), nil
}
