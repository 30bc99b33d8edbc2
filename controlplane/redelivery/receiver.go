// receiver.go: the consumer side. A Receiver stores the bundles that come back through
// streamseal.ingest with their identity intact and reports each origin's summary. A bundle that is
// not internally consistent (ids and payloads disagree, or it claims another origin's events) is
// refused whole.

package redelivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Receiver stores redelivered bundles and surfaces summaries for one service.
type Receiver struct {
	Pool    *pgxpool.Pool
	JS      jetstream.JetStream // for the follow-ups of truncated answers; nil: none sent
	Service string
	Logger  *slog.Logger
	Metrics *metrics.Instruments // nil: not measured
	// OnSummary, when set, observes every summary an origin sends this service.
	OnSummary func(wire.RedeliverySummary)
	// OnStored, when set, observes each ingest of bundles: how many bundles and events it stored
	// and how long their answer checks and the ingest took (benchmarks break a backfill down with it).
	OnStored func(bundles, events int, took time.Duration)
	// IngestParallel is how many ingests one run of bundles is split into, each of whole bundles
	// in its own transaction, run at once (zero: IngestParallelDefault; 1: one ingest a run).
	IngestParallel int
	// AcceptUnservable records every type_seq range an origin says it cannot serve as an accepted
	// loss of the lane (streamseal.accept_loss), so the lane's floor moves past it and nobody asks
	// for it again. Set by the control plane once lanes exist.
	AcceptUnservable bool
	// AnswerGrace is how long after a request's summary its bundles are still checked and stored
	// (check_redelivery_answer's grace): replicas share the control durable, so another replica
	// may handle the summary before this one stores the bundles fetched ahead of it. Zero: none,
	// every bundle after the summary is dropped as replayed. The control plane sets
	// AnswerGraceDefault (--repair-answer-grace).
	AnswerGrace time.Duration

	bundles, stored, refused atomic.Int64
	followUps                atomic.Int64
	seam                     *wire.Seam // the control endpoint's, where dropped answers are counted
}

// FollowUps counts the requests sent for the rest of a truncated answer.
func (r *Receiver) FollowUps() int64 { return r.followUps.Load() }

// Counts: bundles received, events newly stored from them, bundles refused.
func (r *Receiver) Counts() (bundles, stored, refused int64) {
	return r.bundles.Load(), r.stored.Load(), r.refused.Load()
}

// Register installs the bundle and summary handlers on control.
func (r *Receiver) Register(control *wire.Control) {
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	r.seam = control.Seam
	control.Handle(wire.KindRedeliveryBundle, r.onBundle)
	control.HandleBatch(wire.KindRedeliveryBundle, r.onBundles)
	control.Handle(wire.KindRedeliverySummary, r.onSummary)
	control.HandleAhead(wire.KindRedeliverySummary, r.onSummaryAhead)
}

func (r *Receiver) onBundle(ctx context.Context, env wire.Envelope, attachment []byte) error {
	r.bundles.Add(1)
	started := time.Now()
	b, copies, err := unbundle(env, attachment, true)
	if err != nil {
		r.refused.Add(1)
		return fmt.Errorf("%w: %v", wire.ErrPermanent, err)
	}
	if reason, err := r.checkBundle(ctx, env, b, copies); err != nil || reason != "" {
		if err == nil && b.Origin != env.From {
			// Invariant 12: another origin's events answer only a backfill, within its scope.
			r.refused.Add(1)
			return fmt.Errorf("%w: bundle sent by %s claims origin %q (%s): copies of another origin answer only a backfill's request, within its scope",
				wire.ErrPermanent, env.From, b.Origin, reason)
		}
		if err == nil {
			r.drop(reason, env, fmt.Sprintf("bundle of %d events for request %s", len(copies), b.RequestID))
		}
		return err
	}
	added, err := store.EventsIngest(ctx, r.Pool, copies)
	if err != nil {
		if errors.Is(err, store.ErrInvalidInput) {
			r.refused.Add(1)
			return fmt.Errorf("%w: bundle from %s refused by ingest: %v", wire.ErrPermanent, env.From, err)
		}
		return err
	}
	r.stored.Add(int64(len(added)))
	if r.OnStored != nil {
		r.OnStored(1, len(copies), time.Since(started))
	}
	return nil
}

