// feed.go: the application feed (sql/functions/feed.sql): one batch of read_feed with its next
// token, a token's boundaries, what holds the copies back, and the feed's refusals as typed
// errors (SQLSTATE SS400, SS409, SS410).

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// ChannelFeed is the NOTIFY channel a statement that lands copies in the store signals (the insert
// trigger, event_triggers.sql); own events are readable once stamped, and a stamp batch signals
// ChannelStamped.
const ChannelFeed = "streamseal_feed"

// The feed's refusals. Each wraps the SQL message, which names the origin and what to do.
var (
	// ErrFeedBadRequest: a malformed token or one issued for another scope (SS400; HTTP 400).
	ErrFeedBadRequest = errors.New("feed: bad request")
	// ErrFeedConflict: the history the token describes changed here, or the token is ahead of
	// this store (SS409; HTTP 409).
	ErrFeedConflict = errors.New("feed: conflict")
	// ErrFeedGone: this store cannot serve what the token needs (SS410; HTTP 410).
	ErrFeedGone = errors.New("feed: gone")
)

// FeedScope selects the events a feed reads: nil Types (Tenants) means every type (tenant).
type FeedScope struct {
	Types   []string
	Tenants []string
}

// FeedEvent is one event as read_feed hands it out.
type FeedEvent struct {
	EventID       uuid.UUID
	Origin        string
	OriginSeq     int64
	TypeSeq       int64
	Tenant        string
	StreamID      string
	StreamVersion int64
	EventType     string
	Flags         Flags
	Payload       []byte
	Metadata      []byte
	OccurredAt    time.Time
	StoredAt      time.Time
}

// FeedBatch is one read of the feed: the events, the token that resumes after them, and how
// many committed copies wait behind an open transaction (read again soon when not 0: no NOTIFY
// announces that transaction's end).
type FeedBatch struct {
	Events []FeedEvent
	Token  string
	Held   int64
}

// FeedRead reads up to max events of scope after token ("" reads from the beginning of this
// store).
func FeedRead(ctx context.Context, db Querier, scope FeedScope, token string, max int) (FeedBatch, error) {
	var tok *string
	if token != "" {
		// Text the server could not take as a parameter (NUL, invalid UTF-8) is no token either.
		for i := 0; i < len(token); i++ {
			if token[i] < 0x21 || token[i] > 0x7e {
				return FeedBatch{}, fmt.Errorf("read feed: %w: resume token is malformed: expected base64url (A-Z a-z 0-9 - _)", ErrFeedBadRequest)
			}
		}
		tok = &token
	}
	rows, err := db.Query(ctx, `
		select f.event_id, f.origin, f.origin_seq, f.type_seq, f.tenant, f.stream_id, f.stream_version, f.event_type,
		       f.flags, f.payload, f.metadata, f.occurred_at, f.stored_at, f.next_token, f.held_copies
		from streamseal.read_feed($1, $2, $3, $4) f`, scope.Types, scope.Tenants, tok, max)
	if err != nil {
		return FeedBatch{}, classifyFeed("read feed", err)
	}
	defer rows.Close()
	var (
		out  []FeedEvent
		next string
		held int64
	)
	// Value types, not pointers, for the nullable columns: one allocation fewer per column and
	// row (the token row has null event columns, the event rows a null token).
	var (
		id                                         pgtype.UUID
		origin, tenant, stream, eventType, nextTok pgtype.Text
		originSeq, typeSeq, version, heldNow       pgtype.Int8
		flags                                      pgtype.Int4
		occurred, stored                           pgtype.Timestamptz
		payload, metadata                          []byte
	)
	for rows.Next() {
		payload, metadata = nil, nil
		if err := rows.Scan(&id, &origin, &originSeq, &typeSeq, &tenant, &stream, &version, &eventType, &flags,
			&payload, &metadata, &occurred, &stored, &nextTok, &heldNow); err != nil {
			return FeedBatch{}, classifyFeed("read feed", err)
		}
		if nextTok.Valid {
			next = nextTok.String
			if heldNow.Valid {
				held = heldNow.Int64
			}
			continue
		}
		if !id.Valid || !origin.Valid || !originSeq.Valid || !typeSeq.Valid || !tenant.Valid || !stream.Valid ||
			!version.Valid || !eventType.Valid || !flags.Valid || !occurred.Valid || !stored.Valid {
			return FeedBatch{}, fmt.Errorf("read feed: a row with neither an event nor a token")
		}
		out = append(out, FeedEvent{EventID: uuid.UUID(id.Bytes), Origin: origin.String, OriginSeq: originSeq.Int64,
			TypeSeq: typeSeq.Int64, Tenant: tenant.String, StreamID: stream.String, StreamVersion: version.Int64,
			EventType: eventType.String, Flags: Flags(flags.Int32), Payload: payload, Metadata: metadata,
			OccurredAt: occurred.Time, StoredAt: stored.Time})
	}
	if err := rows.Err(); err != nil {
		return FeedBatch{}, classifyFeed("read feed", err)
	}
	if next == "" {
		return FeedBatch{}, fmt.Errorf("read feed: the batch ended without a token")
	}
	return FeedBatch{Events: out, Token: next, Held: held}, nil
}

