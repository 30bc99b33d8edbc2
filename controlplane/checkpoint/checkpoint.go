// Package checkpoint is continuity checking: the origin publishes, every interval, what it
// emitted per (tenant, type) in the next origin_seq window, on the event subjects themselves;
// each consumer verifies its store against it (SQL: lanes, floors, holes, two-cycle
// confirmation) and acts on confirmed gaps: a capped, directed redelivery request for exactly the
// missing type_seq ranges, or in report-only mode the record of the request it would send.
// The rules live in sql/functions/checkpoints.sql and lanes.sql; this package moves messages.
package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Publisher publishes this service's checkpoints (origin side).
type Publisher struct {
	Pool     *pgxpool.Pool
	JS       jetstream.JetStream
	Service  string
	Interval time.Duration
	Logger   *slog.Logger

	published atomic.Int64
	rounds    atomic.Int64 // rotates which type's message leads a round
}

// Published counts checkpoint messages published.
func (p *Publisher) Published() int64 { return p.published.Load() }

// Publish takes the next window and publishes one checkpoint per event type (quiet types too;
// a type active for very many tenants as several messages of whole tenants) and returns how
// many messages it published.
// The window advances only when every message was acknowledged; a replica that lost the window
// to another gets nothing and publishes nothing.
func (p *Publisher) Publish(ctx context.Context) (int, error) {
	tx, err := p.Pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	var generation int64
	if err := tx.QueryRow(ctx, "select streamseal.origin_generation()").Scan(&generation); err != nil {
		return 0, fmt.Errorf("read origin generation: %w", err)
	}
	byType := map[string]*wire.Checkpoint{}
	var order []string
	at := time.Now().UTC()
	rows, err := tx.Query(ctx, `
		select window_from, window_to, tenant, event_type, n, first_type_seq, last_type_seq,
		       array(select lower(r) from unnest(coalesce(at_most_once, '{}')) r),
		       array(select upper(r) from unnest(coalesce(at_most_once, '{}')) r)
		from streamseal.next_checkpoint()`)
	if err != nil {
		return 0, fmt.Errorf("next checkpoint: %w", err)
	}
	for rows.Next() {
		var from, to, n int64
		var tenant, eventType *string
		var first, last *int64
		var lo, hi []int64
		if err := rows.Scan(&from, &to, &tenant, &eventType, &n, &first, &last, &lo, &hi); err != nil {
			rows.Close()
			return 0, err
		}
		if eventType == nil {
			continue // the origin has never emitted anything: no type subject to prove
		}
		cp := byType[*eventType]
		if cp == nil {
			cp = &wire.Checkpoint{Origin: p.Service, Control: wire.ControlSubject(p.Service),
				IntervalS: max(1, int(p.Interval.Seconds())), Generation: generation, From: from, To: to, Type: *eventType, At: at}
			byType[*eventType] = cp
			order = append(order, *eventType)
		}
		t := wire.CheckpointTenant{Tenant: deref(tenant), N: n, First: first, Last: last}
		for i := range lo {
			t.AtMostOnce = append(t.AtMostOnce, [2]int64{lo[i], hi[i]})
		}
		cp.Tenants = append(cp.Tenants, t)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("next checkpoint: %w", err)
	}
	// Consumers verify a round's messages in the order they arrive and the per-round repair cap
	// goes to the first lanes with gaps: rotating the lead type each round keeps one type that
	// keeps losing from taking the cap every round while the others wait (invariant 9).
	if len(order) > 0 {
		k := int(p.rounds.Add(1) % int64(len(order)))
		order = append(order[k:], order[:k]...)
	}
	messages := 0
	for _, eventType := range order {
		for _, part := range splitByTenants(*byType[eventType], maxCheckpointBytes) {
			msg, err := wire.CheckpointMessage(part)
			if err != nil {
				return 0, err
			}
			if _, err := p.JS.PublishMsg(ctx, msg); err != nil {
				return 0, fmt.Errorf("publish checkpoint for %s: %w", eventType, err)
			}
			messages++
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	p.published.Add(int64(messages))
	return messages, nil
}

// maxCheckpointBytes bounds the tenants of one checkpoint message, well below NATS's default
// 1 MiB payload limit.
const maxCheckpointBytes = 256 << 10

// splitByTenants splits a type's checkpoint into messages of whole tenants, each a checkpoint of
// the same window and round: a consumer verifies a tenant's lane from the one message naming it,
// so a type active for tens of thousands of tenants still fits the wire. A quiet type stays one
// message with no tenants.
func splitByTenants(cp wire.Checkpoint, budget int) []wire.Checkpoint {
	if len(cp.Tenants) == 0 {
		return []wire.Checkpoint{cp}
	}
	var parts []wire.Checkpoint
	part, size := cp, 0
	part.Tenants = nil
	for _, t := range cp.Tenants {
		encoded, _ := json.Marshal(t)
		if len(part.Tenants) > 0 && size+len(encoded)+1 > budget {
			parts = append(parts, part)
			part, size = cp, 0
			part.Tenants = nil
		}
		part.Tenants = append(part.Tenants, t)
		size += len(encoded) + 1
	}
	return append(parts, part)
}

// Verifier checks this service's store against other origins' checkpoints (consumer side).
type Verifier struct {
	Pool    *pgxpool.Pool
	JS      jetstream.JetStream
	Service string
	Config  config.Config
	Logger  *slog.Logger
	Metrics *metrics.Instruments // nil: not measured

	mu          sync.Mutex
	sentInRound map[string]round // origin -> its current round and the requests sent in it
	waited      map[string]int   // (origin, tenant, type) -> rounds its holes waited for the cap
	received    atomic.Int64
	gaps        atomic.Int64
	requests    atomic.Int64
}

// Counts: checkpoints received, gaps confirmed, repair requests sent (or recorded in report-only).
func (v *Verifier) Counts() (received, gaps, requests int64) {
	return v.received.Load(), v.gaps.Load(), v.requests.Load()
}

// lane is one verify_checkpoint row.
type lane struct {
	tenant, eventType string
	floor             int64
	newlyConfirmed    [][2]int64
	confirmed         [][2]int64
	toRequest         [][2]int64
}

// Handle verifies one checkpoint message. Own checkpoints are ignored.
func (v *Verifier) Handle(ctx context.Context, cp wire.Checkpoint) error {
	if cp.Origin == v.Service {
		return nil
	}
	v.received.Add(1)
	var restored bool
	if err := v.Pool.QueryRow(ctx, "select streamseal.observe_origin($1, $2, $3, $4, $5)",
		cp.Origin, cp.Control, cp.IntervalS, cp.Generation, cp.To).Scan(&restored); err != nil {
		return fmt.Errorf("observe origin %s: %w", cp.Origin, err)
	}
	if restored {
		v.Logger.Info("checkpoint: origin speaks again, liveness alarm cleared", "origin", cp.Origin)
	}
	lanes, err := v.verify(ctx, cp)
	if err != nil {
		return err
	}
	// Within a message, the lanes that waited longest for the cap go first (the tenants of one
	// type take turns as the publisher's rotation makes the types take turns).
	v.mu.Lock()
	slices.SortStableFunc(lanes, func(a, b lane) int {
		return v.waited[laneKey(cp.Origin, b)] - v.waited[laneKey(cp.Origin, a)]
	})
	v.mu.Unlock()
	for _, l := range lanes {
		if len(l.newlyConfirmed) > 0 {
			v.gaps.Add(1)
			v.Logger.Warn("checkpoint: gap confirmed", "origin", cp.Origin, "tenant", l.tenant, "type", l.eventType,
				"type_seqs", ranges(l.newlyConfirmed), "floor", l.floor, "window_from", cp.From, "window_to", cp.To)
		}
		if len(l.toRequest) > 0 {
			if err := v.act(ctx, cp, l); err != nil {
				return err
			}
		}
	}
	return nil
}

func (v *Verifier) verify(ctx context.Context, cp wire.Checkpoint) ([]lane, error) {
	n := len(cp.Tenants)
	tenants, counts := make([]string, n), make([]int64, n)
	firsts, lasts := make([]*int64, n), make([]*int64, n)
	atMostOnce := make([]string, n)
	for i, t := range cp.Tenants {
		tenants[i], counts[i], firsts[i], lasts[i] = t.Tenant, t.N, t.First, t.Last
		atMostOnce[i] = multirange(t.AtMostOnce)
	}
	rows, err := v.Pool.Query(ctx, `
		select tenant, event_type, floor,
		       array(select array[lower(r), upper(r)] from unnest(newly_confirmed) r),
		       array(select array[lower(r), upper(r)] from unnest(confirmed) r),
		       array(select array[lower(r), upper(r)] from unnest(to_request) r)
		from streamseal.verify_checkpoint($1, $2, $3, $4, $5, $6, $7, $8, $9::int8multirange[])`,
		cp.Origin, cp.From, cp.To, cp.Type, tenants, counts, firsts, lasts, atMostOnce)
	if err != nil {
		return nil, fmt.Errorf("verify checkpoint of %s/%s: %w", cp.Origin, cp.Type, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (lane, error) {
		var l lane
		var newly, confirmed, toRequest [][]int64
		err := row.Scan(&l.tenant, &l.eventType, &l.floor, &newly, &confirmed, &toRequest)
		l.newlyConfirmed, l.confirmed, l.toRequest = pairs(newly), pairs(confirmed), pairs(toRequest)
		return l, err
	})
}

// act sends (or, in report-only, records) one repair request for a lane's unrequested holes,
// within the per-checkpoint cap; beyond it the lane waits for the next checkpoint.
func (v *Verifier) act(ctx context.Context, cp wire.Checkpoint, l lane) error {
	req := wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: []string{l.tenant}, Types: []string{l.eventType},
		TypeSeqRanges: l.toRequest, MaxEvents: v.Config.Redelivery.MaxEventsPerRequest}
	body, _ := json.Marshal(req)
	// One checkpoint round (every type's message of one publication) is one cycle of the cap;
	// a quiet round repeats its window, so the round is named by when the origin took it. Rounds
	// of one origin arrive in order on its event stream: only the current one is kept.
	v.mu.Lock()
	if v.sentInRound == nil {
		v.sentInRound, v.waited = map[string]round{}, map[string]int{}
	}
	r := v.sentInRound[cp.Origin]
	if !r.at.Equal(cp.At) {
		r = round{at: cp.At}
	}
	capped := r.sent >= v.Config.MaxAutoRepairRequestsPerCheckpoint
	if capped {
		v.waited[laneKey(cp.Origin, l)]++
	} else {
		r.sent++
		delete(v.waited, laneKey(cp.Origin, l))
	}
	v.sentInRound[cp.Origin] = r
	v.mu.Unlock()
	action := "requested"
	switch {
	case capped:
		action = "waiting_for_cap"
	case v.Config.RepairMode == config.ReportOnly:
		action = "would_request"
	}
	if _, err := v.Pool.Exec(ctx, "select streamseal.record_gap($1, $2, $3, $4::int8multirange, $5, $6, $7, $8, $9)",
		cp.Origin, l.tenant, l.eventType, multirange(l.toRequest), cp.From, cp.To, action, body, cp.At); err != nil {
		return fmt.Errorf("record gap: %w", err)
	}
	if capped {
		return nil
	}
	if action == "requested" {
		env, err := wire.NewEnvelope(wire.KindRedeliveryRequest, v.Service, cp.Origin, req)
		if err != nil {
			return err
		}
		// Directed only to the address the origin announced in its checkpoint.
		if err := wire.PublishTo(ctx, v.JS, cp.Control, env, nil); err != nil {
			return err
		}
	}
	v.requests.Add(1)
	v.Metrics.RepairRequested("checkpoint", cp.Origin)
	if _, err := v.Pool.Exec(ctx, "select streamseal.mark_requested($1, $2, $3, $4::int8multirange)",
		cp.Origin, l.tenant, l.eventType, multirange(l.toRequest)); err != nil {
		return fmt.Errorf("mark requested: %w", err)
	}
	v.Logger.Warn("checkpoint: repair "+strings.ReplaceAll(action, "_", " "), "origin", cp.Origin, "tenant", l.tenant,
		"type", l.eventType, "type_seqs", ranges(l.toRequest), "request", req.RequestID)
	return nil
}

// CheckLiveness raises (logs) the liveness alarm for origins silent for intervals checkpoints.
func (v *Verifier) CheckLiveness(ctx context.Context) error {
	rows, err := v.Pool.Query(ctx, "select origin, silent_for, newly_silent from streamseal.silent_origins($1)", v.Config.LivenessIntervals)
	if err != nil {
		return fmt.Errorf("check liveness: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var origin string
		var silentFor time.Duration
		var newly bool
		if err := rows.Scan(&origin, &silentFor, &newly); err != nil {
			return err
		}
		if newly {
			v.Logger.Error("checkpoint: LIVENESS ALARM: origin silent", "origin", origin, "silent_for", silentFor,
				"intervals", v.Config.LivenessIntervals)
		}
	}
	return rows.Err()
}

// round is one origin's checkpoint round (named by when the origin took it) and the repair
// requests sent in it so far.
type round struct {
	at   time.Time
	sent int
}

func laneKey(origin string, l lane) string { return origin + "\x00" + l.tenant + "\x00" + l.eventType }

func multirange(rs [][2]int64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = "[" + strconv.FormatInt(r[0], 10) + "," + strconv.FormatInt(r[1], 10) + ")"
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func pairs(in [][]int64) [][2]int64 {
	out := make([][2]int64, 0, len(in))
	for _, p := range in {
		if len(p) == 2 {
			out = append(out, [2]int64{p[0], p[1]})
		}
	}
	return out
}

func ranges(rs [][2]int64) string { return multirange(rs) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