// AnswerGraceDefault is the control plane's AnswerGrace: the longest a bundle can still be handled
// after its answer's summary. The bundles precede their summary on the control subject, so each
// was first delivered before the summary was handled; the broker delivers a message up to
// wire.MaxDeliverDefault (10) times, each held at most wire.ControlAckWait (a minute) and then
// nak'd with wire.RetryDelay(wire.RetryBaseDefault, n) = 2, 4, 8, 16, 32, 60, 60, 60, 60 s:
// 9 x 60 + 302 = 842 s to the tenth delivery, plus a minute to handle it, 902 s, rounded up to
// 16 minutes (TestAnswerGraceCoversTheControlRedeliveryHorizon computes it from those constants).
const AnswerGraceDefault = 16 * time.Minute

// IngestParallelDefault is how many ingests a run of bundles is split into by default: a copy's
// ingest is ~25 us of database CPU (its indexes, the digest fold), so one connection caps a
// backfill at what one core of the database inserts; two let the ingest of one part overlap the
// other's round trips and commit.
const IngestParallelDefault = 2

// ingestSplitMin is the fewest copies a run must hold to be split: below it one ingest costs less
// than the extra transaction.
const ingestSplitMin = 400

// onBundles stores a run of bundles, checked first, then ingested in up to IngestParallel parts
// of whole bundles at once, each part all or nothing (no bundle is ever stored in part). Any
// bundle that does not unbundle cleanly, fails its check, or is refused by ingest fails the run,
// and the control endpoint then retries each bundle alone: what a part stored is skipped by id
// then (invariant 2), the bad bundle is dropped or refused alone and everything else is stored.
// Consecutive bundles answering the same request from the same sender for the same lane (a
// backfill's answer is dozens of them) are checked against it in one call, not one each.
func (r *Receiver) onBundles(ctx context.Context, envs []wire.Envelope, attachments [][]byte) error {
	started := time.Now()
	var copies []store.EventCopy
	ends := make([]int, 0, len(envs)) // where each bundle's copies end
	group, groupStart := wire.Bundle{}, 0
	var groupFrom string
	check := func() error {
		if groupStart == len(copies) {
			return nil
		}
		if reason, err := r.checkAnswer(ctx, group.RequestID, groupFrom, group.Origin, copies[groupStart:]); err != nil || reason != "" {
			// Each message alone then: the one to drop is dropped and counted, the rest stored.
			return fmt.Errorf("bundles for request %s not stored with their run: %v%s", group.RequestID, err, reason)
		}
		groupStart = len(copies)
		return nil
	}
	for i, env := range envs {
		b, c, err := unbundle(env, attachments[i], true)
		if err != nil {
			return err
		}
		if b.RequestID != group.RequestID || env.From != groupFrom || b.Origin != group.Origin {
			if err := check(); err != nil {
				return err
			}
			group, groupFrom = b, env.From
		}
		copies = append(copies, c...)
		ends = append(ends, len(copies))
	}
	if err := check(); err != nil {
		return err
	}
	added, err := r.ingestParts(ctx, copies, ends)
	r.stored.Add(int64(added)) // a part stored before another failed is skipped by id on the retry
	if err != nil {
		return err
	}
	r.bundles.Add(int64(len(envs)))
	if r.OnStored != nil {
		r.OnStored(len(envs), len(copies), time.Since(started))
	}
	return nil
}

