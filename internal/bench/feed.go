package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/feed"
)

// FeedOptions sizes the feed benchmark.
type FeedOptions struct {
	Events      int           // copies in the store the reader reads through
	Rate        int           // appends/s while latency is measured
	LatencyTime time.Duration // how long latency is measured
}

// QuickFeed is the --quick size; FullFeed the default (issue 17: a 1M-event store, 2k/s).
var (
	QuickFeed = FeedOptions{Events: 100000, Rate: 2000, LatencyTime: 4 * time.Second}
	FullFeed  = FeedOptions{Events: 1000000, Rate: 2000, LatencyTime: 10 * time.Second}
)

// FeedResult is what bench feed measured.
type FeedResult struct {
	EventsPerSecond, ScanPerSecond, ScanRatio, P99Ms float64
	TokenBytesPerOrigin                              float64
}

// Feed loads Events copies of one origin, reads them all through read_feed (batches of
// feed.BatchSizeDefault) and with a plain `select … order by` of the same rows in the same run
// (alternating, best of three each), then measures commit-to-handler latency of a live
// subscriber under Rate copies/s, and the token's bytes per origin.
func Feed(ctx context.Context, pool *pgxpool.Pool, opts FeedOptions, out io.Writer) (FeedResult, error) {
	var r FeedResult
	watch := watchLoad(out)
	fmt.Fprintf(out, "bench feed: loading %d copies of one origin\n", opts.Events)
	if _, err := pool.Exec(ctx, `
		insert into streamseal.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload)
		select gen_random_uuid(), 'orders', g, g, 't1', 's' || (g / 10), g % 10 + 1, 'order.placed', convert_to(repeat('x', 200), 'UTF8')
		from generate_series(1, $1::bigint) g`, opts.Events); err != nil {
		return r, fmt.Errorf("load: %w", err)
	}
	if _, err := pool.Exec(ctx, `insert into streamseal.lanes (origin, tenant, event_type, floor, birth_floor, last_type_seq)
		values ('orders', 't1', 'order.placed', $1, 0, $1)`, opts.Events); err != nil {
		return r, fmt.Errorf("lane: %w", err)
	}
	if _, err := pool.Exec(ctx, `vacuum analyze streamseal.events`); err != nil {
		return r, err
	}
	bestFeed, bestScan := time.Duration(1<<62), time.Duration(1<<62)
	var token string
	for round := 0; round < 3; round++ {
		start := time.Now()
		n, tok, err := readThrough(ctx, pool)
		if err != nil {
			return r, err
		}
		bestFeed, token = min(bestFeed, time.Since(start)), tok
		start = time.Now()
		m, err := scan(ctx, pool)
		if err != nil {
			return r, err
		}
		bestScan = min(bestScan, time.Since(start))
		fmt.Fprintf(out, "  round %d: feed %d events, scan %d rows\n", round+1, n, m)
	}
	r.EventsPerSecond = float64(opts.Events) / bestFeed.Seconds()
	r.ScanPerSecond = float64(opts.Events) / bestScan.Seconds()
	r.ScanRatio = r.EventsPerSecond / r.ScanPerSecond
	fmt.Fprintf(out, "  read_feed %.0f events/s, plain scan %.0f rows/s: ratio %.3f\n", r.EventsPerSecond, r.ScanPerSecond, r.ScanRatio)

	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return r, fmt.Errorf("token: %w", err)
	}
	bounds, err := store.FeedTokenBoundaries(ctx, pool, token)
	if err != nil {
		return r, err
	}
	// Fixed part: version, flags, two digests, count, local part (42), checksum.
	r.TokenBytesPerOrigin = float64(len(raw)-2-8-8-2-42-2-8) / float64(max(len(bounds), 1))
	fmt.Fprintf(out, "  token: %d bytes (%d base64url characters) for %d origin(s): %.0f bytes per origin\n",
		len(raw), len(token), len(bounds), r.TokenBytesPerOrigin)

	p99, err := feedLatency(ctx, pool, token, opts, out)
	if err != nil {
		return r, err
	}
	r.P99Ms = p99
	busy := watch.End()
	fmt.Fprintf(out, "RESULT feed events_per_s=%.0f scan_ratio=%.3f p99_ms=%.2f token_bytes_per_origin=%.0f busy=%d\n",
		r.EventsPerSecond, r.ScanRatio, r.P99Ms, r.TokenBytesPerOrigin, busy)
	return r, nil
}