// FeedBoundary is one origin's entry in a token: everything of the origin below Boundary (in its
// origin_seq) in the token's scope was handed out.
type FeedBoundary struct {
	Origin     string
	Generation int64
	Boundary   int64
}

// FeedTokenBoundaries decodes token (feed_token) and returns its per-origin boundaries.
func FeedTokenBoundaries(ctx context.Context, db Querier, token string) ([]FeedBoundary, error) {
	rows, err := db.Query(ctx, `
		select m.origin, m.generation, m.boundary
		from streamseal.feed_token($1) t,
		     rows from (unnest(t.members), unnest(t.generations), unnest(t.boundaries)) m(origin, generation, boundary)
		order by m.origin`, token)
	if err != nil {
		return nil, classifyFeed("decode feed token", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[FeedBoundary])
	if err != nil {
		return nil, classifyFeed("decode feed token", err)
	}
	return out, nil
}

// FeedOriginHeads returns, per origin in scope, one past the highest origin_seq this store
// holds (own events: the stamper's last): a token's boundary lag is head minus boundary.
func FeedOriginHeads(ctx context.Context, db Querier, scope FeedScope) (map[string]int64, error) {
	rows, err := db.Query(ctx, `
		select m.origin,
		       1 + case when m.origin = streamseal.service_name() then streamseal._feed_own_through()
		                else coalesce((select max(e.origin_seq) from streamseal.events e where e.origin = m.origin), 0) end
		from streamseal._feed_members($1, $2) m`, scope.Types, scope.Tenants)
	if err != nil {
		return nil, classifyFeed("read feed origin heads", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var origin string
		var head int64
		if err := rows.Scan(&origin, &head); err != nil {
			return nil, classifyFeed("read feed origin heads", err)
		}
		out[origin] = head
	}
	return out, classifyFeed("read feed origin heads", rows.Err())
}

// FeedHorizon says what holds the copies' delivery back: committed copies at or above the
// snapshot's xmin, and the age of the oldest transaction holding an xid (0 when none).
func FeedHorizon(ctx context.Context, db Querier) (held int64, oldest time.Duration, err error) {
	var seconds *float64
	if err := db.QueryRow(ctx, `select h.held_copies, h.oldest_xact_seconds from streamseal.feed_horizon() h`).Scan(&held, &seconds); err != nil {
		return 0, 0, classifyFeed("read feed horizon", err)
	}
	if seconds != nil {
		oldest = time.Duration(*seconds * float64(time.Second))
	}
	return held, oldest, nil
}

// classifyFeed maps the feed's refusals onto ErrFeedBadRequest, ErrFeedConflict and ErrFeedGone.
func classifyFeed(op string, err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "SS400":
			return fmt.Errorf("%s: %w: %s", op, ErrFeedBadRequest, pgErr.Message)
		case "SS409":
			return fmt.Errorf("%s: %w: %s", op, ErrFeedConflict, pgErr.Message)
		case "SS410":
			return fmt.Errorf("%s: %w: %s", op, ErrFeedGone, pgErr.Message)
		}
	}
	return classify(op, err)
}