// ingestParts ingests copies (bundles ending at ends) in up to IngestParallel parts of whole
// bundles of about equal size, at once, and returns how many copies were newly stored. The first
// error is returned once every part has finished.
func (r *Receiver) ingestParts(ctx context.Context, copies []store.EventCopy, ends []int) (int, error) {
	parts := r.IngestParallel
	if parts <= 0 {
		parts = IngestParallelDefault
	}
	if parts == 1 || len(ends) < 2 || len(copies) < ingestSplitMin {
		added, err := store.EventsIngest(ctx, r.Pool, copies)
		return len(added), err
	}
	// Cut at the first bundle end past each share: parts of whole bundles, in bundle order.
	var cuts []int
	for _, end := range ends {
		if len(cuts) < parts-1 && end < len(copies) && end >= (len(cuts)+1)*len(copies)/parts {
			cuts = append(cuts, end)
		}
	}
	cuts = append(cuts, len(copies))
	var (
		wg    sync.WaitGroup
		added atomic.Int64
		mu    sync.Mutex
		first error
	)
	from := 0
	for _, to := range cuts {
		part := copies[from:to]
		from = to
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids, err := store.EventsIngest(ctx, r.Pool, part)
			added.Add(int64(len(ids)))
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return int(added.Load()), first
}

func (r *Receiver) onSummary(ctx context.Context, env wire.Envelope, _ []byte) error {
	var s wire.RedeliverySummary
	if err := strictJSON(env.Body, &s); err != nil {
		return fmt.Errorf("%w: summary from %s: %v", wire.ErrPermanent, env.From, err)
	}
	if reason, err := r.checkSummary(ctx, env, s); err != nil || reason != "" {
		if err == nil {
			r.drop(reason, env, fmt.Sprintf("summary of request %s (%d cannot-re-deliver entries)", s.RequestID, len(s.Unservable)))
		}
		return err
	}
	for _, u := range s.Unservable {
		r.Logger.Warn("repair: origin cannot re-deliver", "origin", env.From, "request", s.RequestID,
			"tenant", u.Tenant, "type", u.Type, "reason", u.Reason, "type_seqs", u.TypeSeqs, "origin_seqs", u.OriginSeqs)
		if r.AcceptUnservable && len(u.TypeSeqs) > 0 && u.Type != "" {
			if err := store.LaneAcceptLoss(ctx, r.Pool, env.From, u.Tenant, u.Type, u.TypeSeqs, u.Reason); err != nil {
				return err
			}
		}
	}
	r.Logger.Info("repair: redelivery finished", "origin", env.From, "request", s.RequestID, "shipped", s.Shipped,
		"bundles", s.Bundles, "truncated", s.Truncated)
	if err := r.answered(ctx, env.From, s); err != nil {
		return err
	}
	if err := r.backfillAnswered(ctx, env.From, s); err != nil {
		return err
	}
	if r.OnSummary != nil {
		r.OnSummary(s)
	}
	return nil
}

// onSummaryAhead asks for the rest of a truncated answer as soon as its summary is fetched, while
// the bundles fetched ahead of it are still being stored (wire.Control.HandleAhead): the origin
// builds the next answer while this service ingests the last one, instead of both taking turns.
// It acts only on a summary that answers an open request this service sent its sender
// (check_redelivery_answer, not final: the request stays open until the summary's own turn, so the
// bundles ahead of it are still accepted), and sends the same follow-up the summary's turn would
// (followUpID): the turn then finds it recorded and sends nothing more. Any failure here is left to
// the summary's turn.
func (r *Receiver) onSummaryAhead(ctx context.Context, env wire.Envelope, _ []byte) {
	var s wire.RedeliverySummary
	if r.JS == nil || strictJSON(env.Body, &s) != nil || !s.Truncated {
		return
	}
	id, err := uuid.Parse(s.RequestID)
	if err != nil {
		return
	}
	// No grace: a summary handled already (redelivered after a crash) must not be followed ahead again.
	if reason, err := store.SentRequestCheckAnswer(ctx, r.Pool, id, env.From, "", false, 0, unservableItems(s)); err != nil || reason != "" {
		return
	}
	sent, ok, err := store.SentRequestGet(ctx, r.Pool, id, env.From)
	if err != nil || !ok {
		return
	}
	if err := r.followUp(ctx, env.From, id, s, sent, true); err != nil && ctx.Err() == nil {
		r.Logger.Warn("repair: asking ahead for the rest of a truncated answer failed; asked at its summary's turn", "origin", env.From,
			"request", s.RequestID, "err", err)
	}
}

// answered marks the request the summary answers and, when the origin's cap truncated the answer,
// asks for the rest at once: the same request, continued after the last event shipped (invariant
// 14). A summary of a request this service did not send is logged and changes nothing.
func (r *Receiver) answered(ctx context.Context, origin string, s wire.RedeliverySummary) error {
	id, err := uuid.Parse(s.RequestID)
	if err != nil {
		r.Logger.Warn("repair: summary names no request id this service could have sent", "origin", origin, "request", s.RequestID)
		return nil
	}
	sent, ok, err := store.SentRequestAnswered(ctx, r.Pool, id, origin)
	if err != nil {
		return err
	}
	if !s.Truncated || r.JS == nil {
		return nil
	}
	if !ok {
		r.Logger.Warn("repair: a truncated answer to a request this service has no record of: not followed", "origin", origin,
			"request", s.RequestID)
		return nil
	}
	return r.followUp(ctx, origin, id, s, sent, false)
}

// followUp asks origin for the rest of the truncated answer s to sent (request id): the same
// request, continued after the last event shipped, under followUpID(id, origin). Ahead (at fetch,
// onSummaryAhead) it is always published: a crash between recording and publishing is mended by
// the redelivered summary. At the summary's turn it is published only when this call recorded it,
// so a follow-up sent ahead is not sent twice.
func (r *Receiver) followUp(ctx context.Context, origin string, id uuid.UUID, s wire.RedeliverySummary, sent store.SentRequest, ahead bool) error {
	var rest wire.RedeliveryRequest
	if err := json.Unmarshal(sent.Request, &rest); err != nil {
		return fmt.Errorf("recorded request %s: %w", s.RequestID, err)
	}
	if s.ResumeAfter == nil || (rest.After != nil && !rest.After.Less(*s.ResumeAfter)) {
		// The rest must start after where this request started, or following would loop.
		if !ahead {
			r.Logger.Error("repair: a truncated answer does not move past its request's start: not followed", "origin", origin,
				"request", s.RequestID, "resume_after", s.ResumeAfter, "request_after", rest.After)
		}
		return nil
	}
	rest.RequestID, rest.After = followUpID(id, origin).String(), s.ResumeAfter
	body, err := json.Marshal(rest)
	if err != nil {
		return err
	}
	recorded, err := store.SentRequestRecordNew(ctx, r.Pool, store.SentRequest{RequestID: uuid.MustParse(rest.RequestID), Origin: origin,
		Source: store.SourceFollowUp, Request: body, Follows: id})
	if err != nil {
		return err
	}
	if !recorded && !ahead {
		return nil // sent ahead of this summary's turn
	}
	env, err := wire.NewEnvelope(wire.KindRedeliveryRequest, r.Service, origin, rest)
	if err != nil {
		return err
	}
	if err := wire.Publish(ctx, r.JS, env, nil); err != nil {
		return err
	}
	if recorded {
		r.followUps.Add(1)
		r.Metrics.RepairRequested(store.SourceFollowUp, origin)
		r.Logger.Info("repair: truncated answer followed by a request for the rest", "origin", origin, "request", s.RequestID,
			"follow_up", rest.RequestID, "after_stream", s.ResumeAfter.Stream, "after_version", s.ResumeAfter.Version, "ahead", ahead)
	}
	return nil
}

// followUpNamespace roots followUpID's name-based UUIDs.
var followUpNamespace = uuid.MustParse("6f2b1c1e-6a52-4b0e-9d4e-1f3a2b7c9e10")

// followUpID is the id of the follow-up of request id's truncated answer from origin: derived, not
// drawn, so asking for the same rest twice (ahead of the summary's turn and at it, or after a
// crash redelivered the summary) records and serves one request (sent_requests and the origin's
// served requests both keep an id once). A broadcast is answered by several origins: the origin
// is part of the name.
func followUpID(id uuid.UUID, origin string) uuid.UUID {
	return uuid.NewSHA1(followUpNamespace, []byte(id.String()+"/"+origin))
}

// backfillAnswered records an origin's summary of a backfill's request (its broadcast or a
// follow-up) as that origin's progress, and logs it; a summary of any other request changes
// nothing here.
func (r *Receiver) backfillAnswered(ctx context.Context, origin string, s wire.RedeliverySummary) error {
	id, err := uuid.Parse(s.RequestID)
	if err != nil {
		return nil
	}
	backfill, ok, err := store.BackfillAnswered(ctx, r.Pool, id, origin, int64(s.Shipped), s.Truncated, s.Total)
	if err != nil || !ok {
		return err
	}
	progress, err := store.BackfillProgress(ctx, r.Pool)
	if err != nil {
		return err
	}
	for _, p := range progress {
		if p.Backfill == backfill && p.Origin == origin {
			total := int64(-1)
			if p.Total != nil {
				total = *p.Total
			}
			r.Logger.Info("backfill: progress", "backfill", backfill, "origin", origin, "request", s.RequestID,
				"shipped", p.Shipped, "total", total, "rate_per_s", int64(p.Rate()), "done", p.Done)
			return nil
		}
	}
	r.Logger.Info("backfill: progress", "backfill", backfill, "origin", origin, "request", s.RequestID,
		"shipped", s.Shipped, "done", !s.Truncated)
	return nil
}

// checkBundle asks SQL whether a bundle answers an open request this service sent its sender,
// every event within that request's scope (invariant 12); "" when it does, else the drop reason.
func (r *Receiver) checkBundle(ctx context.Context, env wire.Envelope, b wire.Bundle, copies []store.EventCopy) (string, error) {
	return r.checkAnswer(ctx, b.RequestID, env.From, b.Origin, copies)
}

// checkAnswer asks SQL whether copies (of lane's events, from sender) answer the open request
// requestID this service sent sender (or answered less than AnswerGrace ago), every event within
// its scope; "" when they do.
func (r *Receiver) checkAnswer(ctx context.Context, requestID, sender, lane string, copies []store.EventCopy) (string, error) {
	id, err := uuid.Parse(requestID)
	if err != nil {
		return wire.DropUnsolicited, nil
	}
	items := make([]store.AnswerItem, len(copies))
	for i := range copies {
		c := &copies[i]
		items[i] = store.AnswerItem{Tenant: c.Tenant, EventType: &c.EventType, StreamID: &c.StreamID,
			OriginSeqLo: &c.OriginSeq, TypeSeqLo: &c.TypeSeq}
	}
	return store.SentRequestCheckAnswer(ctx, r.Pool, id, sender, lane, false, r.AnswerGrace, items)
}

// checkSummary asks SQL whether a summary answers an open request this service sent its sender,
// every "cannot re-deliver" entry within that request's scope, and marks the request answered
// when it does (invariant 12): a forged summary never turns a gap into accepted loss.
func (r *Receiver) checkSummary(ctx context.Context, env wire.Envelope, s wire.RedeliverySummary) (string, error) {
	id, err := uuid.Parse(s.RequestID)
	if err != nil {
		return wire.DropUnsolicited, nil
	}
	return store.SentRequestCheckAnswer(ctx, r.Pool, id, env.From, "", true, 0, unservableItems(s)) // a second summary is always a replay
}

// unservableItems are a summary's "cannot re-deliver" entries as answer items (check_redelivery_answer).
func unservableItems(s wire.RedeliverySummary) []store.AnswerItem {
	var items []store.AnswerItem
	for _, u := range s.Unservable {
		var eventType *string
		if u.Type != "" {
			eventType = &u.Type
		}
		items = append(items, store.AnswerItem{Tenant: u.Tenant, EventType: eventType})
		for _, ts := range u.TypeSeqs {
			items = append(items, store.AnswerItem{Tenant: u.Tenant, EventType: eventType, TypeSeqLo: &ts[0], TypeSeqHi: &ts[1]})
		}
		for _, os := range u.OriginSeqs {
			items = append(items, store.AnswerItem{Tenant: u.Tenant, EventType: eventType, OriginSeqLo: &os[0], OriginSeqHi: &os[1]})
		}
	}
	return items
}

// drop counts (at the control endpoint's seam, when registered) and logs an answer not acted on.
func (r *Receiver) drop(reason string, env wire.Envelope, detail string) {
	if r.seam != nil {
		r.seam.Count(reason, env, detail)
		return
	}
	r.Logger.Warn("repair: answer dropped", "reason", reason, "from", env.From, "detail", detail)
}

// Unbundle turns a bundle into copies with their original identity, refusing any bundle whose
// events and attachment disagree or that carries another origin's events.
func Unbundle(env wire.Envelope, attachment []byte) ([]store.EventCopy, error) {
	_, copies, err := unbundle(env, attachment, false)
	return copies, err
}

// unbundle decodes a bundle; forwarded lets it carry another origin's events (a lane that is a
// service name), which the Receiver then checks against its request (forwarded copies answer a
// backfill only).
func unbundle(env wire.Envelope, attachment []byte, forwarded bool) (b wire.Bundle, _ []store.EventCopy, _ error) {
	if err := strictJSON(env.Body, &b); err != nil {
		return b, nil, fmt.Errorf("bundle from %s: %w", env.From, err)
	}
	if b.Origin != env.From && (!forwarded || !wire.ValidServiceName(b.Origin)) {
		return b, nil, fmt.Errorf("bundle sent by %s claims origin %q: an origin re-delivers only its own lane", env.From, b.Origin)
	}
	if len(b.Events) == 0 {
		return b, nil, fmt.Errorf("bundle from %s holds no events", env.From)
	}
	total := 0
	for _, e := range b.Events {
		if e.Len < 0 || e.Len > len(attachment) {
			return b, nil, fmt.Errorf("bundle from %s: event %s claims %d payload bytes", env.From, e.ID, e.Len)
		}
		total += e.Len
	}
	if total != len(attachment) {
		return b, nil, fmt.Errorf("bundle from %s: events claim %d payload bytes, attachment holds %d", env.From, total, len(attachment))
	}
	copies := make([]store.EventCopy, len(b.Events))
	offset := 0
	for i, e := range b.Events {
		flags := store.Flags(e.Flags)
		if b.StateOnly {
			flags |= store.StateOnly
		}
		var metadata []byte
		if e.Metadata != "" {
			metadata = []byte(e.Metadata)
		}
		stream := b.StreamID
		if e.Stream != "" {
			stream = e.Stream // a backfill's bundle packs several streams
		}
		copies[i] = store.EventCopy{
			EventID: e.ID, Origin: b.Origin, OriginSeq: e.OriginSeq, TypeSeq: e.TypeSeq, Tenant: e.Tenant,
			StreamID: stream, StreamVersion: e.Version, EventType: e.Type, Flags: flags,
			Payload: attachment[offset : offset+e.Len : offset+e.Len], Metadata: metadata, OccurredAt: e.OccurredAt,
		}
		offset += e.Len
	}
	return b, copies, nil
}
