// projections.go: projections and reactors (sql/functions/projections.sql): registration, one
// step of a registered SQL handler, its failures, and the local coverage audit with its findings.

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ChannelHandlers is the NOTIFY channel a handler's registration signals, so a running control
// plane starts running it without polling.
const ChannelHandlers = "streamseal_handlers"

// ChannelUnlisten unsubscribes conn from channel (Listen's inverse).
func ChannelUnlisten(ctx context.Context, conn *pgx.Conn, channel string) error {
	if _, err := conn.Exec(ctx, "unlisten "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("unlisten %s: %w", channel, err)
	}
	return nil
}

// Handler kinds (streamseal.handlers.kind).
const (
	HandlerProjection = "projection"
	HandlerReactor    = "reactor"
)

// ProjectionRegister registers a SQL projection (streamseal.register_projection): handler and
// reset are function names ("schema.fn"); reset "" means none; nil tenants means every tenant.
// It returns "registered", "updated" or "unchanged"; another scope or kind is ErrInvalidInput.
func ProjectionRegister(ctx context.Context, db Querier, name string, types []string, handler string, tenants []string, reset string, fromStart bool) (string, error) {
	var out string
	err := db.QueryRow(ctx, `select streamseal.register_projection($1, $2, $3::regproc, $4, $5::regproc, $6)`,
		name, types, handler, textsOrNull(tenants), textOrNull(reset), fromStart).Scan(&out)
	return out, handlerErr("register projection "+name, err)
}

// ReactorRegister registers a SQL reactor (streamseal.register_reactor), starting at the feed's
// current end.
func ReactorRegister(ctx context.Context, db Querier, name string, types []string, handler string, tenants []string) (string, error) {
	var out string
	err := db.QueryRow(ctx, `select streamseal.register_reactor($1, $2, $3::regproc, $4)`,
		name, types, handler, textsOrNull(tenants)).Scan(&out)
	return out, handlerErr("register reactor "+name, err)
}

// HandlerUnregister removes a handler with its token, cursors, failures and findings; it says
// whether one was registered.
func HandlerUnregister(ctx context.Context, db Querier, name string) (bool, error) {
	var out bool
	err := db.QueryRow(ctx, `select streamseal.unregister_handler($1)`, name).Scan(&out)
	return out, handlerErr("unregister handler "+name, err)
}

