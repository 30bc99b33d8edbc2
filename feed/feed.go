// Package feed reads a streamseal store in commit order: every event the store takes (own events
// once stamped, live copies, repairs, backfill) reaches a subscriber at least once, and a
// subscriber that has seen a position never later finds a committed event behind it that it did
// not see (DESIGN.md invariant 15). Progress is a resume token in the origins' own numbers: per
// origin a boundary below which everything in scope was handed out, certified (never past a
// lane's hole, never past the stamper), portable to any store holding the same origins.
//
// The rules live in SQL (streamseal.read_feed, sql/functions/feed.sql); this package schedules
// them: it reads a batch inside a transaction, hands the handler that transaction (so the
// handler can store the token atomically with its own writes), commits, and waits for the
// store's NOTIFY when there is nothing to read. It does not poll while idle; only while the
// horizon holds committed copies back (a long transaction still open) does it look again after
// HeldRecheck (read_feed says so, from the same reads).
package feed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
)

// The refusals Subscribe and Read return (errors.Is); the error's text says why and what to do.
var (
	// ErrBadRequest: a malformed token, or one issued for another scope (HTTP 400).
	ErrBadRequest = store.ErrFeedBadRequest
	// ErrConflict: the history the token describes changed here (an origin's generation moved),
	// or the token is ahead of this store (HTTP 409). Start without a token.
	ErrConflict = store.ErrFeedConflict
	// ErrGone: this store cannot serve what the token needs: an origin it does not hold in
	// scope, or history below a boundary it no longer holds (HTTP 410).
	ErrGone = store.ErrFeedGone
)

// Defaults.
const (
	// BatchSizeDefault is how many events one batch carries at most. A read's fixed cost (the
	// token, the horizon, the boundaries) is spread over the batch: 1000 rather than 500 read
	// a 1M-event store faster (bench feed); batches under live load are small anyway. A
	// handler holds a whole batch in memory: lower it for large payloads.
	BatchSizeDefault = 1000
	// HeldRecheckDefault is how soon an idle subscriber reads again while committed copies wait
	// behind an open transaction (no notification announces that transaction's end).
	HeldRecheckDefault = 100 * time.Millisecond
	// IdleFailsafeDefault bounds one idle wait for a notification; it is a failsafe, not a poll.
	IdleFailsafeDefault = 10 * time.Minute
)

// Kind is what a subscriber does with what it reads (issue 19; the proposal's "backfill builds
// state and never re-fires triggers").
type Kind int

const (
	// All (the zero value) hands out every event.
	All Kind = iota
	// Projection builds state: every event, state-only ones (backfilled history) included.
	Projection
	// Reactor does side effects (send the email, call the API): live and repaired events, never a
	// state-only one. Its token still moves past the events it is not handed.
	Reactor
)

// Options select what a subscriber reads and where it starts.
type Options struct {
	// Kind: All, Projection or Reactor.
	Kind Kind
	// Types and Tenants scope the feed; nil means every type (tenant). A token resumes only the
	// scope it was issued for.
	Types   []string
	Tenants []string
	// Resume is a token from an earlier batch (Batch.Token, Subscriber.Token), issued by this
	// store or by another holding the same origins; "" reads from the beginning of this store.
	Resume string
	// BatchSize bounds a batch (1 to 10000; 0 means BatchSizeDefault).
	BatchSize int
	// HeldRecheck: 0 means HeldRecheckDefault.
	HeldRecheck time.Duration

	// Name registers the subscriber with the store as a projection or reactor the application
	// runs (Kind Projection or Reactor; streamseal.register_feed_projection, register_feed_reactor;
	// issue 19), so the local coverage audit covers a Go projection as it covers a SQL one. The
	// store then keeps the token (Resume must be ""; a restart resumes where the last committed
	// batch left off) and, in each batch's transaction, the subscriber stores it and folds the
	// batch into the projection's per-stream cursors (streamseal.feed_handler_advance), so state,
	// cursors and token commit together. A named projection is handed each stream in
	// stream_version order: an event that lands below a version of its stream it already applied
	// (a late repair) is left out of the batch and held, and the stream is rebuilt through Reset
	// before the next read (a few streams a batch; the coverage audit reports and rebuilds the
	// rest: out_of_order). Types must be given. Registering
	// the same name with another kind or scope is refused (store.ErrInvalidInput): unregister it
	// first (streamseal.unregister_handler). Another process running the same name is safe: a
	// batch's token is stored only if it is still the one the batch was read from, so each batch
	// commits in one of them; the other reloads the token and reads on.
	Name string
	// StartAtEnd: a named projection starts at the feed's current end instead of folding the
	// store's history first; the coverage audit then finds the history it was born after
	// (born_late) and has it rebuilt, capped. A named reactor always starts at the end.
	StartAtEnd bool
	// Reset, for a named projection, clears the state it built for one stream, in tx. With Reset
	// the coverage audit asks for the rebuild of a stream it finds short, skipped, born late or
	// out of order (at most --max-auto-rebuilds-per-audit per audit); the subscriber performs it
	// in one transaction: Reset, then the handler with a Batch{Replay: true} of the stream's
	// events in stream_version order, then commit. nil: findings are reported (no_reset_hook),
	// never rebuilt.
	Reset func(ctx context.Context, tx pgx.Tx, stream Stream) error
}

