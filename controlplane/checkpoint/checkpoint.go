// Package checkpoint is continuity checking: the origin publishes, every interval, what it
// emitted per (tenant, type) in the next origin_seq window, one message on the event subject of
// each (tenant, type) with events in it (so a consumer subscribed to some tenants sees only
// theirs), and one beat on its beat subject (liveness; quiet pairs are not repeated);
// each consumer verifies its store against it (SQL: lanes, floors, holes, two-cycle
// confirmation, or confirmation at first sight when the inbox proved order) and acts on confirmed gaps: a capped, directed redelivery request for exactly the
// missing type_seq ranges, or in report-only mode the record of the request it would send.
// The rules live in sql/functions/checkpoints.sql and lanes.sql; this package moves messages.
package checkpoint

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Publisher publishes this service's checkpoints (origin side).
type Publisher struct {
	Pool     *pgxpool.Pool
	JS       jetstream.JetStream
	Service  string
	Interval time.Duration
	// Timeout bounds one round's publication (zero: PublishTimeoutDefault).
	Timeout time.Duration
	Logger  *slog.Logger

	published atomic.Int64
	beats     atomic.Int64
	rounds    atomic.Int64 // rotates which type's message leads a round
}

// Published counts checkpoint messages published (one per (tenant, type) with events in a window).
func (p *Publisher) Published() int64 { return p.published.Load() }

// Beats counts liveness beats published (one per round).
func (p *Publisher) Beats() int64 { return p.beats.Load() }

// Publish takes the next window and publishes one checkpoint per (tenant, type) with events in
// it, each on that pair's event subject, and one beat on the origin's beat subject
// (wire.BeatSubject), and returns how many checkpoints it published. Quiet pairs are not
// repeated (issue 21 item 3: a round costs what happened plus one beat): the beat keeps the
// origin alive for every consumer (liveness) and makes consumers re-evaluate their lanes of this
// origin that hold holes. The window advances only when every message was acknowledged; a
// replica that lost the window to another gets nothing and publishes nothing.
func (p *Publisher) Publish(ctx context.Context) (int, error) {
	tx, err := p.Pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	generation, err := store.OriginGeneration(ctx, tx)
	if err != nil {
		return 0, err
	}
	rows, err := store.CheckpointNext(ctx, tx)
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, nil // another replica holds the window this round
	}
	var order []wire.Checkpoint
	at := time.Now().UTC()
	var beat *wire.Beat
	var lanes []wire.BeatLane
	for _, row := range rows {
		if row.EventType == nil {
			// The liveness row, one per round: the origin's beat.
			beat = &wire.Beat{Origin: p.Service, IntervalS: max(1, int(p.Interval.Seconds())),
				Generation: generation, At: at, From: row.From, To: row.To}
			continue
		}
		if row.Last != nil {
			lanes = append(lanes, wire.BeatLane{Tenant: deref(row.Tenant), Type: *row.EventType, Last: *row.Last})
		}
		order = append(order, wire.Checkpoint{Origin: p.Service,
			IntervalS: max(1, int(p.Interval.Seconds())), Generation: generation, From: row.From, To: row.To,
			Type: *row.EventType, At: at,
			Tenants: []wire.CheckpointTenant{{Tenant: deref(row.Tenant), N: row.N, First: row.First, Last: row.Last,
				AtMostOnce: row.AtMostOnce}}})
	}
	// Consumers verify a round's messages in the order they arrive and the per-round repair cap
	// goes to the first lanes with gaps: rotating the lead pair each round keeps one lane that
	// keeps losing from taking the cap every round while the others wait (invariant 9).
	if len(order) > 0 {
		k := int(p.rounds.Add(1) % int64(len(order)))
		order = append(order[k:], order[:k]...)
	}
	// The window's row stays locked until the commit: a broker that does not acknowledge within
	// the deadline releases it (rollback) for the next round instead of holding every other
	// replica's round behind a job timeout.
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = PublishTimeoutDefault
	}
	publishCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Published asynchronously (one message per pair with events can be many), never more than
	// publishWindow unacknowledged (the connection's own window is shared with the relay and
	// refuses publishes past it: "too many outstanding async published messages"), and every
	// acknowledgement awaited before the commit.
	futures := make([]jetstream.PubAckFuture, 0, len(order)+1)
	awaited := 0
	await := func(upTo int) error {
		for ; awaited < upTo; awaited++ {
			select {
			case <-futures[awaited].Ok():
			case err := <-futures[awaited].Err():
				if awaited >= len(order) {
					return fmt.Errorf("publish beat: %w", err)
				}
				return fmt.Errorf("publish checkpoint for %q/%s: %w", order[awaited].Tenants[0].Tenant, order[awaited].Type, err)
			case <-publishCtx.Done():
				return fmt.Errorf("publish checkpoint round: %w", publishCtx.Err())
			}
		}
		return nil
	}
	for _, cp := range order {
		if len(futures)-awaited >= publishWindow {
			if err := await(len(futures) - publishWindow/2); err != nil {
				return 0, err
			}
		}
		msg, err := wire.CheckpointMessage(cp)
		if err != nil {
			return 0, err
		}
		f, err := p.JS.PublishMsgAsync(msg)
		if err != nil {
			return 0, fmt.Errorf("publish checkpoint for %q/%s: %w", cp.Tenants[0].Tenant, cp.Type, err)
		}
		futures = append(futures, f)
	}
	// The beat goes last: published after the round's checkpoints, so a consumer that sees it
	// has been offered every checkpoint of the round on the pairs' subjects. It lists the pairs
	// the round checkpointed (in parts when they are many: wire.BeatParts), so a consumer knows
	// which lanes the round announced before it verifies their checkpoints (issue 17).
	if beat != nil {
		for _, part := range wire.BeatParts(*beat, lanes) {
			if len(futures)-awaited >= publishWindow {
				if err := await(len(futures) - publishWindow/2); err != nil {
					return 0, err
				}
			}
			msg, err := wire.BeatMessage(part)
			if err != nil {
				return 0, err
			}
			f, err := p.JS.PublishMsgAsync(msg)
			if err != nil {
				return 0, fmt.Errorf("publish beat: %w", err)
			}
			futures = append(futures, f)
		}
	}
	if err := await(len(futures)); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	p.published.Add(int64(len(order)))
	if beat != nil {
		p.beats.Add(1)
	}
	return len(order), nil
}

