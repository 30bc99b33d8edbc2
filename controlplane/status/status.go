// Package status reads a service's integrity state for `streamseal status`: per origin it has
// heard from, each lane's floor and holes, the seal and its generation, unhealed buckets by class,
// the last checkpoint and liveness. Read-only; every figure comes straight from the tables the
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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Lane is one (origin, tenant, type) lane.
type Lane struct {
	Tenant    string `json:"tenant"`
	EventType string `json:"event_type"`
	Floor     int64  `json:"floor"`
	Suspected string `json:"suspected"`
	Confirmed string `json:"confirmed"`
	Requested string `json:"requested"`
	// AcceptedLosses are type_seqs the origin answered it cannot serve: gone for good, on record.
	AcceptedLosses string `json:"accepted_losses"`
}

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
	Lanes          []Lane         `json:"lanes"`
}

// Read collects the status of every known origin.
func Read(ctx context.Context, pool *pgxpool.Pool) ([]Origin, error) {
	rows, err := pool.Query(ctx, `
		select k.origin, k.last_checkpoint_at, k.silent_since is not null, coalesce(k.generation, 0),
		       coalesce(s.sealed_through, 0)
		from streamseal.known_origins k
		left join streamseal.seals s on s.origin = k.origin
		order by k.origin`)
	if err != nil {
		return nil, fmt.Errorf("read known origins: %w", err)
	}
	origins, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Origin, error) {
		o := Origin{Unhealed: map[string]int{}}
		err := r.Scan(&o.Origin, &o.LastCheckpoint, &o.Silent, &o.Generation, &o.SealedThrough)
		return o, err
	})
	if err != nil {
		return nil, err
	}
	for i := range origins {
		o := &origins[i]
		lanes, err := pool.Query(ctx, `
			select tenant, event_type, floor, suspected::text, confirmed::text, requested::text, accepted_losses::text
			from streamseal.lanes where origin = $1 order by tenant, event_type`, o.Origin)
		if err != nil {
			return nil, err
		}
		if o.Lanes, err = pgx.CollectRows(lanes, pgx.RowToStructByPos[Lane]); err != nil {
			return nil, err
		}
		for _, l := range o.Lanes {
			if l.Confirmed != "{}" {
				o.ConfirmedGaps++
			}
		}
		ledger, err := pool.Query(ctx, `
			select reason, count(*), count(*) filter (where exhausted_at is not null)
			from streamseal.repair_ledger where origin = $1 group by reason`, o.Origin)
		if err != nil {
			return nil, err
		}
		for ledger.Next() {
			var reason string
			var n, exhausted int
			if err := ledger.Scan(&reason, &n, &exhausted); err != nil {
				ledger.Close()
				return nil, err
			}
			o.Unhealed[reason] = n
			o.Exhausted += exhausted
		}
		ledger.Close()
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
	fmt.Fprintln(w, "ORIGIN\tLIVENESS\tLAST CHECKPOINT\tGENERATION\tSEALED THROUGH\tUNHEALED (deficit/mismatch/extra)\tEXHAUSTED\tLANES WITH CONFIRMED GAPS")
	for _, o := range origins {
		live := "ok"
		if o.Silent {
			live = "SILENT"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d/%d/%d\t%d\t%d\n", o.Origin, live, o.LastCheckpoint.UTC().Format(time.RFC3339),
			o.Generation, o.SealedThrough, o.Unhealed["deficit"], o.Unhealed["identity_mismatch"], o.Unhealed["local_extra"],
			o.Exhausted, o.ConfirmedGaps)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ORIGIN\tTENANT\tTYPE\tFLOOR\tSUSPECTED\tCONFIRMED\tREQUESTED\tACCEPTED LOSSES")
	for _, o := range origins {
		for _, l := range o.Lanes {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", o.Origin, orDash(l.Tenant), l.EventType, l.Floor,
				orDash(strings.Trim(l.Suspected, "{}")), orDash(strings.Trim(l.Confirmed, "{}")), orDash(strings.Trim(l.Requested, "{}")),
				orDash(strings.Trim(l.AcceptedLosses, "{}")))
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
