package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RawPipeline is the baseline `bench repair` divides by: the same rows moved between the same
// databases over the same NATS server with none of streamseal's integrity machinery. Copy
// selects a window of a lane at the origin, publishes it in batches to JetStream and, on the
// consumer's side, inserts each batch into a plain table (BaselineTable: the events table's
// shape, indexes and constraints, no triggers, no functions) and acknowledges it. Relay (the
// relay-lag phase's baseline) commits rows into the origin's plain table and publishes the same
// rows as plain JetStream messages, one each, waiting for the acks.
//
// What it does not do is the point: no stamping, no digests, no grants, no request/answer
// bookkeeping, no idempotence (a second delivery of a batch fails on the primary key), so a
// repair_ratio of 1 would mean streamseal's guarantees cost nothing.
type RawPipeline struct {
	Origin, Consumer     *pgxpool.Pool
	OriginJS, ConsumerJS jetstream.JetStream // the two sides' own connections (may be one)
	Batch                int                 // rows per message; 0: RawBatchDefault
}

// RawBatchDefault is the raw pipeline's rows per message: the relay's batch
// (relay.BatchDefault), under RawBatchMaxBytes.
const RawBatchDefault = 500

// RawBatchMaxBytes ends a batch early so a message stays well under NATS's 1 MiB default.
const RawBatchMaxBytes = 512 << 10

// RawStream is the JetStream stream the raw pipeline publishes on (file storage, like
// streamseal's events stream), created on first use.
const (
	RawStream        = "STREAMSEAL_BENCH_RAW"
	rawSubjectPrefix = "streamseal_bench.raw."
)

// rawRow is one row on the raw pipeline's wire (JSON; the payload base64).
type rawRow struct {
	EventID       uuid.UUID       `json:"id"`
	Origin        string          `json:"o"`
	OriginSeq     *int64          `json:"os"`
	TypeSeq       *int64          `json:"ts"`
	Tenant        string          `json:"tn"`
	StreamID      string          `json:"s"`
	StreamVersion int64           `json:"v"`
	EventType     string          `json:"ty"`
	Flags         int32           `json:"f"`
	Payload       []byte          `json:"p"`
	Metadata      json.RawMessage `json:"md,omitempty"`
	OccurredAt    time.Time       `json:"at"`
}

// RawCopyResult is what one Copy moved and how long it took, from the first select at the
// origin to the last batch inserted and acknowledged at the consumer.
type RawCopyResult struct {
	Rows, Batches int
	Took          time.Duration
}

// rawSelect reads a window of a lane at the origin, in origin_seq order.
const rawSelect = `
	select event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags,
	       payload, metadata::text, occurred_at
	from streamseal.numbered_events where origin = $1 and origin_seq >= $2 and origin_seq < $3 order by origin_seq`

// scanRawRow reads one row of rawSelect's (or rawRelayInsert's) columns.
func scanRawRow(rows pgx.Rows) (rawRow, error) {
	var row rawRow
	var metadata *string
	err := rows.Scan(&row.EventID, &row.Origin, &row.OriginSeq, &row.TypeSeq, &row.Tenant, &row.StreamID,
		&row.StreamVersion, &row.EventType, &row.Flags, &row.Payload, &metadata, &row.OccurredAt)
	if metadata != nil {
		row.Metadata = json.RawMessage(*metadata)
	}
	return row, err
}

// rawInsert is the consumer's plain insert of one batch.
const rawInsert = `
	insert into ` + BaselineTable + ` (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type,
	                                   flags, payload, metadata, occurred_at)
	select r.event_id, r.origin, r.origin_seq, r.type_seq, r.tenant, r.stream_id, r.stream_version, r.event_type,
	       r.flags, r.payload, r.metadata::jsonb, r.occurred_at
	from unnest($1::uuid[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::bigint[], $8::text[],
	            $9::int[], $10::bytea[], $11::text[], $12::timestamptz[])
	     as r(event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags, payload, metadata, occurred_at)`

