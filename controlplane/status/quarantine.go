// quarantine.go: what `streamseal quarantine` and `streamseal status` show of this service's own
// events the relay set aside (streamseal.quarantine), and the re-queue an operator asks for.

package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/store"
)

// Quarantined is one own event a pipeline stage set aside, with why.
type Quarantined = store.Quarantined

// ReadQuarantine lists this service's quarantined own events in origin_seq order.
func ReadQuarantine(ctx context.Context, db store.Querier) ([]Quarantined, error) {
	return store.QuarantineList(ctx, db)
}

// Requeue marks quarantined events (ids, or every one when ids is empty) for the relay to
// publish again and returns the ids marked. An id that is not a UUID is refused before anything
// is marked.
func Requeue(ctx context.Context, db store.Querier, ids []string) ([]uuid.UUID, error) {
	var parsed []uuid.UUID
	for _, id := range ids {
		u, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("--event-ids: %q is not an event id (a UUID)", id)
		}
		parsed = append(parsed, u)
	}
	return store.QuarantineRequeue(ctx, db, parsed)
}

// PrintQuarantine writes the quarantined events as a table for people, or JSON for machines.
func PrintQuarantine(out io.Writer, events []Quarantined, asJSON bool) error {
	if asJSON {
		if events == nil {
			events = []Quarantined{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(events)
	}
	if len(events) == 0 {
		fmt.Fprintln(out, "no quarantined event")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(w, "QUARANTINED EVENT\tORIGIN_SEQ\tTENANT\tTYPE\tSTREAM\tPAYLOAD BYTES\tSTAGE\tSINCE\tREQUEUED\tREASON")
	for _, e := range events {
		requeued := "-"
		if e.RequeuedAt != nil {
			requeued = e.RequeuedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", e.EventID, e.OriginSeq, orDash(e.Tenant), e.EventType, e.StreamID,
			e.PayloadBytes, e.Stage, e.QuarantinedAt.UTC().Format(time.RFC3339), requeued, e.Reason)
	}
	return w.Flush()
}