// publishWindow bounds a round's unacknowledged checkpoint publishes (well inside the JetStream
// context's default window of 4000 outstanding asynchronous publishes, which the relay shares).
const publishWindow = 256

// PublishTimeoutDefault bounds one round's publication, well inside River's job timeout (one
// minute): past it the round is given back and published again by the next run.
const PublishTimeoutDefault = 10 * time.Second

// Verifier checks this service's store against other origins' checkpoints (consumer side).
type Verifier struct {
	Pool    *pgxpool.Pool
	JS      jetstream.JetStream
	Service string
	Config  config.Config
	Logger  *slog.Logger
	Metrics *metrics.Instruments // nil: not measured
	// Started is when this process started (zero: every answer on record counts): only requests
	// sent since then tell how long the origin's answers take (store.RequestBackoff.AnswersSince).
	Started time.Time

	// exclusive serializes a beat of an origin with that origin's checkpoints: each checkpoint
	// touches only the lanes of its subject, which one inbox consumer verifies in order, but a
	// beat touches every lane of the origin holding holes; run concurrently, both verdicts could
	// offer the same hole before either marked it requested, and it would be asked twice.
	exclusive   sync.Map // origin -> *sync.RWMutex: checkpoints read-lock, beats lock
	mu          sync.Mutex
	sentInRound map[string]map[time.Time]int // origin -> its recent rounds -> requests sent in each
	served      map[string]int64             // (origin, tenant, type) -> when it last took the cap (serveSeq)
	serveSeq    int64                        // counts the cap's grants: the fairness order's clock
	cappedAt    map[string]time.Time         // (origin, tenant, type) -> the latest round it waited in
	forgotten   map[string]time.Time         // origin -> the latest of its rounds whose count was dropped (roundsKept)
	received    atomic.Int64
	beats       atomic.Int64
	gaps        atomic.Int64
	requests    atomic.Int64
}

// Counts: checkpoints received, gaps confirmed, repair requests sent (or recorded in report-only).
func (v *Verifier) Counts() (received, gaps, requests int64) {
	return v.received.Load(), v.gaps.Load(), v.requests.Load()
}

// Beats counts other origins' beats received.
func (v *Verifier) Beats() int64 { return v.beats.Load() }

// Handle verifies one checkpoint message whose order nobody proved (two-cycle confirmation).
// Own checkpoints are ignored.
func (v *Verifier) Handle(ctx context.Context, cp wire.Checkpoint) error {
	return v.Verify(ctx, cp, false)
}

