// ephemeral.go: the ephemeral lifecycle (sql/functions/reap_ephemeral.sql, destruction_holds.sql):
// the maintenance job's reaper, and the destruction holds an origin places on the ephemeral events
// a redelivery request names until the request is served.

package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// EphemeralReap removes up to max ephemeral events stored longer ago than grace, oldest first,
// and returns how many it removed (streamseal.reap_ephemeral): copies at the grace, own events
// only once a checkpoint covered them and while no destruction hold names them.
func EphemeralReap(ctx context.Context, db Querier, grace time.Duration, max int) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, "select streamseal.reap_ephemeral(make_interval(secs => $1), $2)",
		grace.Seconds(), max).Scan(&n); err != nil {
		return 0, classify("reap ephemeral events", err)
	}
	return n, nil
}

// DestructionHoldPlace holds the own ephemeral events sel names against the reaper for limit,
// on behalf of request requestID of requester, and returns how many it holds
// (streamseal.hold_destruction; a request id already holding holds nothing more).
func DestructionHoldPlace(ctx context.Context, db Querier, requestID uuid.UUID, requester string, sel RedeliverySelection, limit time.Duration, max int) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, `
		select streamseal.hold_destruction(request_id => $1, requester => $2, tenants => $3, event_types => $4,
		    from_seq => $5, to_seq => $6, type_seq_ranges => $7::int8multirange,
		    hold_limit => make_interval(secs => $8), max_events => $9)`,
		requestID, requester, sel.Tenants, sel.EventTypes, sel.FromSeq, sel.ToSeq, multirangeOrNull(sel.TypeSeqRanges),
		limit.Seconds(), max).Scan(&n); err != nil {
		return 0, classify("hold ephemeral events for request "+requestID.String(), err)
	}
	return n, nil
}

// DestructionHoldRelease drops the hold of a served request and says whether it held anything
// (streamseal.release_destruction_hold).
func DestructionHoldRelease(ctx context.Context, db Querier, requestID uuid.UUID) (bool, error) {
	var released bool
	if err := db.QueryRow(ctx, "select streamseal.release_destruction_hold($1)", requestID).Scan(&released); err != nil {
		return false, classify("release the hold of request "+requestID.String(), err)
	}
	return released, nil
}
