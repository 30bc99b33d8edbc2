package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/stamper"
	"github.com/streamseal/streamseal/internal/bench"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// rowsAsText is every row of table in [from, to) of origin "orders", its identity fields
// (invariant 3: event_id, origin, origin_seq, type_seq, stream version, payload bytes, and the
// rest a copy carries) as text, in origin_seq order.
func rowsAsText(t *testing.T, pool *pgxpool.Pool, table string, from, to int64) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		select row(event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type,
		           flags, payload, metadata, occurred_at)::text
		from `+table+` where origin = 'orders' and origin_seq >= $1 and origin_seq < $2 order by origin_seq`, from, to)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Issue 20: the raw pipeline repair_ratio divides by moves what streamseal's redelivery moves:
// exactly the window's rows, byte for byte in the fields a repaired copy keeps (invariant 3),
// nothing outside the window, in batches smaller than the window.
func TestRawPipeline_CopyMovesExactlyTheWindowsRows(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()
	origin := dbtest.NewPool(t, "orders")
	consumer := dbtest.NewPool(t, "billing")
	server := natstest.Start(t)
	_, js := server.Connect(t, "bench")
	// 50 events: payloads of every byte value (not valid UTF-8), metadata on some, several
	// tenants, types and streams.
	if _, err := origin.Exec(ctx, `
		select streamseal.append(array(
			select row(gen_random_uuid(), 't' || (i % 3), 's' || (i % 7), i / 7 + 1, 'bench.' || chr(97 + i % 4), i % 2,
			           decode(md5(i::text), 'hex') || '\x00ff80'::bytea || convert_to(repeat('p', i), 'UTF8'),
			           case when i % 5 = 0 then jsonb_build_object('i', i, 'nested', jsonb_build_array(i, 'x')) end,
			           timestamptz '2026-01-02 03:04:05.123456+00' + i * interval '1 second')::streamseal.new_event
			from generate_series(0, 49) i))`); err != nil {
		t.Fatal(err)
	}
	if err := (&stamper.Loop{Pool: origin}).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	want := rowsAsText(t, origin, "streamseal.numbered_events", 11, 41)
	if len(want) != 30 {
		t.Fatalf("the origin holds %d events in [11, 41), want 30 (setup)", len(want))
	}

	p := bench.RawPipeline{Origin: origin, Consumer: consumer, OriginJS: js, ConsumerJS: js, Batch: 7}
	r, err := p.Copy(ctx, "orders", 11, 41)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows != 30 || r.Batches != 5 {
		t.Errorf("copied %d rows in %d batches, want 30 in 5", r.Rows, r.Batches)
	}
	got := rowsAsText(t, consumer, bench.BaselineTable, 0, 1<<62)
	if !slices.Equal(got, want) {
		t.Errorf("the consumer's plain table holds\n%q\nwant exactly the window's rows\n%q", got, want)
	}

	// A second copy on the same server and table (the benchmark runs once, a test may run it
	// again) moves the window again, not the first run's messages too.
	if _, err := consumer.Exec(ctx, "truncate "+bench.BaselineTable); err != nil {
		t.Fatal(err)
	}
	if r, err = p.Copy(ctx, "orders", 1, 11); err != nil {
		t.Fatal(err)
	}
	if got, want := rowsAsText(t, consumer, bench.BaselineTable, 0, 1<<62), rowsAsText(t, origin, "streamseal.numbered_events", 1, 11); r.Rows != 10 || !slices.Equal(got, want) {
		t.Errorf("second copy: %d rows reported; the table holds\n%q\nwant\n%q", r.Rows, got, want)
	}
}

// Issue 20: the raw relays relay_p99_ratio divides by (the outbox relay, which learns of commits
// from the database, and the in-process one) publish every row they commit, once, as a plain
// message (the same rows: event ids match the origin's plain table), and measure one lag for each.
func TestRawPipeline_RelayPublishesEveryCommittedRowOnce(t *testing.T) {
	t.Parallel()
	for name, relay := range map[string]func(*bench.RawPipeline) func(context.Context, io.Writer, string, bench.RepairOptions) ([]time.Duration, error){
		"Outbox": func(p *bench.RawPipeline) func(context.Context, io.Writer, string, bench.RepairOptions) ([]time.Duration, error) {
			return p.OutboxRelay
		},
		"InProcess": func(p *bench.RawPipeline) func(context.Context, io.Writer, string, bench.RepairOptions) ([]time.Duration, error) {
			return p.Relay
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testRawRelayPublishesEveryCommittedRowOnce(t, relay)
		})
	}
}

func testRawRelayPublishesEveryCommittedRowOnce(t *testing.T, relay func(*bench.RawPipeline) func(context.Context, io.Writer, string, bench.RepairOptions) ([]time.Duration, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()
	origin := dbtest.NewPool(t, "orders")
	server := natstest.Start(t)
	_, js := server.Connect(t, "bench")
	p := &bench.RawPipeline{Origin: origin, OriginJS: js}
	var out bytes.Buffer
	lags, err := relay(p)(ctx, &out, "orders", bench.RepairOptions{RelayRate: 1000, RelayFor: 200 * time.Millisecond})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	var committed []string
	if err := pgxscan(ctx, origin, "select event_id::text from "+bench.BaselineTable+" order by 1", &committed); err != nil {
		t.Fatal(err)
	}
	if len(committed) == 0 || len(committed)%10 != 0 {
		t.Fatalf("the raw relay committed %d rows, want whole appends of 10", len(committed))
	}
	if len(lags) != len(committed) || !slices.IsSorted(lags) {
		t.Errorf("%d lags (sorted: %v) for %d rows committed", len(lags), slices.IsSorted(lags), len(committed))
	}
	cons, err := js.OrderedConsumer(ctx, bench.RawStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var published []string
	for len(published) < len(committed)+1 {
		batch, err := cons.Fetch(len(committed)+1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for msg := range batch.Messages() {
			var row struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(msg.Data(), &row); err != nil {
				t.Fatal(err)
			}
			published = append(published, row.ID)
			n++
		}
		if n == 0 { // nothing more within the fetch's wait: the stream holds what it holds
			break
		}
	}
	slices.Sort(published)
	if !slices.Equal(published, committed) {
		t.Errorf("published %d messages, event ids\n%v\nwant one for each committed row\n%v", len(published), published, committed)
	}
}

// pgxscan collects a one-column query's rows into dst.
func pgxscan(ctx context.Context, pool *pgxpool.Pool, sql string, dst *[]string) error {
	rows, err := pool.Query(ctx, sql)
	if err != nil {
		return err
	}
	*dst, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return err
}