// Stream names one stream of the store: what a Reset clears.
type Stream struct {
	Origin, Tenant, StreamID string
}

// Event is one event of the feed.
type Event struct {
	EventID       uuid.UUID
	Origin        string
	OriginSeq     int64
	TypeSeq       int64
	Tenant        string
	StreamID      string
	StreamVersion int64
	EventType     string
	Flags         int32
	Payload       []byte
	Metadata      []byte
	OccurredAt    time.Time
	StoredAt      time.Time
}

// Batch is what a handler receives: events in feed order and the token that resumes after them.
type Batch struct {
	Events []Event
	Token  string
	// Replay: a rebuild of one stream of a named projection (after its Reset): the stream's events
	// of the projection's types in stream_version order, as the store holds them; Token is the
	// token already stored (a replay does not move it).
	Replay bool
	// Held counts committed copies this read could not hand out yet: an open transaction (of
	// any database in the cluster) that began before they landed holds them. An empty batch
	// with Held > 0 is not "caught up": read again.
	Held int64
}

// Handler takes one batch inside tx, the transaction the batch was read in. Returning nil
// acknowledges the batch: tx commits and Token moves to batch.Token. Writing batch.Token with
// tx stores it atomically with the handler's own writes. Returning an error rolls tx back and
// stops the subscriber with that error; resuming from the last acknowledged token delivers the
// batch again (at least once).
type Handler func(ctx context.Context, tx pgx.Tx, batch Batch) error

// Subscriber reads one scope of a store and hands batches to a handler.
type Subscriber struct {
	pool      *pgxpool.Pool
	opts      Options
	mu        sync.Mutex
	token     string
	delivered atomic.Int64
}

// NewSubscriber returns a subscriber of pool's store.
func NewSubscriber(pool *pgxpool.Pool, opts Options) *Subscriber {
	if opts.BatchSize == 0 {
		opts.BatchSize = BatchSizeDefault
	}
	if opts.HeldRecheck <= 0 {
		opts.HeldRecheck = HeldRecheckDefault
	}
	return &Subscriber{pool: pool, opts: opts, token: opts.Resume}
}

// Subscribe reads pool's store from opts.Resume and hands every batch to handler until ctx ends
// (it returns ctx's error) or a read or the handler fails (it returns that error).
func Subscribe(ctx context.Context, pool *pgxpool.Pool, opts Options, handler Handler) error {
	return NewSubscriber(pool, opts).Run(ctx, handler)
}

// Token returns the token after the last acknowledged batch (or after the last empty read):
// resuming from it repeats nothing acknowledged and skips nothing.
func (s *Subscriber) Token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

// Delivered counts the events handed to the handler and acknowledged.
func (s *Subscriber) Delivered() int64 { return s.delivered.Load() }

