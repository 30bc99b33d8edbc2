// limits.go: the sizes the door accepts (streamseal.limits, set_limits).

package store

import (
	"context"
	"fmt"
)

// Limits are the sizes append and ingest accept (streamseal.limits): payload bytes, bytes of a
// tenant, event type or stream id, and bytes of metadata as jsonb text.
type Limits struct {
	MaxPayloadBytes  int
	MaxIDBytes       int
	MaxMetadataBytes int
}

// LimitsGet reads the limits in force.
func LimitsGet(ctx context.Context, db Querier) (Limits, error) {
	var l Limits
	err := db.QueryRow(ctx, "select max_payload_bytes, max_id_bytes, max_metadata_bytes from streamseal.limits()").
		Scan(&l.MaxPayloadBytes, &l.MaxIDBytes, &l.MaxMetadataBytes)
	if err != nil {
		return Limits{}, classify("read limits", err)
	}
	return l, nil
}

// LimitsSet changes the limits given as non-zero (zero keeps one; a metadata limit of 0 cannot be
// set here, only through SQL). Stored events are not re-checked.
func LimitsSet(ctx context.Context, db Querier, l Limits) error {
	arg := func(v int) any {
		if v == 0 {
			return nil
		}
		return v
	}
	_, err := db.Exec(ctx, "select streamseal.set_limits($1, $2, $3)",
		arg(l.MaxPayloadBytes), arg(l.MaxIDBytes), arg(l.MaxMetadataBytes))
	if err != nil {
		return classify(fmt.Sprintf("set limits %+v", l), err)
	}
	return nil
}
