// Package bench holds `streamseal bench` scenarios. Each runs streamseal and a baseline side by
// side in one process against one database, alternating rounds so machine noise falls on both,
// and prints ratios: never a bare time as a verdict. Each prints the machine's load average at
// its start and end (LoadWatch). The last line is `RESULT <name> key=value ... busy=0|1` with
// plain decimals; busy=1 marks figures taken while other work loaded the machine.
package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/stamper"
	"github.com/streamseal/streamseal/controlplane/store"
)

// WriteOptions sizes the write benchmark.
type WriteOptions struct {
	Rounds          int // alternating baseline/streamseal rounds per scenario
	TxnsPerClient   int // scenario (a): transactions per client per round
	Clients         int // scenario (a): concurrent clients
	BulkStatements  int // scenario (b): 1000-event statements per round
	BulkSize        int
	PayloadBytes    int
	StreamsPerActor int
	// Ingest: copies of another origin's events, IngestStatements batches of IngestBatch per
	// round (500: what the inbox hands ingest at once), against a plain insert of the same rows.
	IngestStatements int
	IngestBatch      int
	// StamperEvents are appended with no stamper running, then stamped alone: events/s.
	StamperEvents int
	// LagRate events/s of appends for LagDuration with the stamper loop alongside: lag p99.
	LagRate     int
	LagDuration time.Duration
	// BloatEvents are appended and then stamped with autovacuum off on the events table: the
	// share of dead tuples the numbering leaves behind.
	BloatEvents int
}

// QuickWrite is the --quick size; FullWrite the default.
var (
	QuickWrite = WriteOptions{Rounds: 3, TxnsPerClient: 300, Clients: 2, BulkStatements: 8, BulkSize: 1000, PayloadBytes: 200, StreamsPerActor: 50,
		IngestStatements: 16, IngestBatch: 500, StamperEvents: 50000, LagRate: 5000, LagDuration: 4 * time.Second, BloatEvents: 100000}
	FullWrite = WriteOptions{Rounds: 5, TxnsPerClient: 1500, Clients: 2, BulkStatements: 30, BulkSize: 1000, PayloadBytes: 200, StreamsPerActor: 200,
		IngestStatements: 60, IngestBatch: 500, StamperEvents: 200000, LagRate: 5000, LagDuration: 15 * time.Second, BloatEvents: 1000000}
)

// BaselineTable has the events table's shape, indexes and constraints, and none of streamseal's
// write-path work: no validation function, no triggers, no stamping. bench write inserts into it
// as its baseline; the raw pipeline (bench repair's baseline) copies rows into it.
const BaselineTable = "streamseal_bench.events"

// createBaselineTable creates BaselineTable anew, empty.
func createBaselineTable(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, `
		create schema if not exists streamseal_bench;
		drop table if exists `+BaselineTable+`;
		create table `+BaselineTable+` (like streamseal.events including all)`); err != nil {
		return fmt.Errorf("create baseline table: %w", err)
	}
	return nil
}

const baselineInsert = `
	insert into streamseal_bench.events (event_id, origin, tenant, stream_id, stream_version, event_type, flags, payload, metadata, occurred_at)
	select coalesce(e.event_id, gen_random_uuid()), 'bench-baseline', e.tenant, e.stream_id, e.stream_version, e.event_type,
	       coalesce(e.flags, 0), e.payload, e.metadata, coalesce(e.occurred_at, now())
	from unnest($1::streamseal.new_event[]) as e`

const streamsealAppend = `select streamseal.append($1::streamseal.new_event[])`

// baselineCopyInsert is the plain insert of copies: the rows ingest stores, without its checks,
// its conflict skip or its triggers.
const baselineCopyInsert = `
	insert into streamseal_bench.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags, payload, metadata, occurred_at)
	select c.event_id, c.origin, c.origin_seq, c.type_seq, c.tenant, c.stream_id, c.stream_version, c.event_type,
	       coalesce(c.flags, 0), c.payload, c.metadata, coalesce(c.occurred_at, now())
	from unnest($1::streamseal.event_copy[]) as c`

const streamsealIngest = `select streamseal.ingest($1::streamseal.event_copy[])`

// WriteResult carries the measured ratios (baseline time / streamseal time: 1.0 = free). The
// plain ratios run until every appended event is stamped; the Append ratios stop when the clients'
// appends return, with the stamper running alongside (what an application's writers feel).
type WriteResult struct {
	TxnRatio, BulkRatio             float64
	TxnAppendRatio, BulkAppendRatio float64
	IngestRatio                     float64 // 500-event ingest batches against a plain insert
	StamperEventsPerSecond          float64 // the stamper alone, on a committed backlog
	StamperLagP99                   time.Duration
	LagRateAchieved                 float64 // events/s the paced appenders reached
	DeadTupleRatio                  float64 // events' dead tuples / all tuples after BloatEvents appends and a stamp
	// The same ratios in server CPU spent (0 when the server is not on this machine).
	TxnCPURatio, BulkCPURatio, IngestCPURatio float64
	// Floor: the least work any design adds, timed the same way (not streamseal's figures).
	Floor FloorResult
}

