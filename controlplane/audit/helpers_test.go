package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// The exchange under test: "orders" answers, "billing" audits.
var eventTypes = []string{"order.placed", "order.paid", "order.shipped"}

func ownEvent(tenant, stream string, version int64, eventType string) store.NewEvent {
	return store.NewEvent{EventID: uuid.New(), Tenant: tenant, StreamID: stream, StreamVersion: version, EventType: eventType,
		Payload: []byte(fmt.Sprintf(`{"v":%d}`, version))}
}

// appendStamped appends events (one transaction) and stamps everything committed.
func appendStamped(t *testing.T, db store.Querier, events ...store.NewEvent) {
	t.Helper()
	ctx := context.Background()
	if _, err := store.EventsAppend(ctx, db, events); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsStamp(ctx, db, 1_000_000); err != nil {
		t.Fatal(err)
	}
}

// ownLane reads pool's own stamped events as the copies a consumer would hold, in origin_seq order.
func ownLane(t *testing.T, pool *pgxpool.Pool) []store.EventCopy {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		select event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags, payload
		from streamseal.numbered_events where origin = streamseal.service_name() order by origin_seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.EventCopy
	for rows.Next() {
		var e store.EventCopy
		if err := rows.Scan(&e.EventID, &e.Origin, &e.OriginSeq, &e.TypeSeq, &e.Tenant, &e.StreamID, &e.StreamVersion,
			&e.EventType, &e.Flags, &e.Payload); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func ingest(t *testing.T, pool *pgxpool.Pool, copies []store.EventCopy) {
	t.Helper()
	if len(copies) == 0 {
		return
	}
	if _, err := store.EventsIngest(context.Background(), pool, copies); err != nil {
		t.Fatal(err)
	}
}

// awaitManifest waits on rec (the requester's control subject) for every chunk of requestID's
// answer and returns them in chunk order.
func awaitManifest(t *testing.T, rec *natstest.Recorder, requestID string) []wire.ManifestAnswer {
	t.Helper()
	var chunks []wire.ManifestAnswer
	checked := 0
	rec.Await(t, "every chunk of manifest answer "+requestID, func(msgs []natstest.Msg) bool {
		envs, _ := natstest.Envelopes(t, msgs[checked:])
		checked = len(msgs)
		for _, env := range envs {
			var a wire.ManifestAnswer
			if env.Kind == wire.KindManifestAnswer && json.Unmarshal(env.Body, &a) == nil && a.RequestID == requestID {
				chunks = append(chunks, a)
			}
		}
		return len(chunks) > 0 && len(chunks) == chunks[0].Chunks
	})
	sort.Slice(chunks, func(i, j int) bool { return chunks[i].Chunk < chunks[j].Chunk })
	return chunks
}

// digestsOf concatenates the chunks' digests.
func digestsOf(chunks []wire.ManifestAnswer) []wire.ManifestDigest {
	var out []wire.ManifestDigest
	for _, c := range chunks {
		out = append(out, c.Digests...)
	}
	return out
}
