package harness_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/harness"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const failsafe = 60 * time.Second

var eventTypes = []string{"order.placed", "order.paid", "order.packed", "order.shipped", "order.delivered"}

func newHarness(t *testing.T) *harness.Harness {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	h, err := harness.New(ctx, func(ctx context.Context, service string) (string, error) {
		return dbtest.New(t), nil
	}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func start(t *testing.T, h *harness.Harness, name string, opts harness.Options, configure func(*harness.Service)) *harness.Service {
	t.Helper()
	s, err := h.Start(context.Background(), name, opts, configure)
	if err != nil {
		t.Fatal(err)
	}
	// Registered after the service's database: cleanups run last-first, so the service stops
	// before its database is dropped.
	t.Cleanup(s.Stop)
	return s
}

// appendOrders appends n events over streams streams and the five types, 20 per transaction.
func appendOrders(t *testing.T, s *harness.Service, n, streams int) {
	t.Helper()
	appendStreams(t, s, n, streams, "order")
}

// appendStreams is appendOrders with its own stream names (prefix-NN), in transactions of 20.
func appendStreams(t *testing.T, s *harness.Service, n, streams int, prefix string) {
	t.Helper()
	events := streamEvents(n, streams, prefix)
	for len(events) > 0 {
		batch := events[:min(20, len(events))]
		events = events[len(batch):]
		if _, err := store.EventsAppend(context.Background(), s.Pool, batch); err != nil {
			t.Fatal(err)
		}
	}
}

// streamEvents are the n events appendStreams appends: event i in stream prefix-(i mod streams)
// at its next version, of type i mod len(eventTypes).
func streamEvents(n, streams int, prefix string) []store.NewEvent {
	versions := map[string]int64{}
	var out []store.NewEvent
	for i := range n {
		stream := fmt.Sprintf("%s-%02d", prefix, i%streams)
		versions[stream]++
		out = append(out, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: stream,
			StreamVersion: versions[stream], EventType: eventTypes[i%len(eventTypes)],
			Payload:  []byte(fmt.Sprintf(`{ "order": %d,  "line": %d }`, i%streams, i)), // odd spacing: bytes must survive untouched
			Metadata: []byte(`{"trace":"` + uuid.NewString() + `"}`)})
	}
	return out
}

// waitFor polls a witness until it holds; the deadline is a failsafe, not the assertion.
func waitFor(t *testing.T, what string, services []*harness.Service, witness func() bool) {
	t.Helper()
	waitWithin(t, failsafe, what, services, witness)
}

// waitWithin is waitFor with a failsafe of its own, for the few scenarios whose honest duration
// approaches the default one.
func waitWithin(t *testing.T, failsafe time.Duration, what string, services []*harness.Service, witness func() bool) {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for !witness() {
		for _, s := range services {
			if err := s.Err(); err != nil {
				t.Fatalf("while waiting for %s: %v", what, err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countFrom(t *testing.T, pool *pgxpool.Pool, origin string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "select count(*) from streamseal.events where origin = $1", origin).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// settled counts deliveries an inbox has finished with: stored (committed) or lost at its seam.
func settled(s *harness.Service) int64 {
	c := s.Inbox.Counts()
	return c.Stored + c.Suppressed
}

// storedRow is everything identity and payload fidelity cover (invariant 3).
type storedRow struct {
	EventID            uuid.UUID
	OriginSeq, TypeSeq int64
	Tenant, StreamID   string
	StreamVersion      int64
	EventType          string
	Payload, Metadata  []byte
}

func rowsOf(t *testing.T, pool *pgxpool.Pool, origin string) []storedRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		select event_id, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload, metadata::text::bytea
		from streamseal.numbered_events where origin = $1 order by origin_seq`, origin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[storedRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func digestsOf(t *testing.T, pool *pgxpool.Pool, origin string) []store.Digest {
	t.Helper()
	all, err := store.StreamDigests(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Digest
	for _, d := range all {
		if d.Origin == origin {
			out = append(out, d)
		}
	}
	return out
}

func requireSameRows(t *testing.T, want, got []storedRow) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("row count: origin %d, copy %d", len(want), len(got))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.EventID != g.EventID || w.OriginSeq != g.OriginSeq || w.TypeSeq != g.TypeSeq || w.Tenant != g.Tenant ||
			w.StreamID != g.StreamID || w.StreamVersion != g.StreamVersion || w.EventType != g.EventType ||
			!bytes.Equal(w.Payload, g.Payload) || !bytes.Equal(w.Metadata, g.Metadata) {
			t.Fatalf("row %d differs:\norigin %+v\ncopy   %+v", i, w, g)
		}
	}
}

// summaries collects redelivery summaries a service receives, by request id.
type summaries struct {
	mu   sync.Mutex
	byID map[string]wire.RedeliverySummary
}

func (s *summaries) record(sum wire.RedeliverySummary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]wire.RedeliverySummary{}
	}
	s.byID[sum.RequestID] = sum
}

func (s *summaries) get(id string) (wire.RedeliverySummary, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum, ok := s.byID[id]
	return sum, ok
}

func requestAll(t *testing.T, s *harness.Service, origin string, types []string) string {
	t.Helper()
	from, to := int64(1), int64(1<<40)
	id, err := requestFrom(s, origin, wire.RedeliveryRequest{Tenants: []string{"acme"}, Types: types, FromSeq: &from, ToSeq: &to, MaxEvents: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func requestFrom(s *harness.Service, origin string, req wire.RedeliveryRequest) (string, error) {
	// Recorded in sent_requests like every request a service sends: only a request it sent is
	// answered into its store (invariant 12).
	return redelivery.Request(context.Background(), s.Pool, s.JS, s.Name, origin, req)
}

// Invariants 1, 2, 3 and 11 end to end: an origin and two consumers over the real wire. The
// consumer "billing" loses 30% of deliveries at its receive seam; one redelivery request
// converges it byte for byte with equal digests. "shipping" sees every bundle addressed to
// billing (its control endpoint is fed billing's traffic) and drops them all at its seam.
// Re-delivering everything twice more adds no row and moves no digest.
func TestRedelivery_ConvergesADamagedConsumerAndIsolatesTheOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	grants := map[string][]string{"billing": eventTypes, "shipping": eventTypes}
	orders := start(t, h, "orders", harness.Options{Grants: grants}, nil)
	var billingSummaries summaries
	var shipping *harness.Service
	// shipping loses ~10% itself: were billing's bundles not dropped at its seam, it would gain them.
	shipping = start(t, h, "shipping", harness.Options{Consumes: eventTypes, Suppress: func(e store.EventCopy) bool {
		return e.EventID[1]%10 == 0
	}}, nil)
	billing := start(t, h, "billing", harness.Options{Consumes: eventTypes, Suppress: func(e store.EventCopy) bool {
		return e.EventID[0]%10 < 3 // ~30% lost at the receive boundary
	}}, func(s *harness.Service) {
		s.Repair.OnSummary = billingSummaries.record
		// Everything billing's control endpoint receives is also published to shipping's inbox,
		// from the same sender (a subject the sender could publish).
		s.Control.Tap = func(subject string, data []byte) {
			from, _ := wire.ControlSender(subject)
			if _, err := shipping.JS.Publish(context.Background(), wire.ControlSubjectFrom("shipping", from), data); err != nil {
				t.Errorf("tap to shipping: %v", err)
			}
		}
	})
	services := []*harness.Service{orders, billing, shipping}

	// The origin's checkpoint round at start (the job runs on start, then hourly here) must be
	// behind us before any event: a round that ran late, under load, counted the events appended
	// by then and repaired the consumers' losses before this test looked at them.
	waitFor(t, "the origin's start-up checkpoint round (its beat)", services, func() bool { return orders.Publisher.Beats() > 0 })
	appendOrders(t, orders, 1000, 50)
	waitFor(t, "both consumers settled all 1000 deliveries (stored or lost)", services, func() bool {
		return settled(billing) == 1000 && settled(shipping) == 1000
	})
	lost := billing.Inbox.Counts().Suppressed
	if lost < 200 || countFrom(t, billing.Pool, "orders") != 1000-int(lost) {
		t.Fatalf("billing lost %d deliveries and holds %d: the fault injection did not bite as planned", lost, countFrom(t, billing.Pool, "orders"))
	}
	shippingBefore := rowsOf(t, shipping.Pool, "orders")
	if len(shippingBefore) == 1000 {
		t.Fatal("shipping lost nothing: it could not show a leak of billing's bundles")
	}

	id := requestAll(t, billing, "orders", eventTypes)
	waitFor(t, "billing's redelivery summary", services, func() bool { _, ok := billingSummaries.get(id); return ok })
	sum, _ := billingSummaries.get(id)
	if sum.Shipped != 1000 || sum.Truncated {
		t.Fatalf("summary = %+v; want 1000 shipped, not truncated", sum)
	}
	waitFor(t, "billing holds all 1000", services, func() bool { return countFrom(t, billing.Pool, "orders") == 1000 })

	originRows := rowsOf(t, orders.Pool, "orders")
	requireSameRows(t, originRows, rowsOf(t, billing.Pool, "orders"))
	originDigests := digestsOf(t, orders.Pool, "orders")
	if got := digestsOf(t, billing.Pool, "orders"); fmt.Sprint(got) != fmt.Sprint(originDigests) {
		t.Fatalf("billing's digests of orders differ from the origin's:\n%v\n%v", got, originDigests)
	}

	forwarded := int64(sum.Bundles) + 1 // the bundles and the summary addressed to billing
	waitFor(t, "shipping's control endpoint done with everything forwarded to it", services, func() bool {
		return shipping.Control.Finished() >= forwarded
	})
	requireSameRows(t, shippingBefore, rowsOf(t, shipping.Pool, "orders"))
	if dropped := shipping.Seam.Dropped()[wire.DropForeignTarget]; dropped != forwarded {
		t.Fatalf("shipping's seam dropped %d foreign-targeted messages, want %d", dropped, forwarded)
	}

	// Invariant 2: everything again, twice: no row, no digest moves.
	var updatedBefore time.Time
	if err := billing.Pool.QueryRow(context.Background(), "select max(updated_at) from streamseal.stream_digests").Scan(&updatedBefore); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		again := requestAll(t, billing, "orders", eventTypes)
		waitFor(t, "the repeated redelivery's summary", services, func() bool { _, ok := billingSummaries.get(again); return ok })
	}
	_, stored, refused := billing.Repair.Counts()
	if refused != 0 {
		t.Fatalf("billing refused %d bundles", refused)
	}
	if stored != lost {
		t.Fatalf("billing stored %d redelivered events in all, want exactly the %d it lost", stored, lost)
	}
	var updatedAfter time.Time
	if err := billing.Pool.QueryRow(context.Background(), "select max(updated_at) from streamseal.stream_digests").Scan(&updatedAfter); err != nil {
		t.Fatal(err)
	}
	if !updatedAfter.Equal(updatedBefore) {
		t.Fatalf("a redundant redelivery touched billing's digests (updated_at %v -> %v)", updatedBefore, updatedAfter)
	}
	requireSameRows(t, originRows, rowsOf(t, billing.Pool, "orders"))
}