// Write runs the write benchmark on pool (a migrated database whose service is named) and prints
// a table to out.
func Write(ctx context.Context, pool *pgxpool.Pool, opts WriteOptions, out io.Writer) (WriteResult, error) {
	load := watchLoad(out)
	if err := createBaselineTable(ctx, pool); err != nil {
		return WriteResult{}, err
	}
	fmt.Fprintf(out, "write benchmark: %d rounds; (a) %d clients x %d txns of 1-10 events; (b) %d statements of %d events; payload %d bytes\n",
		opts.Rounds, opts.Clients, opts.TxnsPerClient, opts.BulkStatements, opts.BulkSize, opts.PayloadBytes)
	fmt.Fprintln(out, "streamseal time includes stamping every appended event (a stamper loop runs alongside; the clock stops when the lane is fully stamped)")
	// Durability changes every ratio (a commit's WAL flush is paid per transaction on both sides):
	// say which server the figures are from. durable=1 in RESULT: fsync and synchronous_commit on.
	var fsync, syncCommit, fullPages string
	if err := pool.QueryRow(ctx, `select current_setting('fsync'), current_setting('synchronous_commit'), current_setting('full_page_writes')`).Scan(&fsync, &syncCommit, &fullPages); err != nil {
		return WriteResult{}, fmt.Errorf("read the server's durability settings: %w", err)
	}
	durable := 0
	if fsync == "on" && syncCommit != "off" {
		durable = 1
	}
	fmt.Fprintf(out, "server durability: fsync=%s synchronous_commit=%s full_page_writes=%s (durable=%d)\n", fsync, syncCommit, fullPages, durable)

	gen := &generator{payload: strings.Repeat("x", opts.PayloadBytes), streams: opts.StreamsPerActor, versions: map[string]int64{}}

	// First, on a table that holds nothing else yet: what numbering leaves behind.
	deadRatio, err := deadTuplesAfterStamp(ctx, pool, gen, opts.BloatEvents)
	if err != nil {
		return WriteResult{}, err
	}
	fmt.Fprintf(out, "bloat: %d appends then one stamp, autovacuum off: dead tuples %.3f of the events table (target < 0.05)\n", opts.BloatEvents, deadRatio)
	// Clean up after the bloat measurement now, or autovacuum would do it during the timed
	// rounds and charge it to whichever side happened to run.
	if _, err := pool.Exec(ctx, `vacuum (analyze) streamseal.events`); err != nil {
		return WriteResult{}, fmt.Errorf("vacuum after the bloat measurement: %w", err)
	}
	var txnBase, txnSeal, bulkBase, bulkSeal []time.Duration
	// Server CPU per side: the same ratios in CPU spent, which a busy neighbour does not skew.
	server := newServerCPU(ctx, pool)
	var txnBaseCPU, txnSealCPU, bulkBaseCPU, bulkSealCPU, ingestBaseCPU, ingestSealCPU []time.Duration
	var txnBaseAppend, txnSealAppend, bulkBaseAppend, bulkSealAppend []time.Duration
	for round := range opts.Rounds {
		// Alternate which side goes first so a warming cache or a noisy neighbour favours neither.
		sides := []bool{false, true}
		if round%2 == 1 {
			sides = []bool{true, false}
		}
		for _, withStreamseal := range sides {
			d, a, c, err := runScenario(ctx, pool, server, withStreamseal, func(ctx context.Context, sql string) error {
				return txnScenario(ctx, pool, sql, gen, opts)
			})
			if err != nil {
				return WriteResult{}, err
			}
			appendTo(&txnBase, &txnSeal, withStreamseal, d)
			appendTo(&txnBaseAppend, &txnSealAppend, withStreamseal, a)
			appendTo(&txnBaseCPU, &txnSealCPU, withStreamseal, c)
			d, a, c, err = runScenario(ctx, pool, server, withStreamseal, func(ctx context.Context, sql string) error {
				return bulkScenario(ctx, pool, sql, gen, opts)
			})
			if err != nil {
				return WriteResult{}, err
			}
			appendTo(&bulkBase, &bulkSeal, withStreamseal, d)
			appendTo(&bulkBaseAppend, &bulkSealAppend, withStreamseal, a)
			appendTo(&bulkBaseCPU, &bulkSealCPU, withStreamseal, c)
		}
		fmt.Fprintf(out, "round %d: (a) baseline %-8s streamseal %-8s (appends done %-8s) ratio %.3f | (b) baseline %-8s streamseal %-8s (appends done %-8s) ratio %.3f\n", round+1,
			ms(txnBase[round]), ms(txnSeal[round]), ms(txnSealAppend[round]), ratio(txnBase[round], txnSeal[round]),
			ms(bulkBase[round]), ms(bulkSeal[round]), ms(bulkSealAppend[round]), ratio(bulkBase[round], bulkSeal[round]))
		if server.Available() {
			fmt.Fprintf(out, "         server CPU: (a) baseline %-8s streamseal %-8s ratio %.3f | (b) baseline %-8s streamseal %-8s ratio %.3f\n",
				ms(txnBaseCPU[round]), ms(txnSealCPU[round]), ratio(txnBaseCPU[round], txnSealCPU[round]),
				ms(bulkBaseCPU[round]), ms(bulkSealCPU[round]), ratio(bulkBaseCPU[round], bulkSealCPU[round]))
		}
	}
	r := WriteResult{
		TxnRatio: medianRatio(txnBase, txnSeal), BulkRatio: medianRatio(bulkBase, bulkSeal),
		TxnAppendRatio: medianRatio(txnBaseAppend, txnSealAppend), BulkAppendRatio: medianRatio(bulkBaseAppend, bulkSealAppend),
		DeadTupleRatio: deadRatio,
	}

	// (c) Copies, as the inbox ingests them, against a plain insert of the very same rows.
	copies := &copyGenerator{generator: gen, origin: "bench-origin", typeSeqs: map[string]int64{}}
	var ingestBase, ingestSeal []time.Duration
	for round := range opts.Rounds {
		batches := make([][]store.EventCopy, opts.IngestStatements)
		for i := range batches {
			batches[i] = copies.copies(opts.IngestBatch)
		}
		sides := []bool{false, true}
		if round%2 == 1 {
			sides = []bool{true, false}
		}
		for _, withStreamseal := range sides {
			sql := baselineCopyInsert
			if withStreamseal {
				sql = streamsealIngest
			}
			start, cpuStart := time.Now(), server.Now()
			for _, batch := range batches {
				if _, err := pool.Exec(ctx, sql, batch); err != nil {
					return WriteResult{}, fmt.Errorf("ingest scenario: %w", err)
				}
			}
			appendTo(&ingestBase, &ingestSeal, withStreamseal, time.Since(start))
			appendTo(&ingestBaseCPU, &ingestSealCPU, withStreamseal, server.Now()-cpuStart)
		}
		fmt.Fprintf(out, "round %d: (c) ingest of %d x %d copies: baseline %-8s streamseal %-8s ratio %.3f", round+1,
			opts.IngestStatements, opts.IngestBatch, ms(ingestBase[round]), ms(ingestSeal[round]), ratio(ingestBase[round], ingestSeal[round]))
		if server.Available() {
			fmt.Fprintf(out, " | server CPU: baseline %-8s streamseal %-8s ratio %.3f",
				ms(ingestBaseCPU[round]), ms(ingestSealCPU[round]), ratio(ingestBaseCPU[round], ingestSealCPU[round]))
		}
		fmt.Fprintln(out)
	}
	r.IngestRatio = medianRatio(ingestBase, ingestSeal)
	if server.Available() {
		r.TxnCPURatio, r.BulkCPURatio = medianRatio(txnBaseCPU, txnSealCPU), medianRatio(bulkBaseCPU, bulkSealCPU)
		r.IngestCPURatio = medianRatio(ingestBaseCPU, ingestSealCPU)
	}

	// (d) The stamper alone, on a committed backlog.
	if r.StamperEventsPerSecond, err = stamperAlone(ctx, pool, gen, opts.StamperEvents); err != nil {
		return WriteResult{}, err
	}
	fmt.Fprintf(out, "stamper alone: %d committed events numbered at %.0f events/s (target >= 50000)\n", opts.StamperEvents, r.StamperEventsPerSecond)

	// (e) Stamper lag under a steady append rate.
	if r.StamperLagP99, r.LagRateAchieved, err = stamperLag(ctx, pool, gen, opts); err != nil {
		return WriteResult{}, err
	}
	fmt.Fprintf(out, "stamper lag at %d events/s for %s (reached %.0f events/s): p99 %.1f ms over stamp batches, each counted by its oldest event (target < 20 ms)\n",
		opts.LagRate, opts.LagDuration, r.LagRateAchieved, msFloat(r.StamperLagP99))

	fmt.Fprintf(out, "median ratio, baseline/streamseal throughput, until every event is stamped: (a) txn %.3f (target >= 0.90)  (b) bulk %.3f (target >= 0.70)\n", r.TxnRatio, r.BulkRatio)
	fmt.Fprintf(out, "median ratio, until the clients' appends return (stamper running alongside): (a) txn %.3f  (b) bulk %.3f\n", r.TxnAppendRatio, r.BulkAppendRatio)
	fmt.Fprintf(out, "median ratio, ingest of 500-copy batches against a plain insert of the same rows: (c) %.3f (target >= 0.80)\n", r.IngestRatio)
	cpuKeys := ""
	if server.Available() {
		fmt.Fprintf(out, "median ratio of server CPU spent, baseline/streamseal (what a busy neighbour does not skew): (a) txn %.3f  (b) bulk %.3f  (c) ingest %.3f\n",
			r.TxnCPURatio, r.BulkCPURatio, r.IngestCPURatio)
		cpuKeys = fmt.Sprintf(" txn_cpu_ratio=%.3f bulk_cpu_ratio=%.3f ingest_cpu_ratio=%.3f", r.TxnCPURatio, r.BulkCPURatio, r.IngestCPURatio)
	}

	// (f) The floor: what any design's least work would cost, for reading the ratios above.
	if r.Floor, err = WriteFloor(ctx, pool, opts, out); err != nil {
		return WriteResult{}, err
	}
	fmt.Fprintf(out, "RESULT write txn_ratio=%.3f bulk_ratio=%.3f ingest_ratio=%.3f stamper_events_per_s=%.0f stamper_lag_p99_ms=%.1f dead_tuple_ratio=%.3f txn_append_ratio=%.3f bulk_append_ratio=%.3f%s durable=%d busy=%d %s\n",
		r.TxnRatio, r.BulkRatio, r.IngestRatio, r.StamperEventsPerSecond, msFloat(r.StamperLagP99), r.DeadTupleRatio, r.TxnAppendRatio, r.BulkAppendRatio, cpuKeys, durable, load.End(), r.Floor.resultKeys())
	return r, nil
}

