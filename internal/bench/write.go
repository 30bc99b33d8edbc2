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
}

// QuickWrite is the --quick size; FullWrite the default.
var (
	QuickWrite = WriteOptions{Rounds: 3, TxnsPerClient: 300, Clients: 2, BulkStatements: 8, BulkSize: 1000, PayloadBytes: 200, StreamsPerActor: 50}
	FullWrite  = WriteOptions{Rounds: 5, TxnsPerClient: 1500, Clients: 2, BulkStatements: 30, BulkSize: 1000, PayloadBytes: 200, StreamsPerActor: 200}
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

// WriteResult carries the measured ratios (baseline time / streamseal time: 1.0 = free). The
// plain ratios run until every appended event is stamped; the Append ratios stop when the clients'
// appends return, with the stamper running alongside (what an application's writers feel).
type WriteResult struct {
	TxnRatio, BulkRatio             float64
	TxnAppendRatio, BulkAppendRatio float64
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

	gen := &generator{payload: strings.Repeat("x", opts.PayloadBytes), streams: opts.StreamsPerActor, versions: map[string]int64{}}
	var txnBase, txnSeal, bulkBase, bulkSeal []time.Duration
	var txnBaseAppend, txnSealAppend, bulkBaseAppend, bulkSealAppend []time.Duration
	for round := range opts.Rounds {
		// Alternate which side goes first so a warming cache or a noisy neighbour favours neither.
		sides := []bool{false, true}
		if round%2 == 1 {
			sides = []bool{true, false}
		}
		for _, withStreamseal := range sides {
			d, a, err := runScenario(ctx, pool, withStreamseal, func(ctx context.Context, sql string) error {
				return txnScenario(ctx, pool, sql, gen, opts)
			})
			if err != nil {
				return WriteResult{}, err
			}
			appendTo(&txnBase, &txnSeal, withStreamseal, d)
			appendTo(&txnBaseAppend, &txnSealAppend, withStreamseal, a)
			d, a, err = runScenario(ctx, pool, withStreamseal, func(ctx context.Context, sql string) error {
				return bulkScenario(ctx, pool, sql, gen, opts)
			})
			if err != nil {
				return WriteResult{}, err
			}
			appendTo(&bulkBase, &bulkSeal, withStreamseal, d)
			appendTo(&bulkBaseAppend, &bulkSealAppend, withStreamseal, a)
		}
		fmt.Fprintf(out, "round %d: (a) baseline %-8s streamseal %-8s (appends done %-8s) ratio %.3f | (b) baseline %-8s streamseal %-8s (appends done %-8s) ratio %.3f\n", round+1,
			ms(txnBase[round]), ms(txnSeal[round]), ms(txnSealAppend[round]), ratio(txnBase[round], txnSeal[round]),
			ms(bulkBase[round]), ms(bulkSeal[round]), ms(bulkSealAppend[round]), ratio(bulkBase[round], bulkSeal[round]))
	}
	r := WriteResult{
		TxnRatio: medianRatio(txnBase, txnSeal), BulkRatio: medianRatio(bulkBase, bulkSeal),
		TxnAppendRatio: medianRatio(txnBaseAppend, txnSealAppend), BulkAppendRatio: medianRatio(bulkBaseAppend, bulkSealAppend),
	}
	fmt.Fprintf(out, "median ratio, baseline/streamseal throughput, until every event is stamped: (a) txn %.3f (target >= 0.90)  (b) bulk %.3f (target >= 0.70)\n", r.TxnRatio, r.BulkRatio)
	fmt.Fprintf(out, "median ratio, until the clients' appends return (stamper running alongside): (a) txn %.3f  (b) bulk %.3f\n", r.TxnAppendRatio, r.BulkAppendRatio)
	fmt.Fprintf(out, "RESULT write txn_ratio=%.3f bulk_ratio=%.3f txn_append_ratio=%.3f bulk_append_ratio=%.3f busy=%d\n",
		r.TxnRatio, r.BulkRatio, r.TxnAppendRatio, r.BulkAppendRatio, load.End())
	return r, nil
}

func appendTo(base, seal *[]time.Duration, withStreamseal bool, d time.Duration) {
	if withStreamseal {
		*seal = append(*seal, d)
	} else {
		*base = append(*base, d)
	}
}

// runScenario times one scenario; with streamseal, a stamper loop runs alongside and the clock
// stops only when everything appended is stamped (total). appending is when the clients finished.
func runScenario(ctx context.Context, pool *pgxpool.Pool, withStreamseal bool, scenario func(context.Context, string) error) (total, appending time.Duration, err error) {
	if !withStreamseal {
		start := time.Now()
		err := scenario(ctx, baselineInsert)
		return time.Since(start), time.Since(start), err
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
	stop()
	wg.Wait()
	return total, appending, err
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
