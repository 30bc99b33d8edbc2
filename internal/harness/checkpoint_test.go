package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// fast is a configuration with short intervals for checkpoint tests.
func fast(mode string, capPerCheckpoint int) config.Config {
	c := config.Defaults()
	c.CheckpointInterval = 250 * time.Millisecond
	c.MaintenanceInterval = time.Hour
	c.RepairMode = mode
	c.MaxAutoRepairRequestsPerCheckpoint = capPerCheckpoint
	c.RepairRetryAfter = time.Hour
	return c
}

type gapReport struct {
	Tenant, EventType, TypeSeqs, Action string
	WindowFrom, WindowTo                int64
	Request                             []byte
	Round                               time.Time
}

func gapReports(t *testing.T, s *harness.Service) []gapReport {
	t.Helper()
	rows, err := s.Pool.Query(context.Background(), `
		select tenant, event_type, type_seqs::text, action, window_from, window_to, coalesce(request::text, '')::bytea,
		       coalesce(round_at, 'epoch')
		from streamseal.gap_reports order by id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []gapReport
	for rows.Next() {
		var g gapReport
		if err := rows.Scan(&g.Tenant, &g.EventType, &g.TypeSeqs, &g.Action, &g.WindowFrom, &g.WindowTo, &g.Request, &g.Round); err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	return out
}

func laneFloor(t *testing.T, s *harness.Service, origin, tenant, eventType string) int64 {
	t.Helper()
	var floor int64
	err := s.Pool.QueryRow(context.Background(), "select coalesce((select floor from streamseal.lanes where origin = $1 and tenant = $2 and event_type = $3), -1)",
		origin, tenant, eventType).Scan(&floor)
	if err != nil {
		t.Fatal(err)
	}
	return floor
}

func typeSeqOf(t *testing.T, s *harness.Service, id uuid.UUID) (originSeq, typeSeq int64, eventType string) {
	t.Helper()
	if err := s.Pool.QueryRow(context.Background(), "select origin_seq, type_seq, event_type from streamseal.numbered_events where event_id = $1", id).
		Scan(&originSeq, &typeSeq, &eventType); err != nil {
		t.Fatal(err)
	}
	return
}

// suppressOnce loses exactly the chosen deliveries, once each (a replay or a repair gets through).
type suppressOnce struct {
	mu   sync.Mutex
	lose map[uuid.UUID]bool
}

func (s *suppressOnce) fn(e store.EventCopy) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lose[e.EventID] {
		delete(s.lose, e.EventID)
		return true
	}
	return false
}

// Invariants 1 and 6: one delivery of 500 is lost at the receive seam; the consumer's checkpoint
// verification names it exactly (origin, tenant, type, type_seq), the lane's floor stops below
// the hole while later events of the same lane arrive (no leapfrog), auto-repair re-delivers it,
// the store converges and the floor then passes it.
func TestCheckpoint_NamesALostDeliveryAndRepairsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	orders := start(t, h, "orders", harness.Options{Settings: fast(config.AutoRepairCapped, 10),
		Grants: map[string][]string{"billing": eventTypes}}, nil)
	lose := &suppressOnce{lose: map[uuid.UUID]bool{}}
	billing := start(t, h, "billing", harness.Options{Settings: fast(config.AutoRepairCapped, 10), Consumes: eventTypes, Suppress: lose.fn}, nil)
	services := []*harness.Service{orders, billing}

	// The 250th event is lost; 250 more of every type follow it.
	var events []store.NewEvent
	for i := range 500 {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: fmt.Sprintf("order-%02d", i%50),
			StreamVersion: int64(i/50 + 1), EventType: eventTypes[i%len(eventTypes)], Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	dropped := events[249]
	lose.lose[dropped.EventID] = true
	for i := 0; i < len(events); i += 50 {
		if _, err := store.EventsAppend(context.Background(), orders.Pool, events[i:i+50]); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the dropped event is stamped", services, func() bool {
		var n int
		_ = orders.Pool.QueryRow(context.Background(), "select count(*) from streamseal.numbered_events where event_id = $1", dropped.EventID).Scan(&n)
		return n == 1
	})
	_, typeSeq, eventType := typeSeqOf(t, orders, dropped.EventID)

	want := fmt.Sprintf("{[%d,%d)}", typeSeq, typeSeq+1)
	waitFor(t, "the gap named exactly", services, func() bool {
		for _, g := range gapReports(t, billing) {
			if g.Tenant == "acme" && g.EventType == eventType && g.TypeSeqs == want && g.Action == "requested" {
				return true
			}
		}
		return false
	})
	waitFor(t, "billing converged to 500", services, func() bool { return countFrom(t, billing.Pool, "orders") == 500 })
	requireSameRows(t, rowsOf(t, orders.Pool, "orders"), rowsOf(t, billing.Pool, "orders"))
	waitFor(t, "the floor passes the repaired hole", services, func() bool {
		return laneFloor(t, billing, "orders", "acme", eventType) >= typeSeq
	})
	for _, g := range gapReports(t, billing) {
		if g.TypeSeqs != want || g.EventType != eventType {
			t.Fatalf("a gap other than the dropped event was reported: %+v", g)
		}
	}
}

// Invariant 6 (no leapfrog): while the hole is open the floor stays below it, though later events
// of the same lane are stored; a replay of the hole is stored, not discarded as a duplicate.
func TestCheckpoint_FloorNeverLeapfrogsAHole(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	report := fast(config.ReportOnly, 10) // nobody repairs: the hole stays open until we replay it
	orders := start(t, h, "orders", harness.Options{Settings: report, Grants: map[string][]string{"billing": eventTypes}}, nil)
	lose := &suppressOnce{lose: map[uuid.UUID]bool{}}
	billing := start(t, h, "billing", harness.Options{Settings: report, Consumes: eventTypes[:1], Suppress: lose.fn}, nil)
	services := []*harness.Service{orders, billing}

	var events []store.NewEvent
	for i := range 20 {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "s", StreamVersion: int64(i + 1),
			EventType: eventTypes[0], Payload: []byte("{}")})
	}
	lose.lose[events[6].EventID] = true // type_seq 7
	if _, err := store.EventsAppend(context.Background(), orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the hole confirmed (reported)", services, func() bool { return len(gapReports(t, billing)) == 1 })
	if got := gapReports(t, billing)[0]; got.TypeSeqs != "{[7,8)}" || got.Action != "would_request" {
		t.Fatalf("gap report = %+v, want type_seq 7, would_request", got)
	}
	if floor := laneFloor(t, billing, "orders", "acme", eventTypes[0]); floor != 6 {
		t.Fatalf("floor %d with type_seq 7 missing and 8..20 held: the floor leapfrogged the hole", floor)
	}
	if n := countFrom(t, billing.Pool, "orders"); n != 19 {
		t.Fatalf("billing holds %d events, want 19 (all but the hole)", n)
	}
	// The hole's replay (here a redelivery of the whole lane) is stored, not discarded.
	var got summaries
	billing.Repair.OnSummary = got.record
	id := requestAll(t, billing, "orders", eventTypes[:1])
	waitFor(t, "the replay's summary", services, func() bool { _, ok := got.get(id); return ok })
	waitFor(t, "the floor passes the hole once it is stored", services, func() bool {
		return countFrom(t, billing.Pool, "orders") == 20 && laneFloor(t, billing, "orders", "acme", eventTypes[0]) == 20
	})
}

// Report-only sends nothing, and records exactly the request auto-repair sends for the same loss.
// The loss must reach both modes in one checkpoint round: a round names only the gaps of its own
// window, so losses appended in several transactions were split over as many rounds as there
// were checkpoints between the commits (under load the first report named 1, 3 or all 5 of the
// lost events). One transaction is stamped and relayed whole, so its window is one round's.
func TestCheckpoint_ReportOnlyRecordsTheRequestAutoRepairSends(t *testing.T) {
	t.Parallel()
	recorded := map[string]wire.RedeliveryRequest{}
	for _, mode := range []string{config.AutoRepairCapped, config.ReportOnly} {
		h := newHarness(t)
		orders := start(t, h, "orders", harness.Options{Settings: fast(mode, 10), Grants: map[string][]string{"billing": eventTypes}}, nil)
		billing := start(t, h, "billing", harness.Options{Settings: fast(mode, 10), Consumes: eventTypes,
			Suppress: func(e store.EventCopy) bool { return e.StreamID == "order-03" && e.StreamVersion%2 == 0 }}, nil)
		services := []*harness.Service{orders, billing}
		if _, err := store.EventsAppend(context.Background(), orders.Pool, streamEvents(100, 10, "order")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "gaps recorded in "+mode, services, func() bool { return len(gapReports(t, billing)) > 0 })
		g := gapReports(t, billing)[0]
		// The first round names the whole loss: order-03's even versions, order.shipped type_seqs 3, 7, 11, 15, 19.
		if want := "{[3,4),[7,8),[11,12),[15,16),[19,20)}"; g.TypeSeqs != want || g.EventType != eventTypes[3] {
			t.Fatalf("%s: the first gap report names %s %s, want %s %s (one commit, one round)", mode, g.EventType, g.TypeSeqs, eventTypes[3], want)
		}
		var req wire.RedeliveryRequest
		if err := json.Unmarshal(g.Request, &req); err != nil {
			t.Fatal(err)
		}
		req.RequestID = ""
		recorded[mode] = req
		received, _, _ := orders.Redelivery.Counts()
		switch mode {
		case config.ReportOnly:
			if g.Action != "would_request" || received != 0 {
				t.Fatalf("report-only: action %q and the origin received %d requests; want would_request and 0", g.Action, received)
			}
		default:
			if g.Action != "requested" {
				t.Fatalf("auto-repair: action %q", g.Action)
			}
		}
	}
	a, _ := json.Marshal(recorded[config.AutoRepairCapped])
	r, _ := json.Marshal(recorded[config.ReportOnly])
	if string(a) != string(r) {
		t.Fatalf("report-only would send\n%s\nbut auto-repair sends\n%s", r, a)
	}
}

// Invariant 1 (tail loss): the last events before a quiet period are lost; the next (empty)
// checkpoints alone name them.
func TestCheckpoint_DetectsTailLossFromTheCheckpointAlone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	report := fast(config.ReportOnly, 10)
	orders := start(t, h, "orders", harness.Options{Settings: report}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: report, Consumes: eventTypes[:1],
		Suppress: func(e store.EventCopy) bool { return e.StreamVersion > 27 }}, nil)
	services := []*harness.Service{orders, billing}
	var events []store.NewEvent
	for i := range 30 {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "tail", StreamVersion: int64(i + 1),
			EventType: eventTypes[0], Payload: []byte("{}")})
	}
	if _, err := store.EventsAppend(context.Background(), orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tail named", services, func() bool {
		g := gapReports(t, billing)
		return len(g) == 1 && g[0].TypeSeqs == "{[28,31)}"
	})
}

// A consumer that does not consume a type never alarms about it, and at-most-once occurrences
// it never received create no hole.
func TestCheckpoint_NoAlarmForUnconsumedTypesOrAtMostOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1],
		Suppress: func(e store.EventCopy) bool { return e.Flags&store.AtMostOnce != 0 }}, nil)
	services := []*harness.Service{orders, billing}
	var events []store.NewEvent
	for i := range 40 {
		e := store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "mix", StreamVersion: int64(i + 1),
			EventType: eventTypes[i%2], Payload: []byte("{}")}
		if i%4 == 0 {
			e.Flags = store.AtMostOnce
		}
		events = append(events, e)
	}
	if _, err := store.EventsAppend(context.Background(), orders.Pool, events); err != nil {
		t.Fatal(err)
	}
	// Witness: billing has verified a checkpoint covering everything (its lane floor reached the
	// last type_seq of the consumed type), and reported nothing.
	waitFor(t, "billing's lane caught up", services, func() bool {
		return laneFloor(t, billing, "orders", "acme", eventTypes[0]) == 20
	})
	if g := gapReports(t, billing); len(g) != 0 {
		t.Fatalf("gaps reported: %+v", g)
	}
	var lanes int
	if err := billing.Pool.QueryRow(context.Background(), "select count(*) from streamseal.lanes where event_type <> $1", eventTypes[0]).Scan(&lanes); err != nil {
		t.Fatal(err)
	}
	if lanes != 0 {
		t.Fatalf("billing keeps %d lanes for types it does not consume", lanes)
	}
}

// Liveness: an origin whose control plane stops raises the alarm after 3 silent intervals, and
// clears it when it speaks again.
func TestCheckpoint_LivenessAlarmRaisesAndClears(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	orders := start(t, h, "orders", harness.Options{Settings: settings}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1]}, nil)
	services := []*harness.Service{billing}
	appendOrders(t, orders, 5, 1)
	silent := func() bool {
		var s bool
		_ = billing.Pool.QueryRow(context.Background(), "select coalesce((select silent_since is not null from streamseal.known_origins where origin = 'orders'), false)").Scan(&s)
		return s
	}
	known := func() bool {
		var n int
		_ = billing.Pool.QueryRow(context.Background(), "select count(*) from streamseal.known_origins where origin = 'orders'").Scan(&n)
		return n == 1
	}
	waitFor(t, "billing learned orders from its checkpoints", services, known)
	if silent() {
		t.Fatal("alarm raised while orders was speaking")
	}
	orders.Stop()
	waitFor(t, "the liveness alarm", services, silent)
	restarted := startReplica(t, h, orders, harness.Options{Settings: settings})
	waitFor(t, "the alarm cleared", []*harness.Service{billing, restarted}, func() bool { return !silent() })
}

// startReplica starts another control plane on of's database (a second replica, or a restart).
func startReplica(t *testing.T, h *harness.Harness, of *harness.Service, opts harness.Options) *harness.Service {
	t.Helper()
	s, err := h.StartOn(context.Background(), of, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Liveness and issue 21 item 3 (checkpoints cost what happened): once orders goes quiet its
// pairs are not checkpointed again, yet billing sees orders alive every interval on its beats and
// never raises the liveness alarm, however many intervals pass, and no false gap appears.
func TestCheckpoint_AQuietOriginStaysAliveOnItsBeats(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	// A liveness window of 6 intervals: wide enough that a loaded machine does not starve the
	// beats for that long, short enough to outlast in a few seconds.
	settings.LivenessIntervals = 6
	orders := start(t, h, "orders", harness.Options{Settings: settings}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1]}, nil)
	services := []*harness.Service{orders, billing}
	appendOrders(t, orders, 6, 2) // two of them of the consumed type
	silent := func() bool {
		var s bool
		_ = billing.Pool.QueryRow(context.Background(), "select coalesce((select silent_since is not null from streamseal.known_origins where origin = 'orders'), false)").Scan(&s)
		return s
	}
	waitFor(t, "billing's lane caught up", services, func() bool { return laneFloor(t, billing, "orders", "acme", eventTypes[0]) == 2 })
	// Witness of quiet: a beat arrived after the lane caught up, so every checkpoint of the
	// active windows was taken; from here on only beats may arrive.
	first := billing.Verifier.Beats()
	waitFor(t, "a beat after the catch-up", services, func() bool { return billing.Verifier.Beats() > first })
	received, _, _ := billing.Verifier.Counts()
	quietBeats := billing.Verifier.Beats()
	// More quiet rounds than the liveness window holds, counted in beats (one per orders round).
	// The window is LivenessIntervals of the interval orders announces (whole seconds, at least
	// one), longer than its rounds here; billing's checkpoint job checks liveness every round.
	announced := time.Duration(max(1, int(settings.CheckpointInterval.Seconds()))) * time.Second
	window := int64(settings.LivenessIntervals) * int64(announced/settings.CheckpointInterval)
	waitFor(t, "quiet beats outlasting the liveness window", services, func() bool {
		if silent() {
			t.Fatal("liveness alarm raised for orders while it was quiet but alive")
		}
		return billing.Verifier.Beats() >= quietBeats+window+4
	})
	if silent() {
		t.Fatal("liveness alarm raised for orders while it was quiet but alive")
	}
	if now, gaps, requests := billing.Verifier.Counts(); now != received || gaps != 0 || requests != 0 {
		t.Fatalf("over the quiet intervals billing received %d more checkpoints, %d gaps, %d requests; want none", now-received, gaps, requests)
	}
}
