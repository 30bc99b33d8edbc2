package redelivery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/progress"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Operator runs `streamseal repair`: it sends one redelivery request on behalf of service, waits
// for the origin's summary (listening on the service's control subject beside the service's own
// control plane, which stores the bundles), then shows progress until the store holds
// everything the origin shipped.
type Operator struct {
	Pool    *pgxpool.Pool
	NC      *nats.Conn
	Service string
	Out     io.Writer
	// Terminal rewrites one progress line in place; otherwise progress prints as plain lines.
	Terminal bool
}

// Run sends req to origin and reports until the repair is complete or ctx ends.
func (o *Operator) Run(ctx context.Context, origin string, req wire.RedeliveryRequest) (wire.RedeliverySummary, error) {
	js, err := jetstream.New(o.NC)
	if err != nil {
		return wire.RedeliverySummary{}, err
	}
	summaries := make(chan wire.RedeliverySummary, 1)
	// The directed filter only; the seam binds the sender to the subject (invariant 12), so a
	// summary claiming origin on anyone else's subject is not taken for the answer.
	seam := &wire.Seam{Self: o.Service}
	sub, err := o.NC.Subscribe(wire.ControlFilters(o.Service)[0], func(m *nats.Msg) {
		env, _, ok := seam.Accept(m.Subject, m.Data)
		if !ok || env.Kind != wire.KindRedeliverySummary || env.From != origin {
			return
		}
		var s wire.RedeliverySummary
		if json.Unmarshal(env.Body, &s) == nil && s.RequestID == req.RequestID {
			select {
			case summaries <- s:
			default:
			}
		}
	})
	if err != nil {
		return wire.RedeliverySummary{}, fmt.Errorf("listen for the summary: %w", err)
	}
	defer sub.Unsubscribe()
	if _, err := Request(ctx, o.Pool, js, o.Service, origin, req); err != nil {
		return wire.RedeliverySummary{}, err
	}
	fmt.Fprintf(o.Out, "repair: asked %s for tenants %v, types %v (request %s)\n", origin, req.Tenants, req.Types, req.RequestID)

	var summary wire.RedeliverySummary
	select {
	case summary = <-summaries:
	case <-ctx.Done():
		return wire.RedeliverySummary{}, fmt.Errorf("no summary from %s: %w (is it running, and has it granted %s these types?)", origin, ctx.Err(), o.Service)
	}
	fmt.Fprintf(o.Out, "repair: %s shipped %d events in %d bundles%s\n", origin, summary.Shipped, summary.Bundles,
		map[bool]string{true: " (its cap cut the answer: run again for the rest)", false: ""}[summary.Truncated])
	for _, u := range summary.Unservable {
		fmt.Fprintf(o.Out, "repair: cannot be re-delivered (%s): tenant %q type %q type_seqs %v origin_seqs %v\n",
			u.Reason, u.Tenant, u.Type, u.TypeSeqs, u.OriginSeqs)
	}
	return summary, o.progress(ctx, origin, req, summary.Shipped)
}

// progress polls the store until it holds at least want events of the request's scope.
func (o *Operator) progress(ctx context.Context, origin string, req wire.RedeliveryRequest, want int) error {
	line := &progress.Line{Out: o.Out, Terminal: o.Terminal, Label: "repair", Unit: "events"}
	target := int64(want)
	for {
		have, err := store.EventsHeldCount(ctx, o.Pool, origin, req.Tenants, req.Types, req.FromSeq, req.ToSeq)
		if err != nil {
			return err
		}
		line.Report(min(have, target), target)
		if have >= target {
			line.Finish("repair: complete")
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store holds %d of %d: %w", have, want, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
