// Package backfill owns the consumer's side of subscription growth (the proposal's Phase S): it
// keeps the consumed-type registry in line with the subscriptions (the first start is baseline;
// a type consumed later, on a restart or by `subscribe` at run time, is an expansion) and sends
// each expansion's history request: one broadcast, state-only redelivery request for the new
// types (wire.ControlSubjectFrom(wire.BroadcastInbox, service)), because an expanding consumer
// cannot know which origins emitted them. Every origin serves it under its grants (package
// redelivery's Server, unchanged), the Receiver checks each answer against the broadcast and
// follows truncated ones, and records each origin's progress (streamseal.backfill_answered). The
// rules (what is an expansion, what is due, when a type is complete) are SQL's
// (consumed_types.sql); this package schedules them and moves the request.
//
// Subscription changes are picked up by polling (Loop.Interval), not LISTEN/NOTIFY: subscribe
// runs inside the application's own transactions and connections, and a poll of one small table
// needs no extra connection per replica.
package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Defaults.
const (
	// IntervalDefault is how often the loop reconciles the registry with the subscriptions.
	IntervalDefault = 5 * time.Second
	// ReaskAfterDefault is how long a broadcast no origin answered waits before it is sent again.
	ReaskAfterDefault = 5 * time.Minute
)

// ErrNothingToBackfill is returned by Request for an empty type list.
var ErrNothingToBackfill = errors.New("a backfill must name at least one event type")

// Loop reconciles the registry and sends the backfills that are due.
type Loop struct {
	Pool    *pgxpool.Pool
	JS      jetstream.JetStream
	Service string
	// Enabled sends backfills; off, expansions stay pending.
	Enabled    bool
	Interval   time.Duration // zero: IntervalDefault
	ReaskAfter time.Duration // zero: ReaskAfterDefault
	MaxEvents  int           // asked per request; the origin clamps it (zero: the origin's cap)
	Logger     *slog.Logger
	Metrics    *metrics.Instruments
}

func (l *Loop) fill() {
	if l.Interval <= 0 {
		l.Interval = IntervalDefault
	}
	if l.ReaskAfter <= 0 {
		l.ReaskAfter = ReaskAfterDefault
	}
	if l.Logger == nil {
		l.Logger = slog.Default()
	}
}

// Start reconciles as a starting control plane (the first start takes the baseline) and sends
// what is due. The node calls it before its loops run.
func (l *Loop) Start(ctx context.Context) error {
	l.fill()
	return l.Once(ctx, true)
}

// Run reconciles every Interval until ctx ends (a failed round is logged and retried).
func (l *Loop) Run(ctx context.Context) error {
	l.fill()
	t := time.NewTicker(l.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := l.Once(ctx, false); err != nil && ctx.Err() == nil {
			l.Logger.Warn("backfill: round failed; retrying next interval", "err", err)
		}
	}
}

// Once reconciles the registry (atStart: as a starting control plane) and, when Enabled, sends
// one broadcast for every type due.
func (l *Loop) Once(ctx context.Context, atStart bool) error {
	l.fill()
	changes, err := store.ConsumedTypesReconcile(ctx, l.Pool, atStart)
	if err != nil {
		return err
	}
	for _, c := range changes {
		l.Logger.Info("backfill: consumed types changed", "type", c.EventType, "change", c.Change,
			"backfill", map[bool]string{true: "on", false: "off: stays pending"}[l.Enabled])
	}
	if !l.Enabled {
		return nil
	}
	if err := l.broadcast(ctx); err != nil {
		return err
	}
	return l.reaskStalled(ctx)
}

// broadcast sends one broadcast for every type due (streamseal.backfill_claim).
func (l *Loop) broadcast(ctx context.Context) error {
	// Claimed and recorded in one transaction before the publish: of several replicas one sends
	// each broadcast, and a broadcast lost on the way is claimed again after ReaskAfter.
	id := uuid.New()
	tx, err := l.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	due, err := store.BackfillClaim(ctx, tx, l.ReaskAfter, id)
	if err != nil || len(due) == 0 {
		return err
	}
	req, err := request(ctx, tx, id, due, l.MaxEvents)
	if err != nil {
		return err
	}
	if err := redelivery.SendBroadcastRecord(ctx, tx, store.SentRequest{RequestID: id, Origin: store.BroadcastOrigin,
		Source: store.SourceBackfill}, req); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if err := redelivery.PublishBroadcast(ctx, l.JS, l.Service, req); err != nil {
		return fmt.Errorf("publish backfill %s (recorded; re-asked after %s): %w", id, l.ReaskAfter, err)
	}
	l.Metrics.BackfillRequested()
	l.Logger.Info("backfill: broadcast state-only request sent", "types", due, "request", id)
	return nil
}

// reaskStalled sends again the last follow-up of every answer that stalled: an origin answered a
// backfill truncated and made no progress for ReaskAfter (backing off per re-ask up to 16 times it), because the
// follow-up asking for the rest was lost on the way or never reached it (invariant 14). The
// follow-up goes again under its recorded id, to the origin it was sent to (never an address from
// a message), so an origin that did get it serves it once. Claimed before the publish
// (streamseal.backfill_reask_stalled): one lost on the way again is claimed again later.
func (l *Loop) reaskStalled(ctx context.Context) error {
	stalled, err := store.BackfillReaskStalled(ctx, l.Pool, l.ReaskAfter)
	if err != nil {
		return err
	}
	for _, f := range stalled {
		var req wire.RedeliveryRequest
		if err := json.Unmarshal(f.Request, &req); err != nil {
			return fmt.Errorf("recorded follow-up %s: %w", f.RequestID, err)
		}
		env, err := wire.NewEnvelope(wire.KindRedeliveryRequest, l.Service, f.Origin, req)
		if err != nil {
			return err
		}
		if err := wire.Publish(ctx, l.JS, env, nil); err != nil {
			return fmt.Errorf("publish the stalled answer's follow-up %s to %s (claimed; asked again later): %w", f.RequestID, f.Origin, err)
		}
		l.Metrics.RepairRequested(store.SourceFollowUp, f.Origin)
		l.Logger.Warn("backfill: an origin's answer made no progress; its last follow-up was asked again", "origin", f.Origin,
			"follow_up", f.RequestID, "reask_after", l.ReaskAfter)
	}
	return nil
}