// Verify verifies one checkpoint message; ordered is the inbox's proof that every message before
// it on its subject was committed (inbox.Inbox.OnCheckpoint), which lets a hole in the window the
// checkpoint announces be confirmed and requested at once instead of one checkpoint later.
// Own checkpoints are ignored.
func (v *Verifier) Verify(ctx context.Context, cp wire.Checkpoint, ordered bool) error {
	return v.VerifyRun(ctx, []wire.Checkpoint{cp}, ordered)
}

// VerifyRun verifies a run of checkpoint messages in the order received: the inbox records them
// as they arrive and its verifier loop hands them over oldest first (inbox.Inbox.OnCheckpoint),
// so live events never wait for this (issue 21 item 3). Consecutive messages of one round of one
// origin and type (a round is one message per tenant) are verified as one window in one call, so
// a round over many tenants costs the consumer a few statements, not one transaction per tenant.
// Own checkpoints are ignored.
func (v *Verifier) VerifyRun(ctx context.Context, cps []wire.Checkpoint, ordered bool) error {
	for len(cps) > 0 {
		// A window names each tenant once (SQL refuses a repeat): a repeated message starts
		// the next call.
		n := 1
		if len(cps[0].Tenants) == 1 {
			tenants := map[string]bool{cps[0].Tenants[0].Tenant: true}
			for n < len(cps) && sameWindow(cps[0], cps[n]) && len(cps[n].Tenants) == 1 && !tenants[cps[n].Tenants[0].Tenant] {
				tenants[cps[n].Tenants[0].Tenant] = true
				n++
			}
		}
		if err := v.verifyWindow(ctx, cps[:n], ordered); err != nil {
			return err
		}
		cps = cps[n:]
	}
	return nil
}

// sameWindow says whether two checkpoint messages belong to one round's window of one type.
func sameWindow(a, b wire.Checkpoint) bool {
	return a.Origin == b.Origin && a.Type == b.Type && a.From == b.From && a.To == b.To && a.At.Equal(b.At) &&
		a.Generation == b.Generation && a.IntervalS == b.IntervalS
}

// verifyWindow verifies messages of one window (sameWindow) as one.
func (v *Verifier) verifyWindow(ctx context.Context, cps []wire.Checkpoint, ordered bool) error {
	cp := cps[0]
	if cp.Origin == v.Service {
		return nil
	}
	v.received.Add(int64(len(cps)))
	lock := v.originLock(cp.Origin)
	lock.RLock()
	defer lock.RUnlock()
	if err := v.observe(ctx, cp.Origin, cp.IntervalS, cp.Generation, cp.To); err != nil {
		return err
	}
	w := window(cp)
	for _, other := range cps[1:] {
		w.Tenants = append(w.Tenants, window(other).Tenants...)
	}
	w.Ordered = ordered
	lanes, err := store.CheckpointVerify(ctx, v.Pool, w)
	if err != nil {
		return err
	}
	return v.judge(ctx, cp, lanes)
}

// Beat takes one beat of another origin (one per round, on wire.BeatSubject): the origin is
// alive (liveness, silent_origins), and this store's lanes of it that hold holes are
// re-evaluated as a heartbeat checkpoint once did for every pair (streamseal.verify_beat), so a
// tail loss of a pair that went quiet is confirmed and requested, and a hole waiting for the cap
// or for its re-ask deadline is offered again, without the origin repeating its quiet pairs.
// Own beats are ignored.
//
// A listed beat (Parts > 0, issue 17) is also recorded as its round's part
// (streamseal.record_lane_round): the origin's lane-set mark, which the feed's certification
// never passes, moves over the round once every pair it lists has a lane announced that far.
// Parts after the first only record their list: the first is the round's beat.
func (v *Verifier) Beat(ctx context.Context, b wire.Beat) error {
	if b.Origin == v.Service {
		return nil
	}
	lock := v.originLock(b.Origin)
	lock.Lock()
	defer lock.Unlock()
	if b.Part > 1 {
		return v.recordLanes(ctx, b)
	}
	v.beats.Add(1)
	if err := v.observe(ctx, b.Origin, b.IntervalS, b.Generation, b.To); err != nil {
		return err
	}
	if err := v.recordLanes(ctx, b); err != nil {
		if !errors.Is(err, store.ErrInvalidInput) {
			return err
		}
		// A list SQL refuses is refused again: the round stays unaccounted for (the origin's
		// tokens stop rising: more replay, never a skip), and the beat's liveness work goes on.
		v.Logger.Error("checkpoint: beat's lane list refused", "origin", b.Origin, "round", b.At, "err", err)
	}
	lanes, err := store.CheckpointVerifyBeat(ctx, v.Pool, b.Origin, b.From, b.To)
	if err != nil {
		return err
	}
	// The beat names the round its checkpoints were taken in (At): re-asks share that round's cap.
	return v.judge(ctx, wire.Checkpoint{Origin: b.Origin, IntervalS: b.IntervalS, Generation: b.Generation,
		At: b.At, From: b.From, To: b.To}, lanes)
}