// appendUnstamped appends n own events in 1000-event statements with no stamper running.
func appendUnstamped(ctx context.Context, pool *pgxpool.Pool, gen *generator, actor string, n int) error {
	for n > 0 {
		size := min(n, 1000)
		if _, err := pool.Exec(ctx, streamsealAppend, gen.events(actor, size)); err != nil {
			return fmt.Errorf("append %d events: %w", size, err)
		}
		n -= size
	}
	return nil
}

// deadTuplesAfterStamp appends n events, stamps them all, and returns the events table's dead
// tuples over all its tuples as the statistics autovacuum acts on count them (n_dead_tup, after
// what on-page pruning already reclaimed), with autovacuum off on the table meanwhile: what
// numbering leaves for vacuum, not what vacuum happened to clean. (pgstattuple would prune the
// pages it reads before counting them.) One connection does all of it, so its statistics are
// flushed by one forced flush before they are read.
func deadTuplesAfterStamp(ctx context.Context, pool *pgxpool.Pool, gen *generator, n int) (float64, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("bloat: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `alter table streamseal.events set (autovacuum_enabled = false)`); err != nil {
		return 0, fmt.Errorf("bloat: prepare: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `alter table streamseal.events reset (autovacuum_enabled)`) //nolint:errcheck // best effort on a scratch database
	for left := n; left > 0; left -= 1000 {
		if _, err := conn.Exec(ctx, streamsealAppend, gen.events("bloat", min(left, 1000))); err != nil {
			return 0, fmt.Errorf("bloat: append: %w", err)
		}
	}
	for {
		r, err := store.EventsStamp(ctx, conn, stamper.BatchSizeDefault)
		if err != nil {
			return 0, fmt.Errorf("bloat: stamp: %w", err)
		}
		if r.Stamped < stamper.BatchSizeDefault {
			break
		}
	}
	// A backend publishes its statistics when it goes idle after a forced flush was asked for.
	if _, err := conn.Exec(ctx, `select pg_stat_force_next_flush()`); err != nil {
		return 0, fmt.Errorf("bloat: flush statistics: %w", err)
	}
	var live, dead int64
	if err := conn.QueryRow(ctx, `select n_live_tup, n_dead_tup from pg_stat_user_tables where relid = 'streamseal.events'::regclass`).Scan(&live, &dead); err != nil {
		return 0, fmt.Errorf("bloat: statistics: %w", err)
	}
	if live+dead == 0 {
		return 0, nil
	}
	return float64(dead) / float64(live+dead), nil
}

// stamperAlone appends n events with no stamper running, then times stamping them all.
func stamperAlone(ctx context.Context, pool *pgxpool.Pool, gen *generator, n int) (float64, error) {
	if err := appendUnstamped(ctx, pool, gen, "alone", n); err != nil {
		return 0, fmt.Errorf("stamper alone: %w", err)
	}
	start := time.Now()
	if err := (&stamper.Loop{Pool: pool}).Drain(ctx); err != nil {
		return 0, fmt.Errorf("stamper alone: %w", err)
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// stamperLag runs the stamper loop while two clients append 1-10 event transactions paced to
// opts.LagRate events/s, and returns the p99 of each stamp batch's oldest wait (from the
// oldest event's insert to its stamp) and the append rate reached.
func stamperLag(ctx context.Context, pool *pgxpool.Pool, gen *generator, opts WriteOptions) (time.Duration, float64, error) {
	var mu sync.Mutex
	var waits []time.Duration
	loopCtx, stop := context.WithCancel(ctx)
	loop := &stamper.Loop{Pool: pool, OnStamp: func(r store.StampResult) {
		mu.Lock()
		waits = append(waits, r.OldestWait)
		mu.Unlock()
	}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = loop.Run(loopCtx) }()
	defer func() { stop(); wg.Wait() }()

	const clients = 2
	perClient := float64(opts.LagRate) / clients
	start := time.Now()
	errs := make(chan error, clients)
	var sent [clients]int
	for c := range clients {
		go func() {
			for {
				elapsed := time.Since(start)
				if elapsed >= opts.LagDuration {
					errs <- nil
					return
				}
				due := int(perClient*elapsed.Seconds()) - sent[c]
				if due <= 0 {
					time.Sleep(time.Millisecond) // pacing an open-loop load generator, not waiting on a state
					continue
				}
				n := min(due, 1+rand.IntN(10))
				if _, err := pool.Exec(ctx, streamsealAppend, gen.events(fmt.Sprintf("lag%d", c), n)); err != nil {
					errs <- err
					return
				}
				sent[c] += n
			}
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			return 0, 0, fmt.Errorf("stamper lag: append: %w", err)
		}
	}
	achieved := float64(sent[0]+sent[1]) / time.Since(start).Seconds()
	if err := loop.Drain(ctx); err != nil {
		return 0, 0, fmt.Errorf("stamper lag: drain: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) == 0 {
		return 0, achieved, nil
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	return waits[(len(waits)*99)/100], achieved, nil
}

func msFloat(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func appendTo(base, seal *[]time.Duration, withStreamseal bool, d time.Duration) {
	if withStreamseal {
		*seal = append(*seal, d)
	} else {
		*base = append(*base, d)
	}
}

// runScenario times one scenario; with streamseal, a stamper loop runs alongside and the clock
// stops only when everything appended is stamped (total). appending is when the clients finished.
// cpu is the server CPU the side used over total.
func runScenario(ctx context.Context, pool *pgxpool.Pool, server serverCPU, withStreamseal bool, scenario func(context.Context, string) error) (total, appending, cpu time.Duration, err error) {
	cpuStart := server.Now()
	if !withStreamseal {
		start := time.Now()
		err := scenario(ctx, baselineInsert)
		return time.Since(start), time.Since(start), server.Now() - cpuStart, err
	}
	loopCtx, stop := context.WithCancel(ctx)
	loop := &stamper.Loop{Pool: pool}
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() { defer wg.Done(); _ = loop.Run(loopCtx) }()
	err = scenario(ctx, streamsealAppend)
	appending = time.Since(start)
	if err == nil {
		err = loop.Drain(ctx) // the tail the loop has not reached yet
	}
	total = time.Since(start)
	cpu = server.Now() - cpuStart
	stop()
	wg.Wait()
	return total, appending, cpu, err
}

// txnScenario: opts.Clients clients, each committing TxnsPerClient transactions of 1-10 events.
func txnScenario(ctx context.Context, pool *pgxpool.Pool, sql string, gen *generator, opts WriteOptions) error {
	errs := make(chan error, opts.Clients)
	for client := range opts.Clients {
		batches := make([][]store.NewEvent, opts.TxnsPerClient)
		for i := range batches {
			batches[i] = gen.events(fmt.Sprintf("c%d", client), 1+rand.IntN(10))
		}
		go func() {
			for _, batch := range batches {
				if _, err := pool.Exec(ctx, sql, batch); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range opts.Clients {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// bulkScenario: one client, BulkStatements statements of BulkSize events each.
func bulkScenario(ctx context.Context, pool *pgxpool.Pool, sql string, gen *generator, opts WriteOptions) error {
	batches := make([][]store.NewEvent, opts.BulkStatements)
	for i := range batches {
		batches[i] = gen.events("bulk", opts.BulkSize)
	}
	for _, batch := range batches {
		if _, err := pool.Exec(ctx, sql, batch); err != nil {
			return err
		}
	}
	return nil
}

// generator makes events spread over a fixed set of streams per actor, versions ascending.
type generator struct {
	mu       sync.Mutex
	payload  string
	streams  int
	versions map[string]int64
}

func (g *generator) events(actor string, n int) []store.NewEvent {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]store.NewEvent, n)
	for i := range out {
		stream := fmt.Sprintf("%s-s%d", actor, rand.IntN(g.streams))
		g.versions[stream]++
		out[i] = store.NewEvent{
			EventID: uuid.New(), Tenant: "t" + string(rune('a'+rand.IntN(3))), StreamID: stream,
			StreamVersion: g.versions[stream], EventType: "bench.type" + string(rune('a'+rand.IntN(4))),
			Payload: []byte(`{"p":"` + g.payload + `"}`),
		}
	}
	return out
}

// copyGenerator makes copies of one origin's events: origin_seq dense, type_seq dense per
// (tenant, event_type), as the origin's stamper numbered them.
type copyGenerator struct {
	*generator
	origin    string
	originSeq int64
	typeSeqs  map[string]int64
}

func (g *copyGenerator) copies(n int) []store.EventCopy {
	events := g.events(g.origin, n)
	out := make([]store.EventCopy, n)
	for i, e := range events {
		g.originSeq++
		key := e.Tenant + "/" + e.EventType
		g.typeSeqs[key]++
		out[i] = store.EventCopy{EventID: e.EventID, Origin: g.origin, OriginSeq: g.originSeq, TypeSeq: g.typeSeqs[key],
			Tenant: e.Tenant, StreamID: e.StreamID, StreamVersion: e.StreamVersion, EventType: e.EventType, Payload: e.Payload}
	}
	return out
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

func ratio(base, seal time.Duration) float64 { return base.Seconds() / seal.Seconds() }

func medianRatio(base, seal []time.Duration) float64 {
	rs := make([]float64, len(base))
	for i := range base {
		rs[i] = ratio(base[i], seal[i])
	}
	sort.Float64s(rs)
	return rs[len(rs)/2]
}

// The write floor (issue 16): the least work any design must add to a plain insert per own
// event, written as plain SQL in the plain insert's own statement (CTEs) or done by an ideal
// stamper apart (floorFolder), and timed against that plain insert, alternating rounds as (a)
// and (b) do. No function (but the digest hash), no queue, no NOTIFY, no check, and no trigger
// but the txn_trigger variants' empty one (the guard DESIGN.md puts on every write, at its
// cheapest): not streamseal's figures, but the ceiling any design of its numbering and digests
// could reach on this machine. Each variant writes tables of its own
// (streamseal_bench.floor_<variant>_*), shaped like streamseal's: events, stream_digests (with
// its fillfactor 50), own_numbers, and a rounds table holding one stamp round's numbers as arrays.

// FloorResult carries the floor's median ratios, plain insert time / variant time (1.0 = free).
type FloorResult struct {
	BulkDigRatio   float64 // 1000-event statements + the digest fold of their rows
	BulkRowRatio   float64 // + that and one own_numbers-shaped row per event
	BulkRoundRatio float64 // + the fold and one row of arrays per statement
	TxnRowRatio    float64 // (a)'s clients plain-inserting, a folder numbering rows + folding
	TxnRoundRatio  float64 // the same, the folder writing one row of arrays per pass

	// (a)'s clients inserting into a table guarded as streamseal guards events: an AFTER INSERT
	// statement trigger in PL/pgSQL with a transition table, doing nothing (TxnTriggerRatio), and
	// the same with txn_round's folder (TxnTriggerRoundRatio): the least a design in which
	// triggers guard every write adds, before any check or queue.
	TxnTriggerRatio, TxnTriggerRoundRatio float64
	IngestRatio                           float64 // copies with on conflict (event_id) do nothing + the digest fold

	// The bulk statements plain, with the numbers and fold done apart by a folder as in the txn
	// variants: the same work, but a folder can use the second core while the one bulk client
	// waits on its statements, so these are the wall-clock floor of a stamper design.
	BulkFolderRowRatio, BulkFolderRoundRatio float64

	// Copies inserted plainly + the digest fold: idempotent already by the primary key (a batch
	// holding a known id fails and is retried with the conflict skip, as ingest does), so this,
	// not IngestRatio, is the least ingest must do when nothing conflicts.
	IngestFoldRatio float64
}

// resultKeys are the floor's RESULT keys.
func (r FloorResult) resultKeys() string {
	return fmt.Sprintf("floor_bulk_dig_ratio=%.3f floor_bulk_row_ratio=%.3f floor_bulk_round_ratio=%.3f floor_txn_row_ratio=%.3f floor_txn_round_ratio=%.3f floor_txn_trigger_ratio=%.3f floor_txn_trigger_round_ratio=%.3f floor_ingest_ratio=%.3f floor_bulk_folder_row_ratio=%.3f floor_bulk_folder_round_ratio=%.3f floor_ingest_fold_ratio=%.3f",
		r.BulkDigRatio, r.BulkRowRatio, r.BulkRoundRatio, r.TxnRowRatio, r.TxnRoundRatio, r.TxnTriggerRatio, r.TxnTriggerRoundRatio, r.IngestRatio, r.BulkFolderRowRatio, r.BulkFolderRoundRatio, r.IngestFoldRatio)
}

const floorOrigin = "bench-floor"

// floorPrefix names a variant's tables: <prefix>_events, _digests, _numbers, _rounds, _seq.
func floorPrefix(variant string) string { return "streamseal_bench.floor_" + variant }

// createFloorTables creates each variant's tables anew, empty.
func createFloorTables(ctx context.Context, pool *pgxpool.Pool, variants ...string) error {
	for _, v := range variants {
		if _, err := pool.Exec(ctx, fmt.Sprintf(`
			create schema if not exists streamseal_bench;
			drop table if exists %[1]s_events, %[1]s_digests, %[1]s_numbers, %[1]s_rounds;
			drop sequence if exists %[1]s_seq;
			create table %[1]s_events (like streamseal.events including all);
			create table %[1]s_digests (like streamseal.stream_digests including all) with (fillfactor = 50);
			create table %[1]s_numbers (like streamseal.own_numbers including all);
			create table %[1]s_rounds (origin text not null, origin_seq_first bigint not null, event_ids uuid[] not null,
				type_seqs bigint[] not null, primary key (origin, origin_seq_first));
			create sequence %[1]s_seq`, floorPrefix(v))); err != nil {
			return fmt.Errorf("floor: create the tables of %s: %w", v, err)
		}
	}
	return nil
}

// guardFloorTables gives each variant's events table the least guard a trigger design pays: an
// AFTER INSERT statement trigger in PL/pgSQL capturing the inserted rows as a transition table,
// with a body that does nothing (streamseal's checks, queue and wake-up all come on top).
func guardFloorTables(ctx context.Context, pool *pgxpool.Pool, variants ...string) error {
	if _, err := pool.Exec(ctx, `create or replace function streamseal_bench.floor_guard() returns trigger
		language plpgsql as $$ begin return null; end $$`); err != nil {
		return fmt.Errorf("floor: create the guard function: %w", err)
	}
	for _, v := range variants {
		if _, err := pool.Exec(ctx, fmt.Sprintf(`create trigger floor_guarded after insert on %s_events
			referencing new table as inserted for each statement execute function streamseal_bench.floor_guard()`, floorPrefix(v))); err != nil {
			return fmt.Errorf("floor: guard the events of %s: %w", v, err)
		}
	}
	return nil
}

// floorPlainInsert is baselineInsert into a variant's own table: the plain side of every ratio.
func floorPlainInsert(variant string) string {
	return strings.Replace(strings.Replace(baselineInsert, BaselineTable, floorPrefix(variant)+"_events", 1), "'bench-baseline'", "'"+floorOrigin+"'", 1)
}

// floorInsertCTE is the plain insert as a CTE named ins, returning what the fold and numbers read.
func floorInsertCTE(variant string) string {
	return fmt.Sprintf(`ins as (%s returning local_id, event_id, origin, tenant, event_type, stream_id, flags)`, floorPlainInsert(variant))
}

// floorFoldCTE folds the rows of src into the variant's digests, one upsert per bucket.
func floorFoldCTE(variant, src string) string {
	return fmt.Sprintf(`dg as (insert into %[1]s_digests as d (origin, tenant, event_type, stream_id, x0, x1, n, updated_at)
		select i.origin, i.tenant, i.event_type, i.stream_id, bit_xor(streamseal._h0(i.event_id)), bit_xor(streamseal._h1(i.event_id)), count(*), now()
		from %[2]s i group by 1, 2, 3, 4 order by 1, 2, 3, 4
		on conflict (origin, tenant, event_type, stream_id) do update
		set x0 = d.x0 # excluded.x0, x1 = d.x1 # excluded.x1, n = d.n + excluded.n, updated_at = excluded.updated_at)`, floorPrefix(variant), src)
}

// floorRowsCTE numbers each row of src with one own_numbers-shaped row (today's design). A
// sequence stands in for both numbers: less work than per-type numbering, as a floor should be.
func floorRowsCTE(variant, src string) string {
	return fmt.Sprintf(`nm as (insert into %[1]s_numbers (origin, origin_seq, type_seq, event_id, tenant, event_type, stream_id, flags, local_id)
		select x.origin, x.s, x.s, x.event_id, x.tenant, x.event_type, x.stream_id, x.flags, x.local_id
		from (select i.*, nextval('%[1]s_seq') as s from %[2]s i) x)`, floorPrefix(variant), src)
}

// floorRoundCTE numbers the rows of src as one row of arrays: the round's first number, its
// events and their numbers in order.
func floorRoundCTE(variant, src string) string {
	return fmt.Sprintf(`nm as (insert into %[1]s_rounds (origin, origin_seq_first, event_ids, type_seqs)
		select '%[3]s', min(x.s), array_agg(x.event_id), array_agg(x.s)
		from (select i.event_id, nextval('%[1]s_seq') as s from %[2]s i) x having count(*) > 0)`, floorPrefix(variant), src, floorOrigin)
}

// floorBulkSQL is one statement per batch: the plain insert and the variant's CTEs after it.
func floorBulkSQL(variant string, ctes ...func(variant, src string) string) string {
	if len(ctes) == 0 {
		return floorPlainInsert(variant)
	}
	parts := []string{floorInsertCTE(variant)}
	for _, cte := range ctes {
		parts = append(parts, cte(variant, "ins"))
	}
	return "with " + strings.Join(parts, ",\n") + "\nselect count(*) from ins"
}

// floorFolderSQL is one pass of an ideal stamper: the rows inserted since the last pass ($1, a
// local_id), at most $2, numbered and folded in one statement. It takes only the gapless run of
// local_ids after $1 (none rolls back here, so a gap is a transaction still in flight), so a late
// commit is never passed over (invariant 7's concern) and the folder's work is exactly the
// clients' rows. It returns the new last local_id and how many rows it took.
func floorFolderSQL(variant string, numbers func(variant, src string) string) string {
	return fmt.Sprintf(`with b as (select local_id, event_id, origin, tenant, event_type, stream_id, flags from %[1]s_events
			where local_id > $1 order by local_id limit $2),
		ready as (select c.* from (select b.*, row_number() over (order by b.local_id) as rn from b) c where c.local_id = $1 + c.rn),
		%[2]s,
		%[3]s
		select coalesce(max(local_id), $1)::bigint, count(*) from ready`, floorPrefix(variant), numbers(variant, "ready"), floorFoldCTE(variant, "ready"))
}

// floorIngestSQL: copies stored (with skipConflicts, on conflict (event_id) do nothing) and folded.
func floorIngestSQL(variant string, skipConflicts bool) string {
	insert := strings.Replace(baselineCopyInsert, BaselineTable, floorPrefix(variant)+"_events", 1)
	if skipConflicts {
		insert += " on conflict (event_id) do nothing"
	}
	return fmt.Sprintf(`with ins as (%s returning event_id, origin, tenant, event_type, stream_id),
		%s
		select count(*) from ins`, insert, floorFoldCTE(variant, "ins"))
}

// floorRun times one variant's share of a round.
type floorRun func(context.Context) (time.Duration, error)

// floorRounds runs opts.Rounds rounds of a scenario's variants (the plain insert first in the
// list), alternating their order so noise falls on all, prints each round, and returns the median
// ratio of the plain insert to each other variant. prepare makes one round's runs over the same
// rows, one per variant. When the server's CPU can be read, the same ratios in server CPU spent
// are printed too (a busy neighbour skews them less).
func floorRounds(ctx context.Context, out io.Writer, server serverCPU, scenario string, rounds int, labels []string, prepare func() []floorRun) ([]float64, error) {
	times := make([][]time.Duration, len(labels))
	cpus := make([][]time.Duration, len(labels))
	for round := range rounds {
		runs := prepare()
		for k := range runs {
			i := k
			if round%2 == 1 {
				i = len(runs) - 1 - k
			}
			cpuStart := server.Now()
			d, err := runs[i](ctx)
			if err != nil {
				return nil, fmt.Errorf("floor %s, %s: %w", scenario, labels[i], err)
			}
			times[i] = append(times[i], d)
			cpus[i] = append(cpus[i], server.Now()-cpuStart)
		}
		fmt.Fprintf(out, "floor round %d: %s: %s %-8s", round+1, scenario, labels[0], ms(times[0][round]))
		for i := 1; i < len(labels); i++ {
			fmt.Fprintf(out, " | %s %-8s %.3f", labels[i], ms(times[i][round]), ratio(times[0][round], times[i][round]))
		}
		fmt.Fprintln(out)
	}
	medians := make([]float64, len(labels))
	for i := 1; i < len(labels); i++ {
		medians[i] = medianRatio(times[0], times[i])
	}
	if server.Available() {
		fmt.Fprintf(out, "floor %s: median ratio of server CPU spent, plain/variant:", scenario)
		for i := 1; i < len(labels); i++ {
			fmt.Fprintf(out, " %s %.3f", labels[i], medianRatio(cpus[0], cpus[i]))
		}
		fmt.Fprintln(out)
	}
	return medians, nil
}

// floorStatements times one statement per batch.
func floorStatements[T any](pool *pgxpool.Pool, sql string, batches [][]T) floorRun {
	return func(ctx context.Context) (time.Duration, error) {
		start := time.Now()
		for _, batch := range batches {
			if _, err := pool.Exec(ctx, sql, batch); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
}

// floorFolder is the ideal stamper of a folder variant: one goroutine, one statement a pass, woken
// by the clients in process (a NOTIFY that costs the database nothing).
type floorFolder struct {
	pool  *pgxpool.Pool
	sql   string
	batch int
	last  int64 // every row up to this local_id is numbered and folded
}

// run folds until done is closed and a pass begun after that finds fewer rows than a batch:
// every client has committed by then, so that pass saw and took the last of them.
func (f *floorFolder) run(ctx context.Context, wake, done <-chan struct{}) error {
	for {
		finished := isClosed(done)
		var taken int64
		if err := f.pool.QueryRow(ctx, f.sql, f.last, f.batch).Scan(&f.last, &taken); err != nil {
			return fmt.Errorf("folder pass after local_id %d: %w", f.last, err)
		}
		switch {
		case taken == int64(f.batch):
		case finished:
			return nil
		default:
			select {
			case <-wake:
			case <-done:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// floorTxn times clients plain-inserting their batches (a's transactions, or b's statements as
// one client) into variant's table and, with a folder, until the folder has caught up with the
// last row.
func floorTxn(pool *pgxpool.Pool, variant string, folder *floorFolder, clients [][][]store.NewEvent) floorRun {
	return func(ctx context.Context) (time.Duration, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		sql := floorPlainInsert(variant)
		wake, done := make(chan struct{}, 1), make(chan struct{})
		folded := make(chan error, 1)
		start := time.Now()
		if folder != nil {
			go func() { folded <- folder.run(ctx, wake, done) }()
		}
		errs := make(chan error, len(clients))
		for _, batches := range clients {
			go func() {
				for _, batch := range batches {
					if _, err := pool.Exec(ctx, sql, batch); err != nil {
						errs <- err
						return
					}
					select {
					case wake <- struct{}{}:
					default:
					}
				}
				errs <- nil
			}()
		}
		var first error
		for range clients {
			if err := <-errs; err != nil && first == nil {
				first = err
				cancel() // the folder would wait for the gap a failed insert left
			}
		}
		close(done)
		if folder != nil {
			if err := <-folded; err != nil && first == nil {
				first = err
			}
		}
		return time.Since(start), first
	}
}

// WriteFloor runs the write floor (see FloorResult) on pool, a migrated database: (b)'s bulk
// statements, (a)'s transactions with an ideal stamper apart, and (c)'s copies, each variant
// against the plain insert of the very same rows.
func WriteFloor(ctx context.Context, pool *pgxpool.Pool, opts WriteOptions, out io.Writer) (FloorResult, error) {
	fmt.Fprintln(out, "floor: the least any design adds per own event, as plain SQL in the plain insert's own statement or by an ideal folder apart (digest fold, numbers): no checks, no queue, no NOTIFY, no trigger but the txn variants' empty one; these are not streamseal's figures")
	if err := createFloorTables(ctx, pool, "bulk_plain", "bulk_dig", "bulk_row", "bulk_round", "bulk_folder_row", "bulk_folder_round",
		"txn_plain", "txn_row", "txn_round", "txn_trigger", "txn_trigger_round", "ingest_plain", "ingest_fold", "ingest_plain_fold"); err != nil {
		return FloorResult{}, err
	}
	if err := guardFloorTables(ctx, pool, "txn_trigger", "txn_trigger_round"); err != nil {
		return FloorResult{}, err
	}
	// The txn variants use Clients+1 connections at once: open them now, not in the first round.
	if err := warmConnections(ctx, pool, opts.Clients+1); err != nil {
		return FloorResult{}, err
	}
	f := floorPhase{pool: pool, opts: opts, out: out, server: newServerCPU(ctx, pool),
		gen: &generator{payload: strings.Repeat("x", opts.PayloadBytes), streams: opts.StreamsPerActor, versions: map[string]int64{}}}
	var r FloorResult
	bulk, err := f.bulk(ctx)
	if err != nil {
		return FloorResult{}, err
	}
	r.BulkDigRatio, r.BulkRowRatio, r.BulkRoundRatio, r.BulkFolderRowRatio, r.BulkFolderRoundRatio = bulk[1], bulk[2], bulk[3], bulk[4], bulk[5]
	txn, err := f.txn(ctx)
	if err != nil {
		return FloorResult{}, err
	}
	r.TxnRowRatio, r.TxnRoundRatio, r.TxnTriggerRatio, r.TxnTriggerRoundRatio = txn[1], txn[2], txn[3], txn[4]
	ingest, err := f.ingest(ctx)
	if err != nil {
		return FloorResult{}, err
	}
	r.IngestRatio, r.IngestFoldRatio = ingest[1], ingest[2]
	fmt.Fprintf(out, "floor median ratio, plain insert / plain insert + the least work (not streamseal's figures): %s\n", r.resultKeys())
	return r, nil
}

// floorPhase is what the floor's scenarios share.
type floorPhase struct {
	pool   *pgxpool.Pool
	opts   WriteOptions
	out    io.Writer
	server serverCPU
	gen    *generator
}

func (f floorPhase) folder(variant string, numbers func(variant, src string) string) *floorFolder {
	return &floorFolder{pool: f.pool, sql: floorFolderSQL(variant, numbers), batch: stamper.BatchSizeDefault}
}

// bulk: (b)'s statements, the work in each statement, then apart by a folder.
func (f floorPhase) bulk(ctx context.Context) ([]float64, error) {
	rows, round := f.folder("bulk_folder_row", floorRowsCTE), f.folder("bulk_folder_round", floorRoundCTE)
	labels := []string{"plain", "+digests", "+digests+number rows", "+digests+one array row",
		"+folder: number rows+digests", "+folder: one array row a pass+digests"}
	return floorRounds(ctx, f.out, f.server, "bulk", f.opts.Rounds, labels, func() []floorRun {
		batches := make([][]store.NewEvent, f.opts.BulkStatements)
		for i := range batches {
			batches[i] = f.gen.events("floor-bulk", f.opts.BulkSize)
		}
		return []floorRun{
			floorStatements(f.pool, floorBulkSQL("bulk_plain"), batches),
			floorStatements(f.pool, floorBulkSQL("bulk_dig", floorFoldCTE), batches),
			floorStatements(f.pool, floorBulkSQL("bulk_row", floorRowsCTE, floorFoldCTE), batches),
			floorStatements(f.pool, floorBulkSQL("bulk_round", floorRoundCTE, floorFoldCTE), batches),
			floorTxn(f.pool, "bulk_folder_row", rows, [][][]store.NewEvent{batches}),
			floorTxn(f.pool, "bulk_folder_round", round, [][][]store.NewEvent{batches}),
		}
	})
}

// txn: (a)'s clients and transactions, the work done by a folder apart.
func (f floorPhase) txn(ctx context.Context) ([]float64, error) {
	rows, round := f.folder("txn_row", floorRowsCTE), f.folder("txn_round", floorRoundCTE)
	guardedRound := f.folder("txn_trigger_round", floorRoundCTE)
	labels := []string{"plain", "+folder: number rows+digests", "+folder: one array row a pass+digests",
		"+empty plpgsql statement trigger", "+that trigger+folder: one array row a pass+digests"}
	return floorRounds(ctx, f.out, f.server, "txn", f.opts.Rounds, labels, func() []floorRun {
		clients := make([][][]store.NewEvent, f.opts.Clients)
		for c := range clients {
			clients[c] = make([][]store.NewEvent, f.opts.TxnsPerClient)
			for i := range clients[c] {
				clients[c][i] = f.gen.events(fmt.Sprintf("floor-c%d", c), 1+rand.IntN(10))
			}
		}
		return []floorRun{floorTxn(f.pool, "txn_plain", nil, clients), floorTxn(f.pool, "txn_row", rows, clients), floorTxn(f.pool, "txn_round", round, clients),
			floorTxn(f.pool, "txn_trigger", nil, clients), floorTxn(f.pool, "txn_trigger_round", guardedRound, clients)}
	})
}

// ingest: (c)'s copies, stored with and without the conflict skip, and folded.
func (f floorPhase) ingest(ctx context.Context) ([]float64, error) {
	copies := &copyGenerator{generator: f.gen, origin: "bench-origin", typeSeqs: map[string]int64{}}
	labels := []string{"plain copies", "+on conflict do nothing+digests", "+digests (plain insert)"}
	return floorRounds(ctx, f.out, f.server, "ingest", f.opts.Rounds, labels, func() []floorRun {
		batches := make([][]store.EventCopy, f.opts.IngestStatements)
		for i := range batches {
			batches[i] = copies.copies(f.opts.IngestBatch)
		}
		return []floorRun{
			floorStatements(f.pool, strings.Replace(baselineCopyInsert, BaselineTable, floorPrefix("ingest_plain")+"_events", 1), batches),
			floorStatements(f.pool, floorIngestSQL("ingest_fold", true), batches),
			floorStatements(f.pool, floorIngestSQL("ingest_plain_fold", false), batches),
		}
	})
}

// warmConnections has the pool open n connections (and keep them), so no timed run pays for one.
func warmConnections(ctx context.Context, pool *pgxpool.Pool, n int) error {
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range min(n, int(pool.Config().MaxConns)) {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("floor: open a connection: %w", err)
		}
		conns = append(conns, c)
	}
	return nil
}
