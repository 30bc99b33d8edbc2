// Package status reads a service's integrity state for `streamseal status`: per origin it has
// heard from, each lane's floor and holes, the seal and its generation, unhealed buckets by class,
// the last checkpoint and liveness, and the losses its lanes accepted (loss reports). Read-only; every figure comes straight from the tables the
// control plane keeps.
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

// Lane is one (origin, tenant, type) lane: floor, holes, requested and accepted losses.
type Lane = store.LaneState

// Origin is everything this service knows about one origin.
type Origin struct {
	Origin         string         `json:"origin"`
	LastCheckpoint time.Time      `json:"last_checkpoint_at"`
	Silent         bool           `json:"silent"`
	Generation     int64          `json:"generation"`
	SealedThrough  int64          `json:"sealed_through"`
	Unhealed       map[string]int `json:"unhealed_buckets"`
	Exhausted      int            `json:"repair_exhausted_buckets"`
	ConfirmedGaps  int            `json:"lanes_with_confirmed_gaps"`
	// Unanswered counts the redelivery requests sent to the origin whose summary has not come.
	Unanswered int    `json:"unanswered_requests"`
	Lanes      []Lane `json:"lanes"`
	// Losses sums the events accepted as lost per reason (at_most_once: occurrences that never
	// arrived; reaped_ephemeral, absent, never_existed: what the origin answered it cannot
	// serve); LossReports are the most recent reports, newest first, with their lane and window.
	Losses      map[string]int64   `json:"accepted_losses"`
	LossReports []store.LossReport `json:"loss_reports"`
}

// LossReportsShown is how many recent loss reports status lists per origin.
const LossReportsShown = 20

// Read collects the status of every known origin.
func Read(ctx context.Context, db store.Querier) ([]Origin, error) {
	states, err := store.OriginStates(ctx, db)
	if err != nil {
		return nil, err
	}
	losses, err := store.LossTotals(ctx, db)
	if err != nil {
		return nil, err
	}
	origins := make([]Origin, 0, len(states))
	for _, st := range states {
		o := Origin{Origin: st.Origin, LastCheckpoint: st.LastCheckpoint, Silent: st.Silent, Generation: st.Generation,
			SealedThrough: st.SealedThrough, Unhealed: map[string]int{}, Losses: map[string]int64{}}
		for k, n := range losses {
			if k.Origin == o.Origin {
				o.Losses[k.Reason] = n
			}
		}
		if o.LossReports, err = store.LossReportsByOrigin(ctx, db, o.Origin, LossReportsShown); err != nil {
			return nil, err
		}
		if o.Lanes, err = store.LanesByOrigin(ctx, db, o.Origin); err != nil {
			return nil, err
		}
		for _, l := range o.Lanes {
			if l.Confirmed != "{}" {
				o.ConfirmedGaps++
			}
		}
		if o.Unanswered, err = store.SentRequestsUnanswered(ctx, db, o.Origin); err != nil {
			return nil, err
		}
		counts, err := store.LedgerCountsByReason(ctx, db, o.Origin)
		if err != nil {
			return nil, err
		}
		for _, c := range counts {
			o.Unhealed[c.Reason] = c.Unhealed
			o.Exhausted += c.Exhausted
		}
		origins = append(origins, o)
	}
	return origins, nil
}

// Print writes the status as an aligned table for people, or JSON for machines.
func Print(out io.Writer, origins []Origin, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(origins)
	}
	if len(origins) == 0 {
		fmt.Fprintln(out, "no known origin (origins are learned from their checkpoints)")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(w, "ORIGIN\tLIVENESS\tLAST CHECKPOINT\tGENERATION\tSEALED THROUGH\tUNHEALED (deficit/mismatch/extra)\tEXHAUSTED\tLANES WITH CONFIRMED GAPS\tUNANSWERED REQUESTS")
	for _, o := range origins {
		live := "ok"
		if o.Silent {
			live = "SILENT"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d/%d/%d\t%d\t%d\t%d\n", o.Origin, live, o.LastCheckpoint.UTC().Format(time.RFC3339),
			o.Generation, o.SealedThrough, o.Unhealed["deficit"], o.Unhealed["identity_mismatch"], o.Unhealed["local_extra"],
			o.Exhausted, o.ConfirmedGaps, o.Unanswered)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ORIGIN\tTENANT\tTYPE\tFLOOR\tSUSPECTED\tCONFIRMED\tREQUESTED\tASKED\tNEXT ASK\tACCEPTED LOSSES")
	for _, o := range origins {
		for _, l := range o.Lanes {
			asked := "-"
			if l.RequestAttempts > 0 {
				asked = fmt.Sprintf("%dx", l.RequestAttempts)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Origin, orDash(l.Tenant), l.EventType, l.Floor,
				orDash(strings.Trim(l.Suspected, "{}")), orDash(strings.Trim(l.Confirmed, "{}")), orDash(strings.Trim(l.Requested, "{}")),
				asked, orDash(l.NextRequestAt), orDash(strings.Trim(l.AcceptedLosses, "{}")))
		}
	}
	reported := false
	for _, o := range origins {
		for _, r := range o.LossReports {
			if !reported {
				fmt.Fprintln(w)
				fmt.Fprintln(w, "ORIGIN\tTENANT\tTYPE\tACCEPTED LOSS\tTYPE_SEQS\tEVENTS\tCHECKPOINT WINDOW\tREPORTED")
				reported = true
			}
			window := "-"
			if r.WindowFrom != nil && r.WindowTo != nil {
				window = fmt.Sprintf("[%d,%d)", *r.WindowFrom, *r.WindowTo)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", o.Origin, orDash(r.Tenant), r.EventType, r.Reason,
				strings.Trim(r.TypeSeqs, "{}"), r.N, window, r.ReportedAt.UTC().Format(time.RFC3339))
		}
	}
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
