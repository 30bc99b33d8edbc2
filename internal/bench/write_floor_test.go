package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/internal/bench"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// floorCount is one integer a query over the floor's tables returns.
func floorCount(t *testing.T, pool *pgxpool.Pool, sql string) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Issue 16 (the write floor): each floor variant really does the work it claims, or its ratio
// would flatter the floor. After the phase, every variant's digests count every event it
// inserted (invariant 4, digest truth: the fold's n sums to the rows), every numbering variant
// holds one number per event (rows, or elements of the per-round arrays), and the txn folder,
// which runs apart from the clients as a stamper would, passed over no late commit
// (invariant 7): its numbers equal the events even with two clients committing out of order.
// The trigger variants really carry the guard they are named for (a PL/pgSQL statement trigger
// with a transition table), or they would measure a plain insert.
func TestWriteFloor_EveryVariantDoesAllItsWork(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()
	pool := dbtest.NewPool(t, "orders")
	opts := bench.WriteOptions{Rounds: 2, TxnsPerClient: 40, Clients: 2, BulkStatements: 3, BulkSize: 100, PayloadBytes: 20,
		StreamsPerActor: 5, IngestStatements: 3, IngestBatch: 50}
	var out bytes.Buffer
	r, err := bench.WriteFloor(ctx, pool, opts, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	bulkEvents := int64(opts.Rounds * opts.BulkStatements * opts.BulkSize)
	ingestEvents := int64(opts.Rounds * opts.IngestStatements * opts.IngestBatch)
	txnEvents := floorCount(t, pool, `select count(*) from streamseal_bench.floor_txn_plain_events`)
	if min := int64(opts.Rounds * opts.Clients * opts.TxnsPerClient); txnEvents < min {
		t.Fatalf("the plain txn variant holds %d events, want at least %d (1-10 per transaction)", txnEvents, min)
	}
	type check struct {
		what string
		sql  string
		want int64
	}
	var checks []check
	for variant, events := range map[string]int64{
		"bulk_plain": bulkEvents, "bulk_dig": bulkEvents, "bulk_row": bulkEvents, "bulk_round": bulkEvents,
		"bulk_folder_row": bulkEvents, "bulk_folder_round": bulkEvents,
		"txn_row": txnEvents, "txn_round": txnEvents, "txn_trigger": txnEvents, "txn_trigger_round": txnEvents, "ingest_plain": ingestEvents, "ingest_fold": ingestEvents, "ingest_plain_fold": ingestEvents,
	} {
		checks = append(checks, check{variant + " events", `select count(*) from streamseal_bench.floor_` + variant + `_events`, events})
	}
	for _, variant := range []string{"bulk_dig", "bulk_row", "bulk_round", "bulk_folder_row", "bulk_folder_round", "txn_row", "txn_round", "txn_trigger_round"} {
		want := bulkEvents
		if strings.HasPrefix(variant, "txn") {
			want = txnEvents
		}
		checks = append(checks, check{variant + " digest n", `select coalesce(sum(n), 0) from streamseal_bench.floor_` + variant + `_digests`, want})
	}
	checks = append(checks,
		check{"ingest_fold digest n", `select coalesce(sum(n), 0) from streamseal_bench.floor_ingest_fold_digests`, ingestEvents},
		check{"ingest_plain_fold digest n", `select coalesce(sum(n), 0) from streamseal_bench.floor_ingest_plain_fold_digests`, ingestEvents},
		check{"bulk_row number rows", `select count(*) from streamseal_bench.floor_bulk_row_numbers`, bulkEvents},
		check{"bulk_folder_row number rows", `select count(*) from streamseal_bench.floor_bulk_folder_row_numbers`, bulkEvents},
		check{"bulk_folder_round array elements", `select coalesce(sum(cardinality(event_ids)), 0) from streamseal_bench.floor_bulk_folder_round_rounds`, bulkEvents},
		check{"txn_row number rows", `select count(*) from streamseal_bench.floor_txn_row_numbers`, txnEvents},
		check{"bulk_round array elements", `select coalesce(sum(cardinality(event_ids)), 0) from streamseal_bench.floor_bulk_round_rounds`, bulkEvents},
		check{"txn_round array elements", `select coalesce(sum(cardinality(event_ids)), 0) from streamseal_bench.floor_txn_round_rounds`, txnEvents},
		check{"txn_trigger_round array elements", `select coalesce(sum(cardinality(event_ids)), 0) from streamseal_bench.floor_txn_trigger_round_rounds`, txnEvents},
		// The trigger variants pay what any guard in PL/pgSQL pays: an AFTER INSERT statement
		// trigger, enabled, capturing the inserted rows as a transition table, in PL/pgSQL.
		check{"txn_trigger variants with a plpgsql statement trigger and a transition table", `select count(*) from pg_trigger tg
			join pg_proc p on p.oid = tg.tgfoid join pg_language l on l.oid = p.prolang
			where tg.tgrelid in ('streamseal_bench.floor_txn_trigger_events'::regclass, 'streamseal_bench.floor_txn_trigger_round_events'::regclass)
			  and tg.tgenabled = 'O' and tg.tgnewtable is not null and l.lanname = 'plpgsql'
			  and tg.tgtype & 1 = 0 and tg.tgtype & 4 = 4 and tg.tgtype & 2 = 0`, 2},
		// Numbered means each event once: the round arrays hold distinct events, and the numbers
		// name exactly the variant's events.
		check{"txn_round distinct events numbered", `select count(distinct e) from streamseal_bench.floor_txn_round_rounds, unnest(event_ids) e
			where e in (select event_id from streamseal_bench.floor_txn_round_events)`, txnEvents},
		check{"bulk_round one row per statement", `select count(*) from streamseal_bench.floor_bulk_round_rounds`, int64(opts.Rounds * opts.BulkStatements)},
	)
	for _, c := range checks {
		if got := floorCount(t, pool, c.sql); got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}
	for name, v := range map[string]float64{"bulk_dig": r.BulkDigRatio, "bulk_row": r.BulkRowRatio, "bulk_round": r.BulkRoundRatio,
		"txn_row": r.TxnRowRatio, "txn_round": r.TxnRoundRatio, "txn_trigger": r.TxnTriggerRatio, "txn_trigger_round": r.TxnTriggerRoundRatio, "ingest": r.IngestRatio,
		"bulk_folder_row": r.BulkFolderRowRatio, "bulk_folder_round": r.BulkFolderRoundRatio, "ingest_fold": r.IngestFoldRatio} {
		if !(v > 0) {
			t.Errorf("%s ratio %v: want a positive figure", name, v)
		}
	}
	if !strings.Contains(out.String(), "not streamseal's figures") {
		t.Errorf("the phase does not say its figures are not streamseal's:\n%s", out.String())
	}
	for _, key := range []string{"bulk_dig", "bulk_row", "bulk_round", "txn_row", "txn_round", "txn_trigger", "txn_trigger_round", "ingest", "bulk_folder_row", "bulk_folder_round", "ingest_fold"} {
		if !strings.Contains(out.String(), fmt.Sprintf("floor_%s_ratio=", key)) {
			t.Errorf("no floor_%s_ratio in the output", key)
		}
	}
}