// HandlerNames lists the registered SQL handlers (the ones `streamseal run` runs) by name; the
// application runs its own (register_feed_projection, register_feed_reactor).
func HandlerNames(ctx context.Context, db Querier) ([]string, error) {
	rows, err := db.Query(ctx, `select h.name from streamseal.handlers h where h.runs_in = 'control_plane' order by h.name`)
	if err != nil {
		return nil, handlerErr("list handlers", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, handlerErr("list handlers", err)
}

// HandlerStep is what one run_handler call did.
type HandlerStep struct {
	Read, Applied, Skipped, Parked, Failed, Retried int
	// CaughtUp: the read found nothing left, nothing held back behind an open transaction.
	CaughtUp bool
	// OutOfOrder: events a projection held, not applied, because it had applied a later version
	// of their stream (the coverage audit rebuilds the stream in version order).
	OutOfOrder int
	// OrderRebuilds: streams the run then rebuilt in version order (at most
	// run_handler's max_order_rebuilds, 5).
	OrderRebuilds int
}

// HandlerRun runs one step of a registered handler (streamseal.run_handler): due retries, then up
// to max events of its feed. Run it as its own statement (autocommit) or commit db's transaction:
// the handler's writes, its cursors and its token move together.
func HandlerRun(ctx context.Context, db Querier, name string, max int) (HandlerStep, error) {
	var s HandlerStep
	err := db.QueryRow(ctx, `select read, applied, skipped, parked, failed, retried, caught_up, out_of_order, order_rebuilds
		from streamseal.run_handler($1, $2)`,
		name, max).Scan(&s.Read, &s.Applied, &s.Skipped, &s.Parked, &s.Failed, &s.Retried, &s.CaughtUp, &s.OutOfOrder, &s.OrderRebuilds)
	return s, handlerErr("run handler "+name, err)
}

// HandlerRunFailed records why a run of the handler failed as a whole (status shows it until a
// run succeeds).
func HandlerRunFailed(ctx context.Context, db Querier, name, reason string) error {
	_, err := db.Exec(ctx, `update streamseal.handlers set run_error = $2, run_error_at = now() where name = $1`, name, reason)
	return handlerErr("record handler run failure "+name, err)
}

// HandlerNextRetry is when the earliest failed stream of any handler is due again (ok false: none).
func HandlerNextRetry(ctx context.Context, db Querier) (time.Time, bool, error) {
	var at *time.Time
	err := db.QueryRow(ctx, `select min(f.next_attempt_at) from streamseal.handler_failures f`).Scan(&at)
	if err != nil || at == nil {
		return time.Time{}, false, handlerErr("next handler retry", err)
	}
	return *at, true, nil
}

// CoverageLimits bound one coverage audit.
type CoverageLimits struct {
	MaxReports  int
	MaxRebuilds int
	ReportOnly  bool
	// Settle: buckets that moved less than this before a projection last caught up are not judged.
	Settle time.Duration
}

// CoverageAuditResult is what one coverage audit found and did. Requested: streams of
// application projections (feed package) it asked to rebuild themselves.
type CoverageAuditResult struct {
	Gaps, Reported, Rebuilt, WouldRebuild, Deferred, Replayed, Requested int64
}

// CoverageAudit runs the local coverage audit (streamseal.coverage_audit) in db's transaction
// (autocommit: its own).
func CoverageAudit(ctx context.Context, db Querier, lim CoverageLimits) (CoverageAuditResult, error) {
	var r CoverageAuditResult
	err := db.QueryRow(ctx, `select gaps, reported, rebuilt, would_rebuild, deferred, replayed, requested
		from streamseal.coverage_audit($1, $2, $3, make_interval(secs => $4))`,
		lim.MaxReports, lim.MaxRebuilds, lim.ReportOnly, lim.Settle.Seconds()).
		Scan(&r.Gaps, &r.Reported, &r.Rebuilt, &r.WouldRebuild, &r.Deferred, &r.Replayed, &r.Requested)
	return r, handlerErr("coverage audit", err)
}

// HandlerState is one registered handler as `streamseal status` shows it.
type HandlerState struct {
	Name           string     `json:"name"`
	Kind           string     `json:"kind"`
	Types          []string   `json:"event_types"`
	Applied        int64      `json:"applied"`
	CaughtUpAt     *time.Time `json:"caught_up_at"`
	BornLate       bool       `json:"born_late"`
	FailingStreams int64      `json:"failing_streams"`
	OldestFailure  *time.Time `json:"oldest_failure_at"`
	LastError      string     `json:"last_error"`
	Findings       int64      `json:"coverage_findings"`
	RunError       string     `json:"run_error"`
	// RunsIn: "control_plane" (a SQL handler `streamseal run` runs) or "application" (the Go
	// feed package's named subscriber). HeldOutOfOrder: events a projection holds because they
	// landed below a version of their stream it had applied (the coverage audit rebuilds them).
	RunsIn         string `json:"runs_in"`
	HeldOutOfOrder int64  `json:"held_out_of_order"`
}

// HandlerStates lists every registered handler with its failures and coverage findings.
func HandlerStates(ctx context.Context, db Querier) ([]HandlerState, error) {
	rows, err := db.Query(ctx, `
		select h.name, h.kind, h.event_types, h.applied, h.caught_up_at, h.born_late,
		       (select count(*) from streamseal.handler_failures f where f.handler = h.name),
		       (select min(f.first_failed_at) from streamseal.handler_failures f where f.handler = h.name),
		       coalesce((select f.error from streamseal.handler_failures f where f.handler = h.name
		                 order by f.last_failed_at desc limit 1), ''),
		       (select count(*) from streamseal.coverage_findings c where c.projection = h.name),
		       coalesce(h.run_error, ''), h.runs_in,
		       (select count(*) from streamseal.projection_held o where o.projection = h.name)
		from streamseal.handlers h
		order by h.name`)
	if err != nil {
		return nil, handlerErr("handler states", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (HandlerState, error) {
		var s HandlerState
		err := r.Scan(&s.Name, &s.Kind, &s.Types, &s.Applied, &s.CaughtUpAt, &s.BornLate, &s.FailingStreams,
			&s.OldestFailure, &s.LastError, &s.Findings, &s.RunError, &s.RunsIn, &s.HeldOutOfOrder)
		return s, err
	})
	return out, handlerErr("handler states", err)
}

// CoverageFinding is one recorded coverage finding (streamseal.coverage_findings).
type CoverageFinding struct {
	Projection, Origin, Tenant, EventType, StreamID, Kind, Action string
	StoreN, CursorN                                               int64
	Audits                                                        int
}

// CoverageFindings lists up to max recorded findings, the oldest first.
func CoverageFindings(ctx context.Context, db Querier, max int) ([]CoverageFinding, error) {
	rows, err := db.Query(ctx, `
		select c.projection, c.origin, c.tenant, c.event_type, c.stream_id, c.kind, c.action, c.store_n, c.cursor_n, c.audits
		from streamseal.coverage_findings c
		order by c.first_found_at, c.projection, c.origin, c.stream_id, c.event_type
		limit $1`, max)
	if err != nil {
		return nil, handlerErr("coverage findings", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CoverageFinding, error) {
		var f CoverageFinding
		err := r.Scan(&f.Projection, &f.Origin, &f.Tenant, &f.EventType, &f.StreamID, &f.Kind, &f.Action, &f.StoreN, &f.CursorN, &f.Audits)
		return f, err
	})
	return out, handlerErr("coverage findings", err)
}

// handlerErr is classify for a result that may be no error.
func handlerErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return classify(op, err)
}

// FeedProjectionRegister registers a projection the application runs through the feed package
// (streamseal.register_feed_projection): its cursors and token are written by
// FeedHandlerAdvance in each batch's transaction, so the coverage audit covers it. resettable:
// the application can reset one stream (the audit then requests rebuilds, ProjectionRebuildTake).
// It returns "registered", "updated" or "unchanged"; another scope, kind or runner is
// ErrInvalidInput.
func FeedProjectionRegister(ctx context.Context, db Querier, name string, types, tenants []string, resettable, fromStart bool) (string, error) {
	var out string
	err := db.QueryRow(ctx, `select streamseal.register_feed_projection($1, $2, $3, $4, $5)`,
		name, types, textsOrNull(tenants), resettable, fromStart).Scan(&out)
	return out, handlerErr("register feed projection "+name, err)
}

// FeedReactorRegister registers a reactor the application runs through the feed package
// (streamseal.register_feed_reactor), starting at the feed's current end.
func FeedReactorRegister(ctx context.Context, db Querier, name string, types, tenants []string) (string, error) {
	var out string
	err := db.QueryRow(ctx, `select streamseal.register_feed_reactor($1, $2, $3)`, name, types, textsOrNull(tenants)).Scan(&out)
	return out, handlerErr("register feed reactor "+name, err)
}

// HandlerToken is a registered handler's stored resume token ("" from the beginning); ok false:
// no handler of that name.
func HandlerToken(ctx context.Context, db Querier, name string) (string, bool, error) {
	var tok *string
	err := db.QueryRow(ctx, `select h.token from streamseal.handlers h where h.name = $1`, name).Scan(&tok)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, handlerErr("handler token "+name, err)
	}
	if tok == nil {
		return "", true, nil
	}
	return *tok, true, nil
}

// ErrHandlerTokenMoved: another process advanced the handler since this batch was read
// (FeedHandlerAdvance); roll back and resume from the stored token.
var ErrHandlerTokenMoved = errors.New("the handler's token moved: another process runs it")

// FeedHandlerAdvance is an application handler's half of a batch, in the batch's transaction
// (streamseal.feed_handler_advance): it stores to (the token after the batch) if from is still
// the stored token (else ErrHandlerTokenMoved), folds a projection's cursors over the batch, and
// returns the ids of the events the handler must leave out: replayed by a rebuild already, or
// held because a later version of their stream was applied (nil: none, the common case).
func FeedHandlerAdvance(ctx context.Context, db Querier, name, from, to string, events []FeedEvent, caughtUp bool) (map[uuid.UUID]bool, error) {
	ids := make([]uuid.UUID, len(events))
	seqs := make([]int64, len(events))
	for i, e := range events {
		ids[i], seqs[i] = e.EventID, e.OriginSeq
	}
	rows, err := db.Query(ctx, `select u from streamseal.feed_handler_advance($1, $2, $3, $4, $5, $6) u`,
		name, from, to, ids, seqs, caughtUp)
	if err != nil {
		return nil, advanceErr(name, err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, advanceErr(name, err)
	}
	if len(left) == 0 {
		return nil, nil
	}
	out := make(map[uuid.UUID]bool, len(left))
	for _, id := range left {
		out[id] = true
	}
	return out, nil
}

func advanceErr(name string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55006" {
		return fmt.Errorf("advance handler %s: %w (%s)", name, ErrHandlerTokenMoved, pgErr.Message)
	}
	return handlerErr("advance handler "+name, err)
}

// ProjectionStream names one stream of a projection (what a rebuild resets and replays).
type ProjectionStream struct {
	Origin, Tenant, StreamID string
}

// ProjectionRebuildTake takes the oldest rebuild the coverage audit requested of an application
// projection (streamseal.projection_rebuild_take) in db's transaction, which must reset the
// stream and apply ProjectionRebuildReplay's events before it commits; ok false: none requested.
func ProjectionRebuildTake(ctx context.Context, db Querier, name string) (ProjectionStream, bool, error) {
	var s ProjectionStream
	err := db.QueryRow(ctx, `select origin, tenant, stream_id from streamseal.projection_rebuild_take($1)`, name).
		Scan(&s.Origin, &s.Tenant, &s.StreamID)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false, nil
	}
	return s, err == nil, handlerErr("take a rebuild of "+name, err)
}