// recordLanes records a listed beat's part (an older sender's beat lists nothing: nothing to record).
func (v *Verifier) recordLanes(ctx context.Context, b wire.Beat) error {
	if b.Parts == 0 {
		return nil
	}
	r := store.LaneRound{Origin: b.Origin, At: b.At, From: b.From, To: b.To, Part: b.Part, Parts: b.Parts}
	for _, l := range b.Lanes {
		r.Tenants, r.Types, r.Lasts = append(r.Tenants, l.Tenant), append(r.Types, l.Type), append(r.Lasts, l.Last)
	}
	if _, err := store.LaneRoundRecord(ctx, v.Pool, r); err != nil {
		return fmt.Errorf("record the lanes of %s's round %s: %w", b.Origin, b.At.Format(time.RFC3339Nano), err)
	}
	return nil
}

// originLock is origin's lock between its checkpoints and its beats (see exclusive).
func (v *Verifier) originLock(origin string) *sync.RWMutex {
	l, _ := v.exclusive.LoadOrStore(origin, &sync.RWMutex{})
	return l.(*sync.RWMutex)
}

// observe records that origin spoke (a checkpoint or a beat): its address, interval, generation
// and window end; a liveness alarm raised for it clears.
func (v *Verifier) observe(ctx context.Context, origin string, intervalS int, generation, to int64) error {
	restored, err := store.OriginObserve(ctx, v.Pool, store.OriginSighting{Origin: origin,
		// The address is computed from the authenticated names, never the message's (invariant 12).
		Control:   wire.ControlSubjectFrom(origin, v.Service),
		IntervalS: intervalS, Generation: generation, To: to})
	if err != nil {
		return err
	}
	if restored {
		v.Logger.Info("checkpoint: origin speaks again, liveness alarm cleared", "origin", origin)
	}
	return nil
}

