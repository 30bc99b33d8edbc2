// check.go: the workload (appends through the SQL API) and the witnesses (what the databases
// say: convergence event by event, digests, requests sent per range).

package chaos

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Failsafe bounds each wait on a witness; it is never what a case asserts.
const Failsafe = 3 * time.Minute

// Workload appends an origin's events through streamseal.append, set-based: event i goes to
// stream i mod Streams at version i div Streams + 1, its type and tenant fixed by its stream, its
// payload a few dozen bytes naming i.
type Workload struct {
	Streams int
	Types   []string
	Tenants []string

	mu   sync.Mutex
	next int64
}

// Append appends n events in one statement and returns how many it stored.
func (wl *Workload) Append(ctx context.Context, s *Service, n int) error {
	wl.mu.Lock()
	from := wl.next
	wl.next += int64(n)
	wl.mu.Unlock()
	_, err := s.Pool.Exec(ctx, `
		select count(*) from streamseal.append(array(
		    select row(null, ($4::text[])[((g % $3) / cardinality($5::text[])) % cardinality($4::text[]) + 1], 'stream-' || lpad((g % $3)::text, 6, '0'),
		               g / $3 + 1, ($5::text[])[(g % $3) % cardinality($5::text[]) + 1], 0,
		               convert_to(format('{"n":%s,"h":"%s"}', g, md5(g::text)), 'UTF8'), null, null)::streamseal.new_event
		    from generate_series($1::bigint, $2::bigint - 1) g))`,
		from, from+int64(n), wl.Streams, wl.Tenants, wl.Types)
	if err != nil {
		wl.mu.Lock()
		if wl.next == from+int64(n) {
			wl.next = from // nothing was stored: the numbers are free again
		}
		wl.mu.Unlock()
		return fmt.Errorf("append %d events to %s: %w", n, s.Name, err)
	}
	return nil
}

// Appended is how many events the workload stored.
func (wl *Workload) Appended() int64 {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	return wl.next
}

// AppendAll appends n events in batches of at most batch.
func (wl *Workload) AppendAll(ctx context.Context, s *Service, n, batch int) error {
	for n > 0 {
		b := min(n, batch)
		if err := wl.Append(ctx, s, b); err != nil {
			return err
		}
		n -= b
	}
	return nil
}

// Steady appends rate events a second in ten batches a second until stop is closed; a failed
// batch (the database restarting) is retried after a short pause, as an application would. It
// returns how many batches failed. Closing stop lets the statement in flight finish (it runs on
// ctx, which stop does not cancel): a statement cancelled mid-flight may have committed while
// its client saw only the cancellation, and Appended would then count a stored batch as free.
func (wl *Workload) Steady(ctx context.Context, s *Service, rate int, stop <-chan struct{}) (failed int) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return failed
		case <-stop:
			return failed
		case <-tick.C:
		}
		if err := wl.Append(ctx, s, max(1, rate/10)); err != nil && ctx.Err() == nil {
			failed++
		}
	}
}

// eventRow is one event's identity and payload digest.
type eventRow struct {
	OriginSeq, TypeSeq, Version int64
	Tenant, Stream, Type        string
	Payload                     string // md5 of the bytes
}

func lane(ctx context.Context, s *Service, origin string, types []string) (map[uuid.UUID]eventRow, error) {
	rows, err := s.Pool.Query(ctx, `
		select event_id, origin_seq, type_seq, stream_version, tenant, stream_id, event_type, md5(payload)
		from streamseal.numbered_events
		where origin = $1 and event_type = any($2)`, origin, types)
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID]eventRow{}
	var id uuid.UUID
	var r eventRow
	_, err = pgx.ForEachRow(rows, []any{&id, &r.OriginSeq, &r.TypeSeq, &r.Version, &r.Tenant, &r.Stream, &r.Type, &r.Payload}, func() error {
		out[id] = r
		return nil
	})
	return out, err
}

// Comparison is a consumer's copy of an origin's lane against the origin's own.
type Comparison struct {
	OriginEvents  int // stamped events of the compared types on the origin
	Lost          int // on the origin, not on the consumer
	Extra         int // on the consumer, not on the origin (a duplicate under another id)
	Mismatched    int // same id, different identity or payload bytes
	DigestsDiffer int // buckets whose (x0, x1, n) differ
	FirstLost     []uuid.UUID
}

// Converged says whether the copy is exact.
func (c Comparison) Converged() bool {
	return c.Lost == 0 && c.Extra == 0 && c.Mismatched == 0 && c.DigestsDiffer == 0 && c.OriginEvents > 0
}

