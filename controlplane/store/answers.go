// answers.go: the origin's answers to a manifest request (sql/functions/answers.sql): type-level
// digests of a window from sealed epochs and the live fringe, stream-level pages by stream id,
// and the close-the-books floors consumers apply to their copies. type_digests also serves a
// consumer's own side of a comparison.

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// TypeDigest is one (tenant, event_type) fold of a window.
type TypeDigest struct {
	Tenant, EventType string
	X0, X1, N         int64
}

// TypeAnswer is a windowed type-level answer: the folds of [From, Watermark).
type TypeAnswer struct {
	Digests   []TypeDigest
	Watermark int64 // exclusive end actually covered; the next window's from
}

// TypeDigests answers lane's window [from, to) (streamseal.type_digests). settle applies to
// received lanes: rows stored within it lie beyond the watermark.
func TypeDigests(ctx context.Context, db Querier, lane string, from, to int64, settle time.Duration) (TypeAnswer, error) {
	rows, err := db.Query(ctx, `
		select tenant, event_type, x0, x1, n, watermark
		from streamseal.type_digests($1, $2, $3, make_interval(secs => $4))`, lane, from, to, settle.Seconds())
	return typeAnswer(rows, err)
}

// AnswerTypeDigests is TypeDigests of this origin's own lane as answered to requester: only the
// (tenant, type) pairs it is granted (streamseal.answer_type_digests, invariant 11).
func AnswerTypeDigests(ctx context.Context, db Querier, requester, lane string, from, to int64) (TypeAnswer, error) {
	rows, err := db.Query(ctx, `
		select tenant, event_type, x0, x1, n, watermark
		from streamseal.answer_type_digests($1, $2, $3, $4)`, requester, lane, from, to)
	return typeAnswer(rows, err)
}

func typeAnswer(rows pgx.Rows, err error) (TypeAnswer, error) {
	var answer TypeAnswer
	if err != nil {
		return TypeAnswer{}, classify("type digests", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, eventType *string
		var d TypeDigest
		if err := rows.Scan(&tenant, &eventType, &d.X0, &d.X1, &d.N, &answer.Watermark); err != nil {
			return TypeAnswer{}, classify("type digests", err)
		}
		if eventType == nil {
			continue // the quiet-window row: watermark only
		}
		d.Tenant, d.EventType = *tenant, *eventType
		answer.Digests = append(answer.Digests, d)
	}
	if err := rows.Err(); err != nil {
		return TypeAnswer{}, classify("type digests", err)
	}
	return answer, nil
}

// StreamDigest is one (stream, tenant, event_type) fold of a window.
type StreamDigest struct {
	StreamID, Tenant, EventType string
	X0, X1, N                   int64
}

// StreamPage is one page of a stream-level answer: the folds of whole streams after the
// requested cursor, the watermark covered, and the cursor to resume after ("" when the window is
// complete).
type StreamPage struct {
	Digests     []StreamDigest
	Watermark   int64
	ResumeAfter string
}

// StreamDigestsPage answers lane's window [from, to) for eventTypes by stream, at most max
// buckets of whole streams after afterStream (streamseal.stream_digests_page).
func StreamDigestsPage(ctx context.Context, db Querier, lane string, eventTypes []string, from, to int64, afterStream string, max int) (StreamPage, error) {
	rows, err := db.Query(ctx, `
		select stream_id, tenant, event_type, x0, x1, n, watermark, resume_after
		from streamseal.stream_digests_page($1, $2, $3, $4, $5, $6)`, lane, eventTypes, from, to, textOrNull(afterStream), max)
	return streamPage(rows, err)
}

// AnswerStreamDigestsPage is StreamDigestsPage as answered to requester: the same page and
// cursor holding only the (tenant, type) buckets it is granted
// (streamseal.answer_stream_digests_page, invariant 11). tenants (nil: every tenant) narrows the
// page to those tenants' buckets (a tenant fold's drill-down).
func AnswerStreamDigestsPage(ctx context.Context, db Querier, requester, lane string, eventTypes []string, from, to int64, afterStream string, max int, tenants []string) (StreamPage, error) {
	rows, err := db.Query(ctx, `
		select stream_id, tenant, event_type, x0, x1, n, watermark, resume_after
		from streamseal.answer_stream_digests_page($1, $2, $3, $4, $5, $6, $7, tenants => $8)`,
		requester, lane, eventTypes, from, to, textOrNull(afterStream), max, tenantsOrNull(tenants))
	return streamPage(rows, err)
}

func streamPage(rows pgx.Rows, err error) (StreamPage, error) {
	if err != nil {
		return StreamPage{}, classify("stream digests page", err)
	}
	defer rows.Close()
	var page StreamPage
	for rows.Next() {
		var stream, tenant, eventType, resumeAfter *string
		var d StreamDigest
		if err := rows.Scan(&stream, &tenant, &eventType, &d.X0, &d.X1, &d.N, &page.Watermark, &resumeAfter); err != nil {
			return StreamPage{}, classify("stream digests page", err)
		}
		if resumeAfter != nil {
			page.ResumeAfter = *resumeAfter
		}
		if stream == nil {
			continue // the quiet-page row: watermark and cursor only
		}
		d.StreamID, d.Tenant, d.EventType = *stream, *tenant, *eventType
		page.Digests = append(page.Digests, d)
	}
	if err := rows.Err(); err != nil {
		return StreamPage{}, classify("stream digests page", err)
	}
	return page, nil
}

// StreamClose is one close-the-books floor: the stream's versions below BelowVersion are gone.
type StreamClose struct {
	Tenant       string `json:"tenant"`
	StreamID     string `json:"stream_id"`
	BelowVersion int64  `json:"below_version"`
}

// StreamCloses lists this origin's close-the-books floors by tenant and stream, of the tenants
// requester is granted any type of ("": every tenant, the origin's own view).
func StreamCloses(ctx context.Context, db Querier, requester string) ([]StreamClose, error) {
	rows, err := db.Query(ctx, `
		select c.tenant, c.stream_id, c.below_version from streamseal.stream_closes c
		where $1::text is null or exists (
		    select from streamseal.grants g where g.service = $1 and (g.all_tenants or g.tenant = c.tenant))
		order by 1, 2`, textOrNull(requester))
	if err != nil {
		return nil, classify("read stream closes", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[StreamClose])
	if err != nil {
		return nil, classify("read stream closes", err)
	}
	return out, nil
}