// Run is Subscribe on s.
func (s *Subscriber) Run(ctx context.Context, handler Handler) error {
	if s.opts.BatchSize < 1 || s.opts.BatchSize > 10000 {
		return fmt.Errorf("feed: batch size %d is invalid: expected 1 to 10000", s.opts.BatchSize)
	}
	pooled, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("feed: acquire the listening connection: %w", err)
	}
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	channels := []string{store.ChannelFeed, store.ChannelStamped}
	if s.opts.Name != "" {
		// The coverage audit's rebuild requests wake a named projection.
		channels = append(channels, store.ChannelHandlers)
		if err := s.register(ctx); err != nil {
			return err
		}
	}
	for _, channel := range channels {
		if err := store.Listen(ctx, conn, channel); err != nil {
			return fmt.Errorf("feed: %w", err)
		}
	}
	held := s.opts.HeldRecheck
	for {
		if err := s.rebuilds(ctx, handler); err != nil {
			return err
		}
		n, heldCopies, err := s.step(ctx, handler)
		if err != nil {
			return err
		}
		if n > 0 {
			held = s.opts.HeldRecheck
			continue
		}
		// Idle: wait for a notification. While committed copies wait behind an open
		// transaction, nothing announces its end: look again after a short, growing delay.
		deadline := time.Now().Add(IdleFailsafeDefault)
		if heldCopies > 0 {
			deadline = time.Now().Add(held)
			held = min(2*held, time.Second)
		} else {
			held = s.opts.HeldRecheck
		}
		if _, err := store.WaitNotification(ctx, conn, deadline); err != nil {
			return err
		}
		// Several notifications are one wake-up.
		if _, err := store.AbsorbNotifications(ctx, conn, time.Now()); err != nil {
			return err
		}
	}
}