// readThrough reads the whole store through read_feed from the beginning.
func readThrough(ctx context.Context, pool *pgxpool.Pool) (int, string, error) {
	token, n := "", 0
	for {
		b, err := feed.Read(ctx, pool, feed.Options{}, token, feed.BatchSizeDefault)
		if err != nil {
			return n, token, err
		}
		token = b.Token
		n += len(b.Events)
		if len(b.Events) == 0 {
			return n, token, nil
		}
	}
}

// scan reads the same rows with one plain ordered select (the baseline).
func scan(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	rows, err := pool.Query(ctx, `
		select e.event_id, e.origin, e.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version, e.event_type,
		       e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
		from streamseal.events e
		where e.origin_seq is not null and e.origin <> streamseal.service_name()
		order by e.landed_xid, e.local_id`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			id                                uuid.UUID
			origin, tenant, stream, eventType string
			originSeq, typeSeq, version       int64
			flags                             int32
			payload, metadata                 []byte
			occurred, stored                  time.Time
		)
		if err := rows.Scan(&id, &origin, &originSeq, &typeSeq, &tenant, &stream, &version, &eventType, &flags, &payload,
			&metadata, &occurred, &stored); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// feedLatency runs a subscriber from token while copies land at opts.Rate/s (batches of 20
// every 10 ms), and returns the p99 of commit-to-handler latency in ms.
func feedLatency(ctx context.Context, pool *pgxpool.Pool, token string, opts FeedOptions, out io.Writer) (float64, error) {
	// The handler can run before the ingest call returns: it records when each event arrived,
	// and latency is computed once everything arrived (a receipt a hair before the recorded
	// commit time counts as 0).
	var (
		mu        sync.Mutex
		committed = map[uuid.UUID]time.Time{}
		received  = map[uuid.UUID]time.Time{}
	)
	subCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- feed.Subscribe(subCtx, pool, feed.Options{Resume: token}, func(_ context.Context, _ pgx.Tx, b feed.Batch) error {
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			for _, e := range b.Events {
				received[e.EventID] = now
			}
			return nil
		})
	}()
	const perTick = 20
	tick := time.Second * perTick / time.Duration(opts.Rate)
	next := int64(opts.Events) + 1
	deadline := time.Now().Add(opts.LatencyTime)
	sent := 0
	for time.Now().Before(deadline) {
		copies := make([]store.EventCopy, perTick)
		for i := range copies {
			copies[i] = store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: next, TypeSeq: next, Tenant: "t1",
				StreamID: fmt.Sprint("live", next), StreamVersion: 1, EventType: "order.placed", Payload: []byte("{}")}
			next++
		}
		if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
			cancel()
			<-done
			return 0, err
		}
		at := time.Now()
		mu.Lock()
		for _, c := range copies {
			committed[c.EventID] = at
		}
		mu.Unlock()
		sent += perTick
		time.Sleep(time.Until(at.Add(tick)))
	}
	arrived := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for id := range committed {
			if _, ok := received[id]; ok {
				n++
			}
		}
		return n
	}
	// Wait until the subscriber has handed out everything sent (a witness, bounded).
	for wait := time.Now().Add(30 * time.Second); time.Now().Before(wait) && arrived() < sent; time.Sleep(10 * time.Millisecond) {
	}
	cancel()
	<-done
	if n := arrived(); n < sent {
		return 0, fmt.Errorf("the subscriber handed out %d of %d live copies", n, sent)
	}
	mu.Lock()
	defer mu.Unlock()
	lat := make([]time.Duration, 0, sent)
	for id, at := range committed {
		lat = append(lat, max(received[id].Sub(at), 0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	fmt.Fprintf(out, "  live: %d copies at %d/s, commit to handler p50 %.2f ms, p99 %.2f ms\n", sent, opts.Rate,
		msFloat(p50), msFloat(p99))
	return msFloat(p99), nil
}