// rawPullAhead is how many batches the raw consumer pulls ahead of the one it inserts, and
// rawAckWait how long a delivered batch may wait for its ack before JetStream delivers it again.
const (
	rawPullAhead = 32
	rawAckWait   = 2 * time.Minute
)

// rawEndHeader marks the message after a copy's last batch; its value is the rows published.
const rawEndHeader = "Streamseal-Bench-Raw-End"

func (p *RawPipeline) batch() int {
	if p.Batch <= 0 {
		return RawBatchDefault
	}
	return p.Batch
}

// Copy moves the origin's events of lane with origin_seq in [from, to) into the consumer's plain
// table (created anew, empty).
func (p *RawPipeline) Copy(ctx context.Context, lane string, from, to int64) (RawCopyResult, error) {
	var r RawCopyResult
	if err := createBaselineTable(ctx, p.Consumer); err != nil {
		return r, err
	}
	if err := ensureRawStream(ctx, p.OriginJS); err != nil {
		return r, err
	}
	subject := rawSubjectPrefix + "copy." + uuid.NewString()
	cons, err := p.ConsumerJS.CreateConsumer(ctx, RawStream, jetstream.ConsumerConfig{
		FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		InactiveThreshold: time.Minute, AckWait: rawAckWait})
	if err != nil {
		return r, fmt.Errorf("raw pipeline: create consumer: %w", err)
	}
	consumeCtx, stopConsuming := context.WithCancel(ctx)
	defer stopConsuming()
	consumed := make(chan error, 1)
	var inserted, batches int
	start := time.Now()
	go func() { consumed <- p.consume(consumeCtx, cons, &inserted, &batches) }()

	published, err := p.publish(ctx, subject, lane, from, to)
	if err != nil {
		stopConsuming()
		<-consumed
		return r, err
	}
	if err := <-consumed; err != nil {
		return r, err
	}
	r.Took = time.Since(start)
	if inserted != published {
		return r, fmt.Errorf("raw pipeline: %d rows published, %d inserted", published, inserted)
	}
	r.Rows, r.Batches = inserted, batches
	return r, nil
}

// publish selects the window and publishes it in batches, then the end marker, and waits for
// every ack; it returns the rows published.
func (p *RawPipeline) publish(ctx context.Context, subject, lane string, from, to int64) (int, error) {
	rows, err := p.Origin.Query(ctx, rawSelect, lane, from, to)
	if err != nil {
		return 0, fmt.Errorf("raw pipeline: select at the origin: %w", err)
	}
	defer rows.Close()
	var futures []jetstream.PubAckFuture
	var batch []rawRow
	var batchBytes, n int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		data, err := json.Marshal(batch)
		if err != nil {
			return err
		}
		f, err := p.OriginJS.PublishAsync(subject, data)
		if err != nil {
			return fmt.Errorf("raw pipeline: publish: %w", err)
		}
		futures = append(futures, f)
		batch, batchBytes = batch[:0], 0
		return nil
	}
	for rows.Next() {
		row, err := scanRawRow(rows)
		if err != nil {
			return 0, fmt.Errorf("raw pipeline: read at the origin: %w", err)
		}
		batch = append(batch, row)
		batchBytes += len(row.Payload)*4/3 + len(row.Metadata) + 200
		n++
		if len(batch) >= p.batch() || batchBytes >= RawBatchMaxBytes {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("raw pipeline: read at the origin: %w", err)
	}
	if err := flush(); err != nil {
		return 0, err
	}
	end := nats.NewMsg(subject)
	end.Header.Set(rawEndHeader, strconv.Itoa(n))
	f, err := p.OriginJS.PublishMsgAsync(end)
	if err != nil {
		return 0, fmt.Errorf("raw pipeline: publish the end: %w", err)
	}
	futures = append(futures, f)
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return 0, fmt.Errorf("raw pipeline: publish: %w", err)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return n, nil
}

