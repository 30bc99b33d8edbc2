// consumed.go: the consumed-type registry in `streamseal status`: each type this service consumes,
// whether it is baseline, an expansion pending or requested, or complete, since when, and each
// origin's progress on its backfill.

package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/streamseal/streamseal/controlplane/store"
)

// Consumed is one consumed type and its backfill's progress per origin.
type Consumed struct {
	store.ConsumedType
	Origins []OriginProgress `json:"origins"`
}

// OriginProgress is one origin's progress on a type's backfill: events shipped of the total it
// stated, done, and the rate since its first answer.
type OriginProgress struct {
	store.BackfillOriginProgress
	RatePerSecond float64 `json:"rate_per_s"`
}

// Report is everything `streamseal status` shows: per origin, and what this service consumes.
// ConsumptionComplete says every consumed type is baseline or complete (no expansion pending or
// requested): the store holds the whole history of what it consumes, as far as backfill goes
// (losses after birth are the origins' lanes' business).
type Report struct {
	Origins             []Origin   `json:"origins"`
	Consumed            []Consumed `json:"consumed"`
	ConsumptionComplete bool       `json:"consumption_complete"`
	// Handlers are the registered projections and reactors with their failing streams and
	// coverage findings (handlers.go).
	Handlers []store.HandlerState `json:"handlers"`
}

// ReadReport reads the origins' status and the consumed-type registry.
func ReadReport(ctx context.Context, db store.Querier) (Report, error) {
	var r Report
	var err error
	if r.Origins, err = Read(ctx, db); err != nil {
		return r, err
	}
	if r.Consumed, err = ReadConsumed(ctx, db); err != nil {
		return r, err
	}
	r.ConsumptionComplete = len(incomplete(r.Consumed)) == 0
	if r.Handlers, err = store.HandlerStates(ctx, db); err != nil {
		return r, err
	}
	return r, nil
}

// incomplete lists the consumed types whose history is not complete yet ("type status").
func incomplete(consumed []Consumed) []string {
	var out []string
	for _, c := range consumed {
		if c.Status != store.ConsumedBaseline && c.Status != store.ConsumedComplete {
			out = append(out, c.EventType+" "+c.Status)
		}
	}
	return out
}

// PrintReport writes the report as tables for people (the origins, then the consumed types and
// a consumption line), or as one JSON object for machines.
func PrintReport(out io.Writer, r Report, asJSON bool) error {
	if asJSON {
		if r.Origins == nil {
			r.Origins = []Origin{}
		}
		if r.Consumed == nil {
			r.Consumed = []Consumed{}
		}
		if r.Handlers == nil {
			r.Handlers = []store.HandlerState{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	if err := Print(out, r.Origins, false); err != nil {
		return err
	}
	if len(r.Consumed) > 0 {
		fmt.Fprintln(out)
		if err := PrintConsumed(out, r.Consumed); err != nil {
			return err
		}
		if r.ConsumptionComplete {
			fmt.Fprintln(out, "consumption: complete (every consumed type is baseline or backfilled)")
		} else {
			fmt.Fprintf(out, "consumption: incomplete: %s\n", strings.Join(incomplete(r.Consumed), ", "))
		}
	}
	if len(r.Handlers) > 0 {
		fmt.Fprintln(out)
		return PrintHandlers(out, r.Handlers)
	}
	return nil
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
				c.Origins = append(c.Origins, OriginProgress{BackfillOriginProgress: p, RatePerSecond: p.Rate()})
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
			of := ""
			if p.Total != nil {
				of = fmt.Sprintf(" of %d", *p.Total)
				if f := p.Fraction(); f >= 0 {
					state = fmt.Sprintf("%.0f%%, %s", 100*f, state)
				}
			}
			part := fmt.Sprintf("%s: %d%s events (%s, %.0f/s)", p.Origin, p.Shipped, of, state, p.Rate())
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