// step reads one batch and hands it to handler; it returns how many events it delivered and
// how many committed copies wait behind an open transaction.
func (s *Subscriber) step(ctx context.Context, handler Handler) (int, int64, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("feed: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	b, err := store.FeedRead(ctx, tx, store.FeedScope{Types: s.opts.Types, Tenants: s.opts.Tenants}, s.Token(), s.opts.BatchSize)
	if err != nil {
		return 0, 0, err
	}
	events := forKind(s.opts.Kind, convert(b.Events))
	if s.opts.Name != "" {
		leave, err := store.FeedHandlerAdvance(ctx, tx, s.opts.Name, s.Token(), b.Token, b.Events, len(b.Events) == 0 && b.Held == 0)
		if errors.Is(err, store.ErrHandlerTokenMoved) {
			// Another process running the same name applied this batch: read on from its token.
			return 1, 0, s.reloadToken(ctx)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("feed: %w", err)
		}
		if leave != nil {
			kept := events[:0]
			for _, e := range events {
				if !leave[e.EventID] {
					kept = append(kept, e)
				}
			}
			events = kept
		}
	}
	if len(events) > 0 {
		if err := handler(ctx, tx, Batch{Events: events, Token: b.Token}); err != nil {
			return 0, 0, fmt.Errorf("feed: handler: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("feed: commit: %w", err)
	}
	s.mu.Lock()
	s.token = b.Token
	s.mu.Unlock()
	s.delivered.Add(int64(len(events)))
	return len(b.Events), b.Held, nil
}

// register registers a named subscriber with the store and loads its stored token.
func (s *Subscriber) register(ctx context.Context) error {
	name := s.opts.Name
	switch {
	case s.opts.Kind != Projection && s.opts.Kind != Reactor:
		return fmt.Errorf("feed: subscriber %q: a named subscriber is a Projection or a Reactor: set Options.Kind", name)
	case s.opts.Resume != "":
		return fmt.Errorf("feed: subscriber %q: Resume is set: a named subscriber resumes from the token the store keeps for it", name)
	case s.opts.Reset != nil && s.opts.Kind != Projection:
		return fmt.Errorf("feed: subscriber %q: Reset is set on a reactor: only a projection is rebuilt", name)
	}
	var err error
	if s.opts.Kind == Projection {
		_, err = store.FeedProjectionRegister(ctx, s.pool, name, s.opts.Types, s.opts.Tenants, s.opts.Reset != nil, !s.opts.StartAtEnd)
	} else {
		_, err = store.FeedReactorRegister(ctx, s.pool, name, s.opts.Types, s.opts.Tenants)
	}
	if err != nil {
		return fmt.Errorf("feed: %w", err)
	}
	return s.reloadToken(ctx)
}

func (s *Subscriber) reloadToken(ctx context.Context) error {
	tok, ok, err := store.HandlerToken(ctx, s.pool, s.opts.Name)
	if err != nil {
		return fmt.Errorf("feed: %w", err)
	}
	if !ok {
		return fmt.Errorf("feed: subscriber %q is no longer registered (streamseal.unregister_handler): stopping", s.opts.Name)
	}
	s.mu.Lock()
	s.token = tok
	s.mu.Unlock()
	return nil
}

// RebuildsPerWakeDefault bounds the rebuilds a named projection performs before it reads the
// feed again (the audit caps what it requests per audit anyway).
const RebuildsPerWakeDefault = 100

// rebuilds performs the rebuilds the coverage audit requested of a named projection with a Reset,
// each in one transaction: take the request, Reset the stream, replay its events through the
// handler, commit (a failure rolls back and leaves the request for the next attempt).
func (s *Subscriber) rebuilds(ctx context.Context, handler Handler) error {
	if s.opts.Name == "" || s.opts.Kind != Projection || s.opts.Reset == nil {
		return nil
	}
	for i := 0; i < RebuildsPerWakeDefault; i++ {
		done, err := s.rebuildOne(ctx, handler)
		if err != nil || done {
			return err
		}
	}
	return nil
}

func (s *Subscriber) rebuildOne(ctx context.Context, handler Handler) (done bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("feed: begin a rebuild: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	stream, ok, err := store.ProjectionRebuildTake(ctx, tx, s.opts.Name)
	if err != nil || !ok {
		return true, err
	}
	if err := s.opts.Reset(ctx, tx, Stream(stream)); err != nil {
		return false, fmt.Errorf("feed: reset of stream %s/%s/%s: %w", stream.Origin, stream.Tenant, stream.StreamID, err)
	}
	events, err := store.ProjectionRebuildReplay(ctx, tx, s.opts.Name, stream)
	if err != nil {
		return false, fmt.Errorf("feed: %w", err)
	}
	if len(events) > 0 {
		if err := handler(ctx, tx, Batch{Events: convert(events), Token: s.Token(), Replay: true}); err != nil {
			return false, fmt.Errorf("feed: handler (replay of stream %s/%s/%s): %w", stream.Origin, stream.Tenant, stream.StreamID, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("feed: commit a rebuild: %w", err)
	}
	return false, nil
}

// Read reads one batch of up to max events after token ("" from the beginning) outside any
// subscription: for scripts and tools.
func Read(ctx context.Context, db store.Querier, opts Options, token string, max int) (Batch, error) {
	b, err := store.FeedRead(ctx, db, store.FeedScope{Types: opts.Types, Tenants: opts.Tenants}, token, max)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Events: forKind(opts.Kind, convert(b.Events)), Token: b.Token, Held: b.Held}, nil
}

// forKind leaves out what a kind of subscriber never receives: a reactor, state-only events.
func forKind(kind Kind, events []Event) []Event {
	if kind != Reactor {
		return events
	}
	out := events[:0]
	for _, e := range events {
		if store.Flags(e.Flags)&store.StateOnly == 0 {
			out = append(out, e)
		}
	}
	return out
}

func convert(in []store.FeedEvent) []Event {
	out := make([]Event, len(in))
	for i, e := range in {
		out[i] = Event{EventID: e.EventID, Origin: e.Origin, OriginSeq: e.OriginSeq, TypeSeq: e.TypeSeq, Tenant: e.Tenant,
			StreamID: e.StreamID, StreamVersion: e.StreamVersion, EventType: e.EventType, Flags: int32(e.Flags),
			Payload: e.Payload, Metadata: e.Metadata, OccurredAt: e.OccurredAt, StoredAt: e.StoredAt}
	}
	return out
}