// consume inserts each batch into the plain table and acknowledges it, until the end marker.
func (p *RawPipeline) consume(ctx context.Context, cons jetstream.Consumer, inserted, batches *int) error {
	// Few batches pulled ahead: one waiting in the client's buffer past the ack wait would be
	// delivered again, and the plain table refuses a second copy (the raw pipeline has no
	// idempotence). With the default 500 ahead, a backfill floor run under live appends did.
	it, err := cons.Messages(jetstream.PullMaxMessages(rawPullAhead))
	if err != nil {
		return fmt.Errorf("raw pipeline: consume: %w", err)
	}
	defer it.Stop()
	stopped := context.AfterFunc(ctx, it.Stop)
	defer stopped()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("raw pipeline: consume: %w", err)
		}
		if end := msg.Headers().Get(rawEndHeader); end != "" {
			return msg.Ack()
		}
		var batch []rawRow
		if err := json.Unmarshal(msg.Data(), &batch); err != nil {
			return fmt.Errorf("raw pipeline: decode a batch: %w", err)
		}
		if err := insertRaw(ctx, p.Consumer, batch); err != nil {
			return err
		}
		if err := msg.Ack(); err != nil {
			return fmt.Errorf("raw pipeline: ack: %w", err)
		}
		*inserted += len(batch)
		*batches++
	}
}

// insertRaw inserts rows into the plain table with one statement.
func insertRaw(ctx context.Context, pool *pgxpool.Pool, rows []rawRow) error {
	n := len(rows)
	ids, origins, tenants, streams, types := make([]uuid.UUID, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	originSeqs, typeSeqs, versions := make([]*int64, n), make([]*int64, n), make([]int64, n)
	flags, payloads, metadata, occurred := make([]int32, n), make([][]byte, n), make([]*string, n), make([]time.Time, n)
	for i, r := range rows {
		ids[i], origins[i], tenants[i], streams[i], types[i] = r.EventID, r.Origin, r.Tenant, r.StreamID, r.EventType
		originSeqs[i], typeSeqs[i], versions[i] = r.OriginSeq, r.TypeSeq, r.StreamVersion
		flags[i], payloads[i], occurred[i] = r.Flags, r.Payload, r.OccurredAt
		if r.Metadata != nil {
			s := string(r.Metadata)
			metadata[i] = &s
		}
	}
	if _, err := pool.Exec(ctx, rawInsert, ids, origins, originSeqs, typeSeqs, tenants, streams, versions, types,
		flags, payloads, metadata, occurred); err != nil {
		return fmt.Errorf("raw pipeline: insert at the consumer: %w", err)
	}
	return nil
}

// ensureRawStream creates the raw pipeline's stream if it does not exist.
func ensureRawStream(ctx context.Context, js jetstream.JetStream) error {
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: RawStream, Subjects: []string{rawSubjectPrefix + ">"},
		Storage: jetstream.FileStorage, Retention: jetstream.LimitsPolicy, MaxAge: time.Hour})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("raw pipeline: create stream %s: %w", RawStream, err)
	}
	return nil
}

// rawRelayInsert commits one tick's events into the origin's plain table and returns them.
const rawRelayInsert = `
	insert into ` + BaselineTable + ` (event_id, origin, tenant, stream_id, stream_version, event_type, flags, payload)
	select id::uuid, $2, 'acme', 'lag-' || id, 1, 'bench.a', 0, '{"lag":true}'::bytea from unnest($1::text[]) id
	returning event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags,
	          payload, metadata::text, occurred_at`

// committedRows are one append's rows and when its commit returned.
type committedRows struct {
	rows []rawRow
	at   time.Time
}