// ProjectionRebuildReplay returns one stream's events of an application projection's types in
// stream_version order and refolds its cursors as applied (streamseal.projection_rebuild_replay),
// in db's transaction. An own event not stamped yet has OriginSeq and TypeSeq 0.
func ProjectionRebuildReplay(ctx context.Context, db Querier, name string, s ProjectionStream) ([]FeedEvent, error) {
	rows, err := db.Query(ctx, `
		select e.event_id, e.origin, coalesce(e.origin_seq, 0), coalesce(e.type_seq, 0), e.tenant, e.stream_id,
		       e.stream_version, e.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
		from streamseal.projection_rebuild_replay($1, $2, $3, $4) e`, name, s.Origin, s.Tenant, s.StreamID)
	if err != nil {
		return nil, handlerErr("replay a stream of "+name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (FeedEvent, error) {
		var e FeedEvent
		var flags int32
		err := r.Scan(&e.EventID, &e.Origin, &e.OriginSeq, &e.TypeSeq, &e.Tenant, &e.StreamID, &e.StreamVersion,
			&e.EventType, &flags, &e.Payload, &e.Metadata, &e.OccurredAt, &e.StoredAt)
		e.Flags = Flags(flags)
		return e, err
	})
	return out, handlerErr("replay a stream of "+name, err)
}