// Request sends one broadcast state-only request for types' history from every origin and marks
// them requested, returning its id: what the loop sends for expansions, and what `streamseal
// backfill` sends for any consumed type. A type this service does not consume is refused
// (store.ErrInvalidInput) before anything is sent.
func Request(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, service string, types []string, maxEvents int, ins *metrics.Instruments) (uuid.UUID, error) {
	if len(types) == 0 {
		return uuid.Nil, ErrNothingToBackfill
	}
	id := uuid.New()
	// Recorded (and the types marked requested) in one transaction before the publish: a
	// request lost on the way is re-asked after ReaskAfter (streamseal.backfill_due).
	tx, err := pool.Begin(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	defer tx.Rollback(ctx)
	if err := store.BackfillRequested(ctx, tx, types, id); err != nil {
		return uuid.Nil, err
	}
	req, err := request(ctx, tx, id, types, maxEvents)
	if err != nil {
		return uuid.Nil, err
	}
	if err := redelivery.SendBroadcastRecord(ctx, tx, store.SentRequest{RequestID: id, Origin: store.BroadcastOrigin,
		Source: store.SourceBackfill}, req); err != nil {
		return uuid.Nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return uuid.Nil, err
	}
	if err := redelivery.PublishBroadcast(ctx, js, service, req); err != nil {
		return id, fmt.Errorf("publish backfill %s (recorded; re-asked after the deadline): %w", id, err)
	}
	ins.BackfillRequested()
	return id, nil
}

// request is the broadcast state-only request for types' history: forwarded copies welcome
// (a service holding copies may answer too, when its operator lets it), and the at-most-once
// occurrences of the types that opted in (streamseal.backfill_include_at_most_once).
func request(ctx context.Context, db store.Querier, id uuid.UUID, types []string, maxEvents int) (wire.RedeliveryRequest, error) {
	atMostOnce, err := store.BackfillAtMostOnceTypes(ctx, db, types)
	if err != nil {
		return wire.RedeliveryRequest{}, err
	}
	return wire.RedeliveryRequest{RequestID: id.String(), Types: types, MaxEvents: maxEvents, StateOnly: true, Copies: true,
		AtMostOnceTypes: atMostOnce}, nil
}

// Operator runs `streamseal backfill`: it sends one broadcast state-only request for types on
// behalf of service (the running control plane stores the bundles, follows truncated answers and
// records each origin's progress), then prints each origin's progress (events shipped, done, rate)
// as it changes until every type is complete or ctx ends.
type Operator struct {
	Pool    *pgxpool.Pool
	JS      jetstream.JetStream
	Service string
	Out     io.Writer
	// Poll is how often progress is read (zero: 200 ms).
	Poll time.Duration
}

// Run sends the backfill and reports until it completes.
func (o *Operator) Run(ctx context.Context, types []string) error {
	id, err := Request(ctx, o.Pool, o.JS, o.Service, types, 0, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "backfill: asked every origin for the history of %v (request %s)\n", types, id)
	poll := o.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	seen := map[string]int64{}
	report := func() error {
		progress, err := store.BackfillProgress(ctx, o.Pool)
		if err != nil {
			return err
		}
		for _, p := range progress {
			if p.Backfill != id {
				continue
			}
			key := p.Origin + map[bool]string{true: "/done", false: ""}[p.Done]
			if seen[key] == p.Shipped && (p.Shipped > 0 || seen[key+"?"] == 1) {
				continue
			}
			seen[key], seen[key+"?"] = p.Shipped, 1
			fmt.Fprintln(o.Out, ProgressLine(p))
		}
		return nil
	}
	for {
		if err := report(); err != nil {
			return err
		}
		consumed, err := store.ConsumedTypes(ctx, o.Pool)
		if err != nil {
			return err
		}
		complete := 0
		for _, c := range consumed {
			if slices.Contains(types, c.EventType) && c.Status == store.ConsumedComplete && c.BackfillRequest != nil && *c.BackfillRequest == id {
				complete++
			}
		}
		if complete == len(types) {
			// The last answer completed the types in the transaction that recorded its
			// progress, which may have committed after the progress was read above: read it
			// again, so the final line of every origin is printed before "complete".
			if err := report(); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "backfill: complete: %v\n", types)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("backfill %s: %d of %d types complete: %w (is the service's control plane running? it stores the answers)",
				id, complete, len(types), ctx.Err())
		case <-time.After(poll):
		}
	}
}

// ProgressLine is one origin's progress on a backfill as `streamseal backfill` prints it:
// events shipped of the total the origin stated (and the percentage), the rate, and done or not.
func ProgressLine(p store.BackfillOriginProgress) string {
	of := ""
	if p.Total != nil {
		of = fmt.Sprintf(" of %d", *p.Total)
		if f := p.Fraction(); f >= 0 {
			of += fmt.Sprintf(" (%.0f%%)", 100*f)
		}
	}
	return fmt.Sprintf("backfill: %s shipped %d events%s (%.0f events/s)%s", p.Origin, p.Shipped, of, p.Rate(),
		map[bool]string{true: ", done", false: ", more to come"}[p.Done])
}