func (c Comparison) String() string {
	return fmt.Sprintf("origin %d events; lost %d, extra %d, mismatched %d, digests differing %d (first lost %v)",
		c.OriginEvents, c.Lost, c.Extra, c.Mismatched, c.DigestsDiffer, c.FirstLost)
}

// Compare compares consumer's copy of origin's events of types with origin's store, event by
// event (id, origin_seq, type_seq, tenant, stream, version, type, payload bytes) and digest by
// digest.
func Compare(ctx context.Context, origin, consumer *Service, types []string) (Comparison, error) {
	want, err := lane(ctx, origin, origin.Name, types)
	if err != nil {
		return Comparison{}, fmt.Errorf("read %s: %w", origin.Name, err)
	}
	got, err := lane(ctx, consumer, origin.Name, types)
	if err != nil {
		return Comparison{}, fmt.Errorf("read %s: %w", consumer.Name, err)
	}
	c := Comparison{OriginEvents: len(want)}
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			c.Lost++
			if len(c.FirstLost) < 5 {
				c.FirstLost = append(c.FirstLost, id)
			}
		case g != w:
			c.Mismatched++
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			c.Extra++
		}
	}
	digests := `select tenant || '/' || event_type || '/' || stream_id, x0::text || ':' || x1::text || ':' || n::text
		from streamseal.stream_digests where origin = $1 and event_type = any($2)`
	wd, err := keyed(ctx, origin, digests, origin.Name, types)
	if err != nil {
		return c, err
	}
	gd, err := keyed(ctx, consumer, digests, origin.Name, types)
	if err != nil {
		return c, err
	}
	for k, v := range wd {
		if gd[k] != v && !(gd[k] == "" && v == "0:0:0") {
			c.DigestsDiffer++
		}
	}
	for k, v := range gd {
		if _, ok := wd[k]; !ok && v != "0:0:0" {
			c.DigestsDiffer++
		}
	}
	return c, nil
}

func keyed(ctx context.Context, s *Service, sql string, args ...any) (map[string]string, error) {
	rows, err := s.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var k, v string
	_, err = pgx.ForEachRow(rows, []any{&k, &v}, func() error { out[k] = v; return nil })
	return out, err
}

// counts is the cheap witness polled before a full comparison: the origin's stamped events of
// types, its unstamped ones, and the consumer's copies.
func counts(ctx context.Context, origin, consumer *Service, types []string) (stamped, unstamped, copies int64, err error) {
	if err = origin.Pool.QueryRow(ctx, `
		select (select count(*) from streamseal.numbered_events where origin = $1 and event_type = any($2)),
		       (select count(*) from streamseal.unstamped)`, origin.Name, types).Scan(&stamped, &unstamped); err != nil {
		return
	}
	err = consumer.Pool.QueryRow(ctx, "select count(*) from streamseal.events where origin = $1 and event_type = any($2)",
		origin.Name, types).Scan(&copies)
	return
}

