package stamper_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/stamper"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Invariants 4 and 7 under churn: appends, ingests of copies (duplicates included), deletes of
// own events (stamped or not) and of copies, and two stamper loops all run at once. Afterwards
// every number the stamper handed out is held by exactly one event, live or deleted (origin_seq
// dense 1..last, type_seq dense 1..k per (tenant, event_type): no gap, no reuse, no double
// stamp), no own event is left unstamped, and the maintained digests equal a recompute.
func TestStamp_ChurnKeepsNumbersDenseAndDigestsTrue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "churn")

	// Two loops, as two replicas would run: small batches so they interleave with everything.
	// A loop logs a failed stamp and retries; here any such log fails the test.
	stampFailures := &warnings{}
	for i := range 2 {
		loop := &stamper.Loop{Pool: b.pool, BatchSize: 7, Logger: slog.New(stampFailures)}
		testrun.Go(t, fmt.Sprintf("stamper loop %d", i), loop.Run)
	}

	const appenders, txnsPerAppender = 2, 120
	var writers sync.WaitGroup
	writersDone := make(chan struct{})
	errs := make(chan error, appenders+3)

	for a := range appenders {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range txnsPerAppender {
				batch := make([]store.NewEvent, 1+rand.IntN(10))
				for j := range batch {
					batch[j] = store.NewEvent{EventID: uuid.New(), Tenant: fmt.Sprintf("t%d", rand.IntN(2)),
						StreamID: fmt.Sprintf("a%d-s%d-%d", a, i, j), StreamVersion: 1,
						EventType: fmt.Sprintf("type.%d", rand.IntN(3)), Payload: []byte(`{}`)}
				}
				if _, err := store.EventsAppend(ctx, b.pool, batch); err != nil {
					errs <- fmt.Errorf("appender %d: %w", a, err)
					return
				}
			}
		}()
	}

	writers.Add(1)
	go func() { // copies of another origin, every other batch sent twice (invariant 2)
		defer writers.Done()
		var originSeq int64
		typeSeqs := map[string]int64{}
		for i := range 60 {
			batch := make([]store.EventCopy, 1+rand.IntN(20))
			for j := range batch {
				originSeq++
				tenant, eventType := fmt.Sprintf("t%d", rand.IntN(2)), fmt.Sprintf("type.%d", rand.IntN(3))
				typeSeqs[tenant+"/"+eventType]++
				batch[j] = store.EventCopy{EventID: uuid.New(), Origin: "upstream", OriginSeq: originSeq,
					TypeSeq: typeSeqs[tenant+"/"+eventType], Tenant: tenant, StreamID: fmt.Sprintf("u-s%d", rand.IntN(40)),
					StreamVersion: originSeq, EventType: eventType, Payload: []byte(`{"copy":true}`)}
			}
			for range 1 + i%2 {
				if _, err := store.EventsIngest(ctx, b.pool, batch); err != nil {
					errs <- fmt.Errorf("ingester: %w", err)
					return
				}
			}
		}
	}()

	type removed struct {
		originSeq, typeSeq *int64
		tenant, eventType  string
	}
	var deletedOwn []removed
	deleterDone := make(chan struct{})
	go func() { // deletes until the writers are done, whatever state each row is in
		defer close(deleterDone)
		for {
			select {
			case <-writersDone:
				return
			default:
			}
			// Own events' numbers live in own_numbers, and leave with the row (issue 16): lock
			// the rows and their queue rows first (a stamp in progress finishes, none starts on
			// them), then read their numbers through numbered_events in a fresh snapshot, then
			// delete them.
			var batch []removed
			err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
				rows, err := tx.Query(ctx, `
					select e.event_id from streamseal.events e
					where e.event_id = any (array(
						select x.event_id from streamseal.events x
						where x.origin = case when random() < 0.8 then streamseal.service_name() else 'upstream' end
						order by random() limit 3))
					order by e.local_id
					for update`)
				if err != nil {
					return err
				}
				ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
				if err != nil {
					return err
				}
				// And their queue rows, as the delete trigger will: a stamper that claimed them
				// commits first, and none claims them after.
				if _, err := tx.Exec(ctx, `select from streamseal.unstamped where event_id = any ($1) order by local_id for update`, ids); err != nil {
					return err
				}
				rows, err = tx.Query(ctx, `
					select e.origin = streamseal.service_name(), n.origin_seq, n.type_seq, e.tenant, e.event_type
					from streamseal.events e
					left join streamseal.numbered_events n on n.event_id = e.event_id
					where e.event_id = any ($1)`, ids)
				if err != nil {
					return err
				}
				for rows.Next() {
					var own bool
					var r removed
					if err := rows.Scan(&own, &r.originSeq, &r.typeSeq, &r.tenant, &r.eventType); err != nil {
						rows.Close()
						return err
					}
					if own {
						batch = append(batch, r)
					}
				}
				if err := rows.Err(); err != nil {
					return err
				}
				_, err = tx.Exec(ctx, `delete from streamseal.events where event_id = any ($1)`, ids)
				return err
			})
			if err != nil {
				errs <- fmt.Errorf("deleter: %w", err)
				return
			}
			deletedOwn = append(deletedOwn, batch...)
		}
	}()

	writers.Wait()
	close(writersDone)
	<-deleterDone
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Whatever committed last is stamped by this drain (the loops may be numbering it too: the
	// lock serializes them).
	if err := (&stamper.Loop{Pool: b.pool}).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if failed := stampFailures.all(); len(failed) > 0 {
		t.Fatalf("stamper loops logged failures during the churn: %v", failed)
	}

	// Every number handed out is held by exactly one event, live or deleted.
	rows, err := b.pool.Query(ctx, `
		select n.origin_seq, n.type_seq, e.tenant, e.event_type
		from streamseal.events e
		left join streamseal.numbered_events n on n.event_id = e.event_id
		where e.origin = streamseal.service_name()`)
	if err != nil {
		t.Fatal(err)
	}
	held, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (removed, error) {
		var r removed
		err := row.Scan(&r.originSeq, &r.typeSeq, &r.tenant, &r.eventType)
		return r, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var deletedStamped int
	for _, r := range deletedOwn {
		if r.originSeq != nil {
			held = append(held, r)
			deletedStamped++
		}
	}
	var last int64
	if err := b.pool.QueryRow(ctx, `select last_origin_seq from streamseal.stamp_state`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if int64(len(held)) != last {
		t.Fatalf("%d events (live or deleted after stamping) hold numbers, but the stamper handed out 1..%d", len(held), last)
	}
	seenSeq := map[int64]bool{}
	typeSeqs := map[string]map[int64]bool{}
	for _, r := range held {
		if r.originSeq == nil || r.typeSeq == nil {
			t.Fatalf("an own %s/%s event is unstamped after the final drain", r.tenant, r.eventType)
		}
		if *r.originSeq < 1 || *r.originSeq > last || seenSeq[*r.originSeq] {
			t.Fatalf("origin_seq %d is out of 1..%d or held twice", *r.originSeq, last)
		}
		seenSeq[*r.originSeq] = true
		key := r.tenant + "/" + r.eventType
		if typeSeqs[key] == nil {
			typeSeqs[key] = map[int64]bool{}
		}
		if typeSeqs[key][*r.typeSeq] {
			t.Fatalf("type_seq %d of %s is held twice", *r.typeSeq, key)
		}
		typeSeqs[key][*r.typeSeq] = true
	}
	for key, seqs := range typeSeqs {
		for s := int64(1); s <= int64(len(seqs)); s++ {
			if !seqs[s] {
				t.Fatalf("type_seq of %s is not dense: %d missing among %d numbers", key, s, len(seqs))
			}
		}
	}

	// The maintained folds equal a recompute from the store (emptied buckets keep (0, 0, 0) rows).
	var drift int
	if err := b.pool.QueryRow(ctx, `
		select count(*) from (
			(select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests where n <> 0 or x0 <> 0 or x1 <> 0
			 except all
			 select * from streamseal.recompute_digests())
			union all
			(select * from streamseal.recompute_digests()
			 except all
			 select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests)
		) d`).Scan(&drift); err != nil {
		t.Fatal(err)
	}
	if drift != 0 {
		t.Fatalf("%d digest buckets differ from a recompute after the churn", drift)
	}
	t.Logf("churn: %d numbers handed out, %d own events deleted (%d after stamping)", last, len(deletedOwn), deletedStamped)
	if deletedStamped == 0 || len(deletedOwn) == deletedStamped {
		t.Logf("note: this run deleted no %s own events", map[bool]string{true: "stamped", false: "unstamped"}[deletedStamped == 0])
	}
}

// warnings is a slog handler that keeps every record at Warn or above.
type warnings struct {
	mu      sync.Mutex
	records []string
}

func (w *warnings) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelWarn }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	w.mu.Lock()
	defer w.mu.Unlock()
	w.records = append(w.records, msg)
	return nil
}

func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.records...)
}