// Relay is the relay-lag phase's baseline: it appends at opts.RelayRate for opts.RelayFor (the
// same steady ticks as streamseal's phase) into the origin's plain table, and a publisher hands
// each append's rows, as soon as its commit returns, to JetStream as plain messages (one a row)
// and waits for their acks. It returns, per event, the time from its commit returning to the ack
// of its append's last message, sorted.
func (p *RawPipeline) Relay(ctx context.Context, out io.Writer, lane string, opts RepairOptions) ([]time.Duration, error) {
	if err := createBaselineTable(ctx, p.Origin); err != nil {
		return nil, err
	}
	if err := ensureRawStream(ctx, p.OriginJS); err != nil {
		return nil, err
	}
	subject := rawSubjectPrefix + "relay." + uuid.NewString()
	committed := make(chan committedRows, int(opts.RelayFor/appendTick)+2) // never blocks the appender
	published := make(chan error, 1)
	var lags []time.Duration
	go func() { published <- p.publishCommitted(ctx, subject, committed, &lags) }()
	_, err := steadyAppend(ctx, out, "raw relay", opts, func(ctx context.Context, ids []string) error {
		rows, err := p.Origin.Query(ctx, rawRelayInsert, ids, lane)
		if err != nil {
			return fmt.Errorf("raw relay: append: %w", err)
		}
		var batch []rawRow
		for rows.Next() {
			row, err := scanRawRow(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("raw relay: append: %w", err)
			}
			batch = append(batch, row)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("raw relay: append: %w", err)
		}
		committed <- committedRows{rows: batch, at: time.Now()}
		return nil
	})
	close(committed)
	if perr := <-published; err == nil {
		err = perr
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(lags)
	return lags, nil
}

// publishCommitted publishes each append's rows, one message a row, and records their lags once
// the last is acknowledged; it drains committed to its close.
func (p *RawPipeline) publishCommitted(ctx context.Context, subject string, committed <-chan committedRows, lags *[]time.Duration) error {
	var failed error
	for c := range committed {
		if failed != nil {
			continue
		}
		futures := make([]jetstream.PubAckFuture, 0, len(c.rows))
		for _, row := range c.rows {
			data, err := json.Marshal(row)
			if err != nil {
				failed = err
				break
			}
			f, err := p.OriginJS.PublishAsync(subject, data)
			if err != nil {
				failed = fmt.Errorf("raw relay: publish: %w", err)
				break
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			if failed != nil {
				break
			}
			select {
			case <-f.Ok():
			case err := <-f.Err():
				failed = fmt.Errorf("raw relay: publish: %w", err)
			case <-ctx.Done():
				failed = ctx.Err()
			}
		}
		if failed != nil {
			continue
		}
		acked := time.Now()
		for range c.rows {
			*lags = append(*lags, acked.Sub(c.at))
		}
	}
	return failed
}

// rawOutboxChannel is the NOTIFY channel the raw outbox relay's appends signal.
const rawOutboxChannel = "streamseal_bench_raw"

// rawOutboxInsert commits one tick's events into the origin's plain table and notifies the
// outbox relay, in one statement (streamseal's append notifies its relay through a trigger).
const rawOutboxInsert = `
	with ins as (
		insert into ` + BaselineTable + ` (event_id, origin, tenant, stream_id, stream_version, event_type, flags, payload)
		select id::uuid, $2, 'acme', 'lag-' || id, 1, 'bench.a', 0, '{"lag":true}'::bytea from unnest($1::text[]) id
		returning 1)
	select pg_notify('` + rawOutboxChannel + `', count(*)::text) from ins`

// rawOutboxSelect reads the next committed rows after a position (local_id: one appender
// commits in insertion order, so it is commit order here; a relay beside concurrent writers
// would need what streamseal's stamper does).
const rawOutboxSelect = `
	select local_id, event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags,
	       payload, metadata::text, occurred_at
	from ` + BaselineTable + ` where local_id > $1 order by local_id limit $2`

// OutboxRelay is the relay-lag phase's outbox baseline: the same appends as Relay, but the
// publisher learns of each commit from the database, as any relay outside the writer's process
// must: it LISTENs on its own connection, and on each notification selects the committed rows
// after its position (pages of the raw batch), publishes them as plain messages, one a row, and
// waits for their acks; no coalescing delay. It returns, per event, the time from its append's
// commit returning to its message's ack, sorted.
func (p *RawPipeline) OutboxRelay(ctx context.Context, out io.Writer, lane string, opts RepairOptions) ([]time.Duration, error) {
	if err := createBaselineTable(ctx, p.Origin); err != nil {
		return nil, err
	}
	if err := ensureRawStream(ctx, p.OriginJS); err != nil {
		return nil, err
	}
	pooled, err := p.Origin.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("raw outbox relay: connect: %w", err)
	}
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "listen "+rawOutboxChannel); err != nil {
		return nil, fmt.Errorf("raw outbox relay: listen: %w", err)
	}
	subject := rawSubjectPrefix + "outbox." + uuid.NewString()
	var mu sync.Mutex
	committedAt := map[uuid.UUID]time.Time{}
	ackedAt := map[uuid.UUID]time.Time{}
	relayCtx, stopRelay := context.WithCancel(ctx)
	defer stopRelay()
	appended := make(chan int, 1) // the rows appended, once the appender is done
	relayed := make(chan error, 1)
	go func() { relayed <- p.outboxPublish(relayCtx, conn, subject, appended, &mu, ackedAt) }()
	total := 0
	_, err = steadyAppend(ctx, out, "raw outbox relay", opts, func(ctx context.Context, ids []string) error {
		if _, err := p.Origin.Exec(ctx, rawOutboxInsert, ids, lane); err != nil {
			return fmt.Errorf("raw outbox relay: append: %w", err)
		}
		at := time.Now()
		mu.Lock()
		for _, id := range ids {
			committedAt[uuid.MustParse(id)] = at
		}
		mu.Unlock()
		total += len(ids)
		return nil
	})
	if err != nil {
		stopRelay()
		<-relayed
		return nil, err
	}
	appended <- total
	if err := <-relayed; err != nil {
		return nil, err
	}
	lags := make([]time.Duration, 0, len(committedAt))
	for id, at := range committedAt {
		acked, ok := ackedAt[id]
		if !ok {
			return nil, fmt.Errorf("raw outbox relay: event %s committed and never acknowledged", id)
		}
		lags = append(lags, acked.Sub(at))
	}
	slices.Sort(lags)
	return lags, nil
}