// WaitConverged polls until consumer's copy of origin's lane is exact (every event appended by
// then stamped and copied, identity and bytes equal, digests equal) and returns the comparison
// and how long it took from since. Failing the failsafe, it returns the last comparison and an
// error.
func WaitConverged(ctx context.Context, origin, consumer *Service, types []string, since time.Time) (Comparison, time.Duration, error) {
	deadline := time.Now().Add(Failsafe)
	var last Comparison
	var lastErr error
	for {
		stamped, unstamped, copies, err := counts(ctx, origin, consumer, types)
		if err == nil && unstamped == 0 && stamped > 0 && copies >= stamped {
			last, err = Compare(ctx, origin, consumer, types)
			if err == nil && last.Converged() {
				return last, time.Since(since), nil
			}
		}
		if err != nil {
			lastErr = err // a database restarting: ask again
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if c, err := Compare(context.WithoutCancel(ctx), origin, consumer, types); err == nil {
				last = c
			}
			return last, time.Since(since), fmt.Errorf("not converged after %s: %s (last error %v)", Failsafe, last, lastErr)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// NumberingHoles describes where the origin's numbering of its own events is not dense (origin_seq
// 1..n per service, type_seq 1..n per tenant and type, each number once), or "" when it is.
func NumberingHoles(ctx context.Context, origin *Service) (string, error) {
	var originSeq, typeSeq string
	err := origin.Pool.QueryRow(ctx, `
		select (select case when count(*) = count(distinct origin_seq) and coalesce(max(origin_seq), 0) = count(*) then ''
		                    else format('origin_seq: %s events, %s distinct, max %s', count(*), count(distinct origin_seq), max(origin_seq)) end
		        from streamseal.numbered_events where origin = $1),
		       (select coalesce(string_agg(format('type_seq of %s/%s: %s events, %s distinct, max %s', tenant, event_type, n, d, m), '; '), '')
		        from (select tenant, event_type, count(*) n, count(distinct type_seq) d, max(type_seq) m
		              from streamseal.numbered_events where origin = $1 group by tenant, event_type) per_type
		        where n <> d or m <> n)`, origin.Name).Scan(&originSeq, &typeSeq)
	if err != nil {
		return "", err
	}
	return strings.Trim(originSeq+"; "+typeSeq, "; "), nil
}

// Requests are the repair requests a consumer sent, from its own records.
type Requests struct {
	Sent        int            // rows in sent_requests
	BySource    map[string]int // checkpoint, audit, follow_up, operator
	MaxPerRange int            // the most requests with the same selection (request id aside)
	GapReports  int            // confirmed-gap reports
	MaxPerGap   int            // the most reports of one (tenant, type, type_seqs)
}

// RequestsSent reads consumer's sent_requests and gap_reports about origin.
func RequestsSent(ctx context.Context, consumer *Service, origin string) (Requests, error) {
	r := Requests{BySource: map[string]int{}}
	rows, err := consumer.Pool.Query(ctx, "select source, count(*) from streamseal.sent_requests where origin = $1 group by source", origin)
	if err != nil {
		return r, err
	}
	var source string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&source, &n}, func() error { r.BySource[source] = n; r.Sent += n; return nil }); err != nil {
		return r, err
	}
	if err := consumer.Pool.QueryRow(ctx, `
		select coalesce(max(n), 0) from (
		    select count(*) n from streamseal.sent_requests where origin = $1 group by request - 'request_id') per_range`,
		origin).Scan(&r.MaxPerRange); err != nil {
		return r, err
	}
	err = consumer.Pool.QueryRow(ctx, `
		select coalesce(sum(n), 0), coalesce(max(n), 0) from (
		    select count(*) n from streamseal.gap_reports where origin = $1 group by tenant, event_type, type_seqs) per_gap`,
		origin).Scan(&r.GapReports, &r.MaxPerGap)
	return r, err
}

// DroppedShare is how many of ids the chaos build's --fault-drop-first-delivery share chooses
// (the same choice fault_chaos.go makes: FNV-1a of the id against the share).
func DroppedShare(ids []uuid.UUID, share float64) int {
	limit := uint64(share * float64(^uint64(0)))
	n := 0
	for _, id := range ids {
		h := fnv.New64a()
		h.Write(id[:])
		if h.Sum64() <= limit {
			n++
		}
	}
	return n
}

// OriginIDs lists an origin's own event ids of types.
func OriginIDs(ctx context.Context, origin *Service, types []string) ([]uuid.UUID, error) {
	rows, err := origin.Pool.Query(ctx, "select event_id from streamseal.events where origin = $1 and event_type = any($2)", origin.Name, types)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	return ids, err
}

// Until polls witness every 20 ms until it holds or the failsafe passes.
func Until(ctx context.Context, what string, witness func() (bool, error)) error {
	deadline := time.Now().Add(Failsafe)
	var lastErr error
	for {
		ok, err := witness()
		if err == nil && ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("gave up waiting for %s after %s (last error %v)", what, Failsafe, lastErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Table renders figures as the suite's table.
func Table(figures []Figures) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-40s %7s %6s %9s %7s %5s %5s %6s %-28s %6s %6s %5s  %s\n",
		"case", "events", "damage", "converged", "seconds", "lost", "dup", "reqs", "by source", "max/rq", "max/gap", "exits", "note")
	for _, f := range figures {
		conv := "no"
		if f.Converged {
			conv = "yes"
		}
		var sources []string
		for _, s := range []string{"checkpoint", "follow_up", "audit", "operator"} {
			if n := f.Requests.BySource[s]; n > 0 {
				sources = append(sources, fmt.Sprintf("%s=%d", s, n))
			}
		}
		note := f.Note
		if f.Audits > 0 && !strings.Contains(note, "audits") {
			note = fmt.Sprintf("%d audits; %s", f.Audits, note)
		}
		fmt.Fprintf(&b, "%-40s %7d %6d %9s %7.1f %5d %5d %6d %-28s %6d %6d %5d  %s\n",
			f.Case, f.Events, f.Damage, conv, f.Seconds, f.Lost, f.Duplicated, f.Requests.Sent, strings.Join(sources, ","),
			f.Requests.MaxPerRange, f.Requests.MaxPerGap, f.Exits, note)
	}
	return b.String()
}
