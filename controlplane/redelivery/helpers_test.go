package redelivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// failsafe bounds a wait on a witness: generous, so a loaded machine never trips it.
const failsafe = 60 * time.Second

// The exchange under test: "orders" is the origin, "billing" the requester, granted the first
// two of eventTypes and not the third.
var eventTypes = []string{"order.placed", "order.paid", "order.shipped"}

func ownEvent(stream string, version int64, eventType string, payload string) store.NewEvent {
	return store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: stream, StreamVersion: version, EventType: eventType,
		Payload: []byte(payload), Metadata: []byte(`{"trace":"` + uuid.NewString() + `"}`)}
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

// streamOf appends n stamped events of eventType to stream, versions 1..n, payloads of the given
// size (at least a few bytes; each distinct).
func streamOf(t *testing.T, db store.Querier, stream, eventType string, n, size int) {
	t.Helper()
	var events []store.NewEvent
	for v := 1; v <= n; v++ {
		events = append(events, ownEvent(stream, int64(v), eventType, payload(v, size)))
	}
	appendStamped(t, db, events...)
}

// payload is size bytes that name v, with odd spacing (bytes must travel untouched).
func payload(v, size int) string {
	p := fmt.Sprintf("{ \"v\" :%d ", v)
	return p + strings.Repeat(" ", max(0, size-1-len(p))) + "}"
}

// lane reads origin's events from pool as copies, in origin_seq order (the ground truth a bundle
// or a stored copy is compared with).
func lane(t *testing.T, pool *pgxpool.Pool, origin string) []store.EventCopy {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		select event_id, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags, payload,
		       metadata::text::bytea, occurred_at
		from streamseal.numbered_events where origin = $1 order by origin_seq`, origin)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.EventCopy
	for rows.Next() {
		e := store.EventCopy{Origin: origin}
		if err := rows.Scan(&e.EventID, &e.OriginSeq, &e.TypeSeq, &e.Tenant, &e.StreamID, &e.StreamVersion, &e.EventType,
			&e.Flags, &e.Payload, &e.Metadata, &e.OccurredAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameCopy(a, b store.EventCopy) bool {
	return a.EventID == b.EventID && a.Origin == b.Origin && a.OriginSeq == b.OriginSeq && a.TypeSeq == b.TypeSeq &&
		a.Tenant == b.Tenant && a.StreamID == b.StreamID && a.StreamVersion == b.StreamVersion && a.EventType == b.EventType &&
		a.Flags == b.Flags && string(a.Payload) == string(b.Payload) && string(a.Metadata) == string(b.Metadata) &&
		a.OccurredAt.Equal(b.OccurredAt)
}

// answer is what an origin sent back for one request: its bundles in order (with their
// attachments) and its summary.
type answer struct {
	summary     wire.RedeliverySummary
	envelopes   []wire.Envelope
	bundles     []wire.Bundle
	attachments [][]byte
}

// awaitAnswer waits on rec (the requester's control subject) for requestID's summary and returns
// everything sent for the request.
func awaitAnswer(t *testing.T, rec *natstest.Recorder, requestID string) answer {
	t.Helper()
	checked := 0 // messages already looked at: each arrival decodes only what is new
	msgs := rec.Await(t, "the summary of request "+requestID, func(msgs []natstest.Msg) bool {
		envs, _ := natstest.Envelopes(t, msgs[checked:])
		checked = len(msgs)
		for _, env := range envs {
			var s wire.RedeliverySummary
			if env.Kind == wire.KindRedeliverySummary && json.Unmarshal(env.Body, &s) == nil && s.RequestID == requestID {
				return true
			}
		}
		return false
	})
	envs, attachments := natstest.Envelopes(t, msgs)
	var a answer
	for i, env := range envs {
		switch env.Kind {
		case wire.KindRedeliverySummary:
			var s wire.RedeliverySummary
			if err := json.Unmarshal(env.Body, &s); err != nil {
				t.Fatal(err)
			}
			if s.RequestID == requestID {
				a.summary = s
			}
		case wire.KindRedeliveryBundle:
			var b wire.Bundle
			if err := json.Unmarshal(env.Body, &b); err != nil {
				t.Fatal(err)
			}
			if b.RequestID == requestID {
				a.envelopes, a.bundles, a.attachments = append(a.envelopes, env), append(a.bundles, b), append(a.attachments, attachments[i])
			}
		}
	}
	return a
}

// answerOrder lists the request ids of the answers in msgs in the order their first bundle or
// their summary was published.
func answerOrder(t *testing.T, msgs []natstest.Msg) []string {
	t.Helper()
	envs, _ := natstest.Envelopes(t, msgs)
	var order []string
	seen := map[string]bool{}
	for _, env := range envs {
		var id struct {
			RequestID string `json:"request_id"`
		}
		if (env.Kind != wire.KindRedeliveryBundle && env.Kind != wire.KindRedeliverySummary) || json.Unmarshal(env.Body, &id) != nil || seen[id.RequestID] {
			continue
		}
		seen[id.RequestID] = true
		order = append(order, id.RequestID)
	}
	return order
}

func seqRange(lo, hi int64) (*int64, *int64) { return &lo, &hi }