// judge logs the gaps lanes newly confirmed and acts on their holes to request, for the round cp
// names.
func (v *Verifier) judge(ctx context.Context, cp wire.Checkpoint, lanes []store.LaneVerdict) error {
	// Within a message (a beat offers many lanes), the least recently served lanes go first:
	// the one fairness order act applies (the tenants of one type take turns as the publisher's
	// rotation makes the types take turns).
	v.mu.Lock()
	slices.SortStableFunc(lanes, func(a, b store.LaneVerdict) int {
		return cmp.Compare(v.served[laneKey(cp.Origin, a)], v.served[laneKey(cp.Origin, b)])
	})
	v.mu.Unlock()
	for _, l := range lanes {
		if len(l.NewlyConfirmed) > 0 {
			v.gaps.Add(1)
			v.Logger.Warn("checkpoint: gap confirmed", "origin", cp.Origin, "tenant", l.Tenant, "type", l.EventType,
				"type_seqs", ranges(l.NewlyConfirmed), "floor", l.Floor, "window_from", cp.From, "window_to", cp.To)
		}
		if len(l.ToRequest) > 0 {
			if err := v.act(ctx, cp, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// window is the store's view of a received checkpoint message.
func window(cp wire.Checkpoint) store.CheckpointWindow {
	w := store.CheckpointWindow{Origin: cp.Origin, From: cp.From, To: cp.To, EventType: cp.Type}
	for _, t := range cp.Tenants {
		w.Tenants = append(w.Tenants, store.CheckpointTenant{Tenant: t.Tenant, N: t.N, First: t.First, Last: t.Last, AtMostOnce: t.AtMostOnce})
	}
	return w
}

// act sends (or, in report-only, records) one repair request for a lane's unrequested holes,
// within the per-checkpoint cap; beyond it the lane waits for the next checkpoint.
func (v *Verifier) act(ctx context.Context, cp wire.Checkpoint, l store.LaneVerdict) error {
	req := wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: []string{l.Tenant}, Types: []string{l.EventType},
		TypeSeqRanges: l.ToRequest, MaxEvents: v.Config.Redelivery.MaxEventsPerRequest}
	body, _ := json.Marshal(req)
	// One checkpoint round (every (tenant, type) message of one publication) is one cycle of the
	// cap; a quiet round repeats its window, so the round is named by when the origin took it.
	// The inbox verifies each subject's messages on its own consumer, so one origin's rounds
	// interleave across subjects: the counts of its recent rounds are kept, not just the last.
	// Fairness (invariant 9) no longer follows from arrival order alone, since subjects race and
	// the beat (which re-offers every lane holding holes, on its own durable) races them all: one
	// order serves checkpoints and beats alike, least recently served first. A lane yields the
	// cap to any lane of the origin that was served less recently (or never) and was still
	// waiting in the previous round or later (so a lane that went quiet or healed cannot hold the
	// cap back for more than one round). Both marks ignore how many messages offered a lane and
	// in which order: the grant clock only moves forward, and a late beat of an older round never
	// moves a lane's latest waiting round back.
	v.mu.Lock()
	if v.sentInRound == nil {
		v.sentInRound, v.served, v.cappedAt = map[string]map[time.Time]int{}, map[string]int64{}, map[string]time.Time{}
		v.forgotten = map[string]time.Time{}
	}
	rounds := v.sentInRound[cp.Origin]
	if rounds == nil {
		rounds = map[time.Time]int{}
		v.sentInRound[cp.Origin] = rounds
	}
	at := cp.At.UTC()
	// A round already forgotten (a checkpoint verified behind many later rounds: the inbox
	// verifies at its own pace) may have spent its cap: it takes no more requests, and the lane
	// waits for a later round (the next beat offers it again).
	_, known := rounds[at]
	forgotten := !known && !at.After(v.forgotten[cp.Origin])
	if !known && !forgotten {
		rounds[at] = 0
	}
	key := laneKey(cp.Origin, l)
	capped := forgotten || rounds[at] >= v.Config.MaxAutoRepairRequestsPerCheckpoint || v.yields(cp.Origin, key, previousRound(rounds, at))
	if capped {
		if at.After(v.cappedAt[key]) {
			v.cappedAt[key] = at
		}
	} else {
		rounds[at]++
		v.serveSeq++
		v.served[key] = v.serveSeq
		delete(v.cappedAt, key)
	}
	if dropped := forgetOldRounds(rounds); dropped.After(v.forgotten[cp.Origin]) {
		v.forgotten[cp.Origin] = dropped
	}
	v.mu.Unlock()
	action := "requested"
	switch {
	case capped:
		action = "waiting_for_cap"
	case v.Config.RepairMode == config.ReportOnly:
		action = "would_request"
	}
	if err := store.LaneGapRecord(ctx, v.Pool, store.Gap{Origin: cp.Origin, Tenant: l.Tenant, EventType: l.EventType,
		TypeSeqs: l.ToRequest, From: cp.From, To: cp.To, Action: action, Request: body, Round: cp.At}); err != nil {
		return err
	}
	if capped {
		return nil
	}
	if action == "requested" {
		// Recorded, then directed only to the address the origin announced (known_origins).
		if err := redelivery.Send(ctx, v.Pool, v.JS, v.Service, cp.Origin, store.SourceCheckpoint, req, uuid.Nil); err != nil {
			return err
		}
	}
	v.requests.Add(1)
	v.Metrics.RepairRequested("checkpoint", cp.Origin)
	attempts, err := store.LaneMarkRequested(ctx, v.Pool, cp.Origin, l.Tenant, l.EventType, l.ToRequest,
		store.RequestBackoff{Base: v.Config.RepairRetryAfter, MaxAttempts: v.Config.MaxRepairAttemptsPerBucket, AnswersSince: v.Started})
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if attempts >= v.Config.MaxRepairAttemptsPerBucket {
		// The budget is spent: the lane keeps being asked at the slowest rung, and says so loudly.
		level = slog.LevelError
	}
	v.Logger.Log(ctx, level, "checkpoint: repair "+strings.ReplaceAll(action, "_", " "), "origin", cp.Origin, "tenant", l.Tenant,
		"type", l.EventType, "type_seqs", ranges(l.ToRequest), "request", req.RequestID, "attempt", attempts,
		"budget_spent", attempts >= v.Config.MaxRepairAttemptsPerBucket)
	return nil
}

// Tracked counts the lanes and origins the verifier keeps fairness state for (a test witness).
func (v *Verifier) Tracked() (lanes, origins int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	keys := map[string]bool{}
	for k := range v.served {
		keys[k] = true
	}
	for k := range v.cappedAt {
		keys[k] = true
	}
	return len(keys), len(v.sentInRound)
}

// Prune forgets the fairness state (when a lane was last served, the latest round it waited in)
// of lanes this store no longer holds (their type or tenant unsubscribed: SQL forgets such lanes),
// and the recent rounds of origins left with no lane, so the verifier's memory follows the lanes
// that exist rather than every lane that ever took the cap. The checkpoint job calls it every
// interval; it costs one key lookup per remembered lane. A lane born again later starts as never
// served (first in the order), as a new lane does.
func (v *Verifier) Prune(ctx context.Context) error {
	v.mu.Lock()
	seen := map[string]bool{}
	var keys []store.LaneKey
	add := func(key string) {
		if seen[key] {
			return
		}
		seen[key] = true
		if parts := strings.SplitN(key, "\x00", 3); len(parts) == 3 {
			keys = append(keys, store.LaneKey{Origin: parts[0], Tenant: parts[1], EventType: parts[2]})
		}
	}
	for k := range v.served {
		add(k)
	}
	for k := range v.cappedAt {
		add(k)
	}
	var origins []string
	for origin := range v.sentInRound {
		origins = append(origins, origin)
	}
	v.mu.Unlock()
	if len(keys) == 0 && len(origins) == 0 {
		return nil
	}
	present, holding, err := store.LanesPresent(ctx, v.Pool, keys, origins)
	if err != nil {
		return fmt.Errorf("prune the verifier's fairness state: %w", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	lanes, gone := 0, 0
	for _, k := range keys {
		if present[k] {
			continue
		}
		key := k.Origin + "\x00" + k.Tenant + "\x00" + k.EventType
		delete(v.served, key)
		delete(v.cappedAt, key)
		lanes++
	}
	for _, origin := range origins {
		if !holding[origin] {
			delete(v.sentInRound, origin)
			delete(v.forgotten, origin)
			gone++
		}
	}
	if lanes > 0 || gone > 0 {
		v.Logger.Info("checkpoint: verifier forgot the fairness state of lanes no longer held", "lanes", lanes, "origins", gone)
	}
	return nil
}

// CheckLiveness raises (logs) the liveness alarm for origins silent for intervals checkpoints.
func (v *Verifier) CheckLiveness(ctx context.Context) error {
	silent, err := store.OriginsSilent(ctx, v.Pool, v.Config.LivenessIntervals)
	if err != nil {
		return err
	}
	for _, o := range silent {
		if o.Newly {
			v.Logger.Error("checkpoint: LIVENESS ALARM: origin silent", "origin", o.Origin, "silent_for", o.SilentFor,
				"intervals", v.Config.LivenessIntervals)
		}
	}
	return nil
}

// yields says whether lane key of origin must leave the cap to a lane of origin that was served
// less recently (or never) and was still waiting in round prev (or later). Called with v.mu held.
func (v *Verifier) yields(origin, key string, prev time.Time) bool {
	if prev.IsZero() {
		return false
	}
	prefix := origin + "\x00"
	for other, waitedIn := range v.cappedAt {
		if other != key && strings.HasPrefix(other, prefix) && v.served[other] < v.served[key] && !waitedIn.Before(prev) {
			return true
		}
	}
	return false
}

// previousRound is the latest round of rounds before at (zero when none is known).
func previousRound(rounds map[time.Time]int, at time.Time) time.Time {
	var prev time.Time
	for r := range rounds {
		if r.Before(at) && r.After(prev) {
			prev = r
		}
	}
	return prev
}

// roundsKept bounds the rounds of one origin whose request counts are kept: more than the
// subjects' consumers are usually apart, so a late message of an old round still finds its count.
// A message of a round older than every kept one (the inbox verifies recorded checkpoints at its
// own pace, behind later rounds' beats) counts its round's cap as spent.
const roundsKept = 64

// forgetOldRounds drops the oldest rounds beyond roundsKept and returns the latest it dropped
// (zero when none).
func forgetOldRounds(rounds map[time.Time]int) time.Time {
	var dropped time.Time
	for len(rounds) > roundsKept {
		var oldest time.Time
		for at := range rounds {
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
		delete(rounds, oldest)
		dropped = oldest
	}
	return dropped
}

func laneKey(origin string, l store.LaneVerdict) string {
	return origin + "\x00" + l.Tenant + "\x00" + l.EventType
}

// ranges renders type_seq ranges for a log line.
func ranges(rs [][2]int64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = "[" + strconv.FormatInt(r[0], 10) + "," + strconv.FormatInt(r[1], 10) + ")"
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
