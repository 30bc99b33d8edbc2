// consumed.go: the consumed-type registry in `streamseal status`: each type this service consumes,
// whether it is baseline, an expansion pending or requested, or complete, since when, and each
// origin's progress on its backfill.

package status

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/streamseal/streamseal/controlplane/store"
)

// Consumed is one consumed type and its backfill's progress per origin.
type Consumed struct {
	store.ConsumedType
	Origins []store.BackfillOriginProgress
}

// ReadConsumed reads the registry and the progress of the backfills it references.
func ReadConsumed(ctx context.Context, db store.Querier) ([]Consumed, error) {
	types, err := store.ConsumedTypes(ctx, db)
	if err != nil {
		return nil, err
	}
	progress, err := store.BackfillProgress(ctx, db)
	if err != nil {
		return nil, err
	}
	out := make([]Consumed, 0, len(types))
	for _, t := range types {
		c := Consumed{ConsumedType: t}
		for _, p := range progress {
			if t.BackfillRequest != nil && p.Backfill == *t.BackfillRequest {
				c.Origins = append(c.Origins, p)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// PrintConsumed writes the registry as a table: one line per type, then one per origin that
// answered its backfill (events shipped, done or more to come, rate).
func PrintConsumed(out io.Writer, consumed []Consumed) error {
	if len(consumed) == 0 {
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(w, "CONSUMED TYPE\tSTATUS\tBORN\tBACKFILL REQUESTED\tCOMPLETE\tORIGIN PROGRESS")
	for _, c := range consumed {
		progress := "-"
		for i, p := range c.Origins {
			state := "more to come"
			if p.Done {
				state = "done"
			}
			part := fmt.Sprintf("%s: %d events (%s, %.0f/s)", p.Origin, p.Shipped, state, p.Rate())
			if i == 0 {
				progress = part
			} else {
				progress += "; " + part
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", c.EventType, c.Status, c.BornAt.UTC().Format(time.RFC3339),
			timeOrDash(c.RequestedAt), timeOrDash(c.CompletedAt), progress)
	}
	return w.Flush()
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