// outboxPublish is the outbox relay's loop: select after its position, publish, wait for the
// acks, record their times; wait for a notification when a page comes back short. It returns
// once it has acknowledged as many rows as appended says were committed.
func (p *RawPipeline) outboxPublish(ctx context.Context, conn *pgx.Conn, subject string, appended <-chan int, mu *sync.Mutex, ackedAt map[uuid.UUID]time.Time) error {
	position, done, want := int64(0), 0, -1
	for {
		for {
			rows, err := conn.Query(ctx, rawOutboxSelect, position, p.batch())
			if err != nil {
				return fmt.Errorf("raw outbox relay: select: %w", err)
			}
			var page []rawRow
			for rows.Next() {
				var row rawRow
				var metadata *string
				if err := rows.Scan(&position, &row.EventID, &row.Origin, &row.OriginSeq, &row.TypeSeq, &row.Tenant, &row.StreamID,
					&row.StreamVersion, &row.EventType, &row.Flags, &row.Payload, &metadata, &row.OccurredAt); err != nil {
					rows.Close()
					return fmt.Errorf("raw outbox relay: select: %w", err)
				}
				if metadata != nil {
					row.Metadata = json.RawMessage(*metadata)
				}
				page = append(page, row)
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("raw outbox relay: select: %w", err)
			}
			futures := make([]jetstream.PubAckFuture, 0, len(page))
			for _, row := range page {
				data, err := json.Marshal(row)
				if err != nil {
					return err
				}
				f, err := p.OriginJS.PublishAsync(subject, data)
				if err != nil {
					return fmt.Errorf("raw outbox relay: publish: %w", err)
				}
				futures = append(futures, f)
			}
			for _, f := range futures {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					return fmt.Errorf("raw outbox relay: publish: %w", err)
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			acked := time.Now()
			mu.Lock()
			for _, row := range page {
				ackedAt[row.EventID] = acked
			}
			mu.Unlock()
			done += len(page)
			if len(page) < p.batch() {
				break
			}
		}
		if want < 0 {
			select {
			case want = <-appended:
			default:
			}
		}
		if want >= 0 && done >= want {
			return nil
		}
		// The failsafe poll also notices the appender's end.
		waitCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := conn.WaitForNotification(waitCtx)
		cancel()
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("raw outbox relay: wait: %w", err)
		}
	}
}
