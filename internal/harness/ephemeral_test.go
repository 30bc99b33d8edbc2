package harness_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/jobs"
	"github.com/streamseal/streamseal/controlplane/status"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/harness"
)

// ephemeralEvents appends n ephemeral events of type eventTypes[0] to one stream of s in one
// transaction (one checkpoint round) and returns them; type_seq i+1 is events[i].
func ephemeralEvents(t *testing.T, s *harness.Service, n int) []store.NewEvent {
	t.Helper()
	var events []store.NewEvent
	for i := range n {
		events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "eph", StreamVersion: int64(i + 1),
			EventType: eventTypes[0], Flags: store.Ephemeral, Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	return events
}

func appendNow(t *testing.T, s *harness.Service, events []store.NewEvent) {
	t.Helper()
	if _, err := store.EventsAppend(context.Background(), s.Pool, events); err != nil {
		t.Fatal(err)
	}
}

func holds(t *testing.T, s *harness.Service, live bool) int {
	t.Helper()
	var n int
	q := "select count(*) from streamseal.destruction_holds"
	if live {
		q += " where expires_at > now()"
	}
	if err := s.Pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func present(t *testing.T, s *harness.Service, id uuid.UUID) bool {
	t.Helper()
	var n int
	if err := s.Pool.QueryRow(context.Background(), "select count(*) from streamseal.events where event_id = $1", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

type lossReport struct {
	Reason, TypeSeqs string
	N                int64
}

func lossReports(t *testing.T, s *harness.Service) []lossReport {
	t.Helper()
	rows, err := s.Pool.Query(context.Background(), "select reason, type_seqs::text, n from streamseal.loss_reports order by id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []lossReport
	for rows.Next() {
		var r lossReport
		if err := rows.Scan(&r.Reason, &r.TypeSeqs, &r.N); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// reapAtBuild runs the maintenance job's reaper step, with a grace already spent, on the origin
// as each redelivery build starts (after the request was accepted, before anything is selected),
// first waiting until every destruction hold has passed its limit when expire is set. It records
// what each run removed and whether the watched event outlived it.
type reapAtBuild struct {
	t      *testing.T
	expire bool
	watch  uuid.UUID

	mu       sync.Mutex
	reaped   []int64
	survived []bool
}

func (r *reapAtBuild) hook(s *harness.Service) func(id, phase string) {
	return func(_, phase string) {
		if phase != "start" {
			return
		}
		ctx := context.Background()
		if r.expire {
			// Witness: the hold has passed its limit (1 ms), read from the database's clock.
			deadline := time.Now().Add(failsafe)
			for holds(r.t, s, true) > 0 {
				if time.Now().After(deadline) {
					r.t.Error("gave up waiting for the destruction hold to pass its limit")
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
		n, err := jobs.ReapEphemeral(ctx, s.Pool, 0, nil)
		if err != nil {
			r.t.Error(err)
			return
		}
		alive := present(r.t, s, r.watch)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.reaped = append(r.reaped, n)
		r.survived = append(r.survived, alive)
	}
}

func (r *reapAtBuild) first() (reaped int64, survived, ran bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reaped) == 0 {
		return 0, false, false
	}
	return r.reaped[0], r.survived[0], true
}

// Invariants 1 and 6: a lost ephemeral delivery is repaired inside its grace thanks to the
// destruction hold its repair request placed at the origin, although the reaper ran (and removed
// every other ephemeral event) between the request's arrival and its build.
func TestEphemeral_AHeldLossIsRepairedAlthoughTheReaperRan(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	lose := &suppressOnce{lose: map[uuid.UUID]bool{}}
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1], Suppress: lose.fn}, nil)
	services := []*harness.Service{orders, billing}

	events := ephemeralEvents(t, orders, 10)
	lost := events[4] // type_seq 5
	lose.lose[lost.EventID] = true
	reaper := &reapAtBuild{t: t, watch: lost.EventID}
	orders.Redelivery.OnBuild = reaper.hook(orders)
	appendNow(t, orders, events)

	waitFor(t, "billing holds the lost event again", services, func() bool { return present(t, billing, lost.EventID) })
	reaped, survived, ran := reaper.first()
	if !ran || reaped != 9 || !survived {
		t.Fatalf("the reaper at the build ran %v, removed %d (want the 9 unheld), the held event survived %v", ran, reaped, survived)
	}
	waitFor(t, "the floor passes the repaired hole and the hold is released", services, func() bool {
		return laneFloor(t, billing, "orders", "acme", eventTypes[0]) == 10 && holds(t, orders, false) == 0
	})
	if r := lossReports(t, billing); len(r) != 0 {
		t.Fatalf("a repaired event was reported lost: %+v", r)
	}
}

// Invariants 1 and 6: past the hold limit the reaper takes the held event; the origin answers
// reaped_ephemeral, and the consumer accepts the loss with a report it shows in status and the
// metrics, instead of asking again or calling it absent.
func TestEphemeral_PastTheHoldLimitTheLossIsAcceptedAsReaped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	originSettings := settings
	originSettings.Redelivery.HoldLimit = time.Millisecond
	orders := start(t, h, "orders", harness.Options{Settings: originSettings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	lose := &suppressOnce{lose: map[uuid.UUID]bool{}}
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1], Suppress: lose.fn}, nil)
	services := []*harness.Service{orders, billing}

	events := ephemeralEvents(t, orders, 10)
	lost := events[4] // type_seq 5
	lose.lose[lost.EventID] = true
	reaper := &reapAtBuild{t: t, watch: lost.EventID, expire: true}
	orders.Redelivery.OnBuild = reaper.hook(orders)
	appendNow(t, orders, events)

	waitFor(t, "the loss accepted: the floor passes it", services, func() bool {
		return laneFloor(t, billing, "orders", "acme", eventTypes[0]) == 10
	})
	if reaped, survived, ran := reaper.first(); !ran || reaped != 10 || survived {
		t.Fatalf("the reaper at the build ran %v, removed %d (want all 10: the hold expired), the lost event survived %v", ran, reaped, survived)
	}
	if present(t, billing, lost.EventID) {
		t.Fatal("billing holds an event the origin reaped")
	}
	if r := lossReports(t, billing); len(r) != 1 || r[0] != (lossReport{Reason: "reaped_ephemeral", TypeSeqs: "{[5,6)}", N: 1}) {
		t.Fatalf("loss reports = %+v; want one reaped_ephemeral report of type_seq 5", r)
	}
	origins, err := status.Read(context.Background(), billing.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(origins) != 1 || origins[0].Losses["reaped_ephemeral"] != 1 || len(origins[0].LossReports) != 1 ||
		origins[0].Lanes[0].AcceptedLosses != "{[5,6)}" {
		t.Fatalf("status = %+v; want the reaped_ephemeral loss of type_seq 5 on record", origins)
	}
	if err := billing.Metrics.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := metricValue(t, billing, "streamseal_accepted_losses_total", map[string]string{"origin": "orders", "reason": "reaped_ephemeral"}); v != 1 {
		t.Fatalf("streamseal_accepted_losses_total{reason=reaped_ephemeral} = %v, want 1", v)
	}
}

// Invariants 1 and 6: at-most-once occurrences lost in transit are no holes and are never
// requested, and they are not accepted silently: the checkpoint that announced them leaves a
// report per lane and window, shown in status and counted by streamseal_at_most_once_missed_total.
func TestEphemeral_UnarrivedAtMostOnceIsReportedNeverRequested(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := fast(config.AutoRepairCapped, 10)
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1],
		Suppress: func(e store.EventCopy) bool { return e.Flags&store.AtMostOnce != 0 && e.StreamVersion <= 20 }}, nil)
	services := []*harness.Service{orders, billing}
	// Type eventTypes[0]: 20 events, every other one an at-most-once occurrence (type_seqs 1, 3,
	// .., 19); the first five occurrences (versions 1..20 of the stream) are lost in transit, the
	// other five arrive.
	var events []store.NewEvent
	for i := range 40 {
		e := store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: "amo", StreamVersion: int64(i + 1),
			EventType: eventTypes[i%2], Payload: []byte("{}")}
		if i%4 == 0 {
			e.Flags = store.AtMostOnce
		}
		events = append(events, e)
	}
	appendNow(t, orders, events)

	waitFor(t, "billing's lane caught up", services, func() bool {
		return laneFloor(t, billing, "orders", "acme", eventTypes[0]) == 20
	})
	if r := lossReports(t, billing); len(r) != 1 || r[0] != (lossReport{Reason: "at_most_once", TypeSeqs: "{[1,2),[3,4),[5,6),[7,8),[9,10)}", N: 5}) {
		t.Fatalf("loss reports = %+v; want the 5 lost occurrences (type_seqs 1, 3, 5, 7, 9) in one report", r)
	}
	if g := gapReports(t, billing); len(g) != 0 {
		t.Fatalf("gaps reported for at-most-once occurrences: %+v", g)
	}
	if received, _, _ := orders.Redelivery.Counts(); received != 0 {
		t.Fatalf("orders received %d redelivery requests; at-most-once occurrences are never requested", received)
	}
	origins, err := status.Read(context.Background(), billing.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(origins) != 1 || origins[0].Losses["at_most_once"] != 5 || len(origins[0].LossReports) != 1 ||
		origins[0].LossReports[0].WindowTo == nil {
		t.Fatalf("status = %+v; want 5 at-most-once losses reported with their window", origins)
	}
	if err := billing.Metrics.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := metricValue(t, billing, "streamseal_at_most_once_missed_total", map[string]string{"origin": "orders"}); v != 5 {
		t.Fatalf("streamseal_at_most_once_missed_total = %v, want 5", v)
	}
}
