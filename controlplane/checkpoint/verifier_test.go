package checkpoint_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/checkpoint"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestVerifier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// Invariants 1 and 6 (tail loss) with quiet pairs not checkpointed (issue 21 item 3): the
	// window that announced a pair's last events leaves the lost one suspected (order not
	// proven); the pair then goes quiet and sends nothing more, and the origin's next beat
	// confirms the hole and requests it, once: a further beat asks nothing again before the
	// re-ask deadline, and a beat never moves the floor past the hole.
	t.Run("ABeatConfirmsAQuietPairsTailLossAndRequestsItOnce", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "orders", []string{"order.placed"}, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		var copies []store.EventCopy
		for seq := int64(1); seq <= 4; seq++ { // 5 is lost
			copies = append(copies, store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: seq, TypeSeq: seq,
				Tenant: "acme", StreamID: "s", StreamVersion: seq, EventType: "order.placed",
				Payload: []byte(fmt.Sprintf(`{"n":%d}`, seq)), OccurredAt: time.Now().UTC()})
		}
		if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
			t.Fatal(err)
		}
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "billing")
		cfg := config.Defaults()
		cfg.RepairMode = config.AutoRepairCapped
		v := &checkpoint.Verifier{Pool: pool, JS: js, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
		sent := func() int {
			var n int
			if err := pool.QueryRow(ctx, "select count(*) from streamseal.sent_requests").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		first, last := int64(1), int64(5)
		at := time.Now().UTC()
		if err := v.Verify(ctx, wire.Checkpoint{Origin: "orders", IntervalS: 1, At: at, From: 1, To: 6, Type: "order.placed",
			Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: 5, First: &first, Last: &last}}}, false); err != nil {
			t.Fatal(err)
		}
		if _, gaps, _ := v.Counts(); gaps != 0 || sent() != 0 {
			t.Fatalf("the announcing window confirmed %d gaps and sent %d requests; want the hole suspected only", gaps, sent())
		}
		for round := 1; round <= 3; round++ {
			if err := v.Beat(ctx, wire.Beat{Origin: "orders", IntervalS: 1, At: at.Add(time.Duration(round) * time.Second), From: 6, To: 6}); err != nil {
				t.Fatal(err)
			}
			if _, gaps, requests := v.Counts(); gaps != 1 || requests != 1 || sent() != 1 {
				t.Fatalf("after beat %d: %d gaps, %d requests, %d sent; want the tail loss confirmed and requested once", round, gaps, requests, sent())
			}
		}
		var floor int64
		var confirmed string
		if err := pool.QueryRow(ctx, "select floor, confirmed::text from streamseal.lanes where origin = 'orders' and tenant = 'acme'").
			Scan(&floor, &confirmed); err != nil {
			t.Fatal(err)
		}
		if floor != 4 || confirmed != "{[5,6)}" {
			t.Fatalf("lane floor %d confirmed %s; want floor 4 below the hole {[5,6)}", floor, confirmed)
		}
		if v.Beats() != 3 {
			t.Fatalf("beats counted %d, want 3", v.Beats())
		}
	})

	// Invariant 9's fairness state stays bounded: the verifier remembers, per lane that took or
	// waited for the cap, when it was last served, and per origin its recent rounds. A lane
	// forgotten by SQL (its type unsubscribed) is forgotten by Prune too, and an origin with no
	// lane left loses its rounds; a lane that still exists keeps its place in the order.
	t.Run("PruneForgetsTheFairnessStateOfLanesThatNoLongerExist", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		types := []string{"order.placed", "order.shipped"}
		if err := store.SubscriptionsAdd(ctx, pool, "orders", types, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		if err := store.SubscriptionsAdd(ctx, pool, "stock", types[:1], store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		cfg := config.Defaults()
		cfg.RepairMode = config.ReportOnly
		cfg.MaxAutoRepairRequestsPerCheckpoint = 1
		v := &checkpoint.Verifier{Pool: pool, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
		at := time.Now().UTC()
		// Each lane announces type_seqs 1..2 and holds neither: born at 0, both missing, proven
		// by order on the second window.
		for _, lane := range []struct{ origin, eventType string }{{"orders", types[0]}, {"orders", types[1]}, {"stock", types[0]}} {
			for w := int64(0); w < 2; w++ {
				first, last := 2*w+1, 2*w+2
				if err := v.Verify(ctx, wire.Checkpoint{Origin: lane.origin, IntervalS: 1, At: at.Add(time.Duration(w) * time.Second),
					From: first, To: last + 1, Type: lane.eventType,
					Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: 2, First: &first, Last: &last}}}, true); err != nil {
					t.Fatal(err)
				}
			}
		}
		if lanes, origins := v.Tracked(); lanes != 3 || origins != 2 {
			t.Fatalf("tracked %d lanes of %d origins after three lanes of two origins were offered; want 3 and 2", lanes, origins)
		}
		if _, err := pool.Exec(ctx, "select streamseal.unsubscribe_all_tenants(array['order.shipped'], 'orders')"); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, "select streamseal.unsubscribe_all_tenants(array['order.placed'], 'stock')"); err != nil {
			t.Fatal(err)
		}
		if err := v.Prune(ctx); err != nil {
			t.Fatal(err)
		}
		if lanes, origins := v.Tracked(); lanes != 1 || origins != 1 {
			t.Fatalf("tracked %d lanes of %d origins after two lanes (one the last of its origin) were forgotten; want 1 and 1", lanes, origins)
		}
	})

	// Invariant 9 (storm bounds without starvation): checkpoints and beats share one fairness
	// order. Cap one request a round; four lanes (2 tenants x 2 types) each lose one event every
	// round; each round's checkpoints arrive in the same order (the first lane always first) and
	// each round's beat arrives late, after the next round's checkpoints (the beat rides its own
	// durable, so nothing orders it against the pairs' subjects). Over five rounds each lane is
	// served once before any lane is served twice. (Before: a late beat re-offered the waiting
	// lanes under its older round, which counted them as no longer waiting, and the first lane
	// took the cap a second time while two lanes had never been served.)
	t.Run("CheckpointsAndLateBeatsServeEveryLaneInTurn", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		types, tenants := []string{"order.placed", "order.shipped"}, []string{"t1", "t2"}
		if err := store.SubscriptionsAdd(ctx, pool, "orders", types, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		cfg := config.Defaults()
		cfg.RepairMode = config.ReportOnly
		cfg.MaxAutoRepairRequestsPerCheckpoint = 1
		cfg.RepairRetryAfter = time.Hour
		v := &checkpoint.Verifier{Pool: pool, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
		base := time.Now().UTC().Truncate(time.Second)
		roundAt := func(r int) time.Time { return base.Add(time.Duration(r) * time.Second) }
		seq := int64(0)
		windows := map[int][2]int64{}
		for round := 1; round <= 5; round++ {
			from := seq + 1
			var cps []wire.Checkpoint
			var copies []store.EventCopy
			for _, eventType := range types {
				for _, tenant := range tenants {
					// Each lane's round holds type_seqs 2r-1 (stored) and 2r (lost).
					kept, lost := int64(2*round-1), int64(2*round)
					seq++
					copies = append(copies, store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: seq, TypeSeq: kept,
						Tenant: tenant, StreamID: fmt.Sprintf("r%d-%s-%s", round, tenant, eventType), StreamVersion: 1, EventType: eventType,
						Payload: []byte("{}"), OccurredAt: time.Now().UTC()})
					seq++ // the lost one
					cps = append(cps, wire.Checkpoint{Origin: "orders", IntervalS: 1, At: roundAt(round), Type: eventType,
						Tenants: []wire.CheckpointTenant{{Tenant: tenant, N: 2, First: &kept, Last: &lost}}})
				}
			}
			if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
				t.Fatal(err)
			}
			windows[round] = [2]int64{from, seq + 1}
			for _, cp := range cps {
				cp.From, cp.To = from, seq+1
				if err := v.Verify(ctx, cp, true); err != nil {
					t.Fatal(err)
				}
			}
			if round > 1 { // the previous round's beat, late
				w := windows[round-1]
				if err := v.Beat(ctx, wire.Beat{Origin: "orders", IntervalS: 1, At: roundAt(round - 1), From: w[0], To: w[1]}); err != nil {
					t.Fatal(err)
				}
			}
		}
		rows, err := pool.Query(ctx, "select tenant || ' ' || event_type from streamseal.gap_reports where action = 'would_request' order by id")
		if err != nil {
			t.Fatal(err)
		}
		order, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		served := map[string]int{}
		for i, lane := range order {
			served[lane]++
			if served[lane] == 2 && len(served) < len(types)*len(tenants) {
				t.Fatalf("lane %s served a second time (request %d of %v) before every lane was served once", lane, i+1, order)
			}
		}
		if len(order) > 5 || len(served) < len(types)*len(tenants) {
			t.Fatalf("served %v over five capped rounds; want at most one a round, every lane once", order)
		}
	})

	// Invariant 9 (storm bounds) with checkpoints verified behind their arrival (issue 21 item
	// 3: the inbox records checkpoints and verifies them at its own pace, so a round's message
	// can be verified after many later rounds' beats). The verifier keeps the request counts of
	// an origin's recent rounds only; a checkpoint of a round it has forgotten must not start
	// that round's cap again. Cap one: round 0 requests one of 65 lanes with a hole, 64 later
	// beats request one each (round 0 is forgotten), then a late message of round 0 confirms a
	// 66th lane's hole: it waits for the cap (a later round's beat offers it), round 0 keeps
	// one request.
	t.Run("ALateCheckpointOfAForgottenRoundTakesNoMoreOfItsCap", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "orders", []string{"order.placed"}, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		const lanes = 66
		cfg := config.Defaults()
		cfg.RepairMode = config.ReportOnly
		cfg.MaxAutoRepairRequestsPerCheckpoint = 1
		cfg.RepairRetryAfter = time.Hour
		v := &checkpoint.Verifier{Pool: pool, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
		base := time.Now().UTC().Truncate(time.Second)
		roundAt := func(r int) time.Time { return base.Add(time.Duration(r) * time.Second) }
		tenant := func(i int) string { return fmt.Sprintf("t%02d", i) }
		one, two := int64(1), int64(2)
		// Birth: every lane's type_seq 1, held, in round -1 (no hole, no request).
		var copies []store.EventCopy
		var birth []wire.Checkpoint
		for i := range lanes {
			copies = append(copies, store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: int64(i) + 1, TypeSeq: 1,
				Tenant: tenant(i), StreamID: tenant(i), StreamVersion: 1, EventType: "order.placed", Payload: []byte("{}"), OccurredAt: base})
			birth = append(birth, wire.Checkpoint{Origin: "orders", IntervalS: 1, At: roundAt(-1), From: 1, To: lanes + 1,
				Type: "order.placed", Tenants: []wire.CheckpointTenant{{Tenant: tenant(i), N: 1, First: &one, Last: &one}}})
		}
		if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
			t.Fatal(err)
		}
		if err := v.VerifyRun(ctx, birth, true); err != nil {
			t.Fatal(err)
		}
		// Round 0: every lane's type_seq 2 is lost; the messages of the first 65 lanes arrive.
		round0 := func(i int) wire.Checkpoint {
			return wire.Checkpoint{Origin: "orders", IntervalS: 1, At: roundAt(0), From: lanes + 1, To: 2*lanes + 1,
				Type: "order.placed", Tenants: []wire.CheckpointTenant{{Tenant: tenant(i), N: 1, First: &two, Last: &two}}}
		}
		var run []wire.Checkpoint
		for i := range lanes - 1 {
			run = append(run, round0(i))
		}
		if err := v.VerifyRun(ctx, run, true); err != nil {
			t.Fatal(err)
		}
		// 64 later rounds' beats, each requesting one waiting lane.
		for r := 1; r <= 64; r++ {
			if err := v.Beat(ctx, wire.Beat{Origin: "orders", IntervalS: 1, At: roundAt(r), From: 2*lanes + 1, To: 2*lanes + 1}); err != nil {
				t.Fatal(err)
			}
		}
		// The last lane's message of round 0, verified late.
		if err := v.Verify(ctx, round0(lanes-1), true); err != nil {
			t.Fatal(err)
		}
		var requested, lateLane int
		if err := pool.QueryRow(ctx, `select count(*) filter (where round_at = $1), count(*) filter (where tenant = $2)
			from streamseal.gap_reports where action = 'would_request'`, roundAt(0), tenant(lanes-1)).Scan(&requested, &lateLane); err != nil {
			t.Fatal(err)
		}
		if requested != 1 {
			t.Fatalf("round 0 sent %d requests, cap 1", requested)
		}
		if lateLane != 0 {
			t.Fatalf("the late lane was requested %d times in a forgotten round; want it left for a later round", lateLane)
		}
		// A later round's beat offers it.
		if err := v.Beat(ctx, wire.Beat{Origin: "orders", IntervalS: 1, At: roundAt(65), From: 2*lanes + 1, To: 2*lanes + 1}); err != nil {
			t.Fatal(err)
		}
		if err := pool.QueryRow(ctx, `select count(*) from streamseal.gap_reports where action = 'would_request' and tenant = $1`,
			tenant(lanes-1)).Scan(&lateLane); err != nil {
			t.Fatal(err)
		}
		if lateLane != 1 {
			t.Fatalf("the late lane was requested %d times by the next round's beat, want 1", lateLane)
		}
	})

	// Invariants 1 and 6 with a round verified as a run (issue 21 item 3): the messages of one
	// window over many tenants are verified in one call; the one tenant that lost its event is
	// named and requested (once), every other lane's floor moves to its last event, and a
	// message of the next window in the same run is verified as its own window.
	t.Run("ARunOfOneRoundNamesTheOneTenantThatLost", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "orders", []string{"order.placed"}, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		const tenants = 30
		cfg := config.Defaults()
		cfg.RepairMode = config.ReportOnly
		v := &checkpoint.Verifier{Pool: pool, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
		at := time.Now().UTC()
		// round makes every tenant's type_seq ts (at origin_seq base+i+1) but lose's, and the
		// run of the round's messages.
		round := func(base int64, ts int64, lose string) ([]store.EventCopy, []wire.Checkpoint) {
			var copies []store.EventCopy
			var run []wire.Checkpoint
			for i := range tenants {
				tenant := fmt.Sprintf("t%03d", i)
				if tenant != lose {
					copies = append(copies, store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: base + int64(i) + 1, TypeSeq: ts,
						Tenant: tenant, StreamID: tenant, StreamVersion: ts, EventType: "order.placed", Payload: []byte("{}"), OccurredAt: at})
				}
				run = append(run, wire.Checkpoint{Origin: "orders", IntervalS: 1, At: at.Add(time.Duration(ts) * time.Second),
					From: base + 1, To: base + tenants + 1, Type: "order.placed",
					Tenants: []wire.CheckpointTenant{{Tenant: tenant, N: 1, First: &ts, Last: &ts}}})
			}
			return copies, run
		}
		// Round 1 gives every lane its birth.
		copies, run := round(0, 1, "")
		if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
			t.Fatal(err)
		}
		if err := v.VerifyRun(ctx, run, true); err != nil {
			t.Fatal(err)
		}
		// Round 2 loses t017's event; round 3's message for t000 rides in the same run.
		copies, run = round(tenants, 2, "t017")
		three := int64(3)
		copies = append(copies, store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: 2*tenants + 1, TypeSeq: 3,
			Tenant: "t000", StreamID: "t000", StreamVersion: 3, EventType: "order.placed", Payload: []byte("{}"), OccurredAt: at})
		run = append(run, wire.Checkpoint{Origin: "orders", IntervalS: 1, At: at.Add(3 * time.Second), From: 2*tenants + 1, To: 2*tenants + 2,
			Type: "order.placed", Tenants: []wire.CheckpointTenant{{Tenant: "t000", N: 1, First: &three, Last: &three}}})
		if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
			t.Fatal(err)
		}
		if err := v.VerifyRun(ctx, run, true); err != nil {
			t.Fatal(err)
		}
		if received, gaps, requests := v.Counts(); received != 2*tenants+1 || gaps != 1 || requests != 1 {
			t.Fatalf("received %d, gaps %d, requests %d; want %d received, the one loss named and requested once", received, gaps, requests, 2*tenants+1)
		}
		var lost, atTop int
		if err := pool.QueryRow(ctx, `select count(*) filter (where tenant = 't017' and floor = 1 and confirmed = '{[2,3)}'),
			       count(*) filter (where tenant <> 't017' and floor = case tenant when 't000' then 3 else 2 end)
			from streamseal.lanes where origin = 'orders'`).Scan(&lost, &atTop); err != nil {
			t.Fatal(err)
		}
		if lost != 1 || atTop != tenants-1 {
			t.Fatalf("lanes: %d with t017's hole confirmed below its floor, %d others at their last event; want 1 and %d", lost, atTop, tenants-1)
		}
	})

	// Invariant 1: a lane's checkpoints verified out of order (a failed verification retried
	// after the next round's, a reordered recording) lose nothing. Checkpoint [11, 20] verified
	// first births the lane at 10; [1, 10] verified after it lowers the birth, so the loss at 3
	// is named (suspected, then confirmed by the next beat) and requested with the loss at 15,
	// never left behind the birth as history.
	t.Run("AnEarlierCheckpointVerifiedAfterALaterOneStillNamesItsLosses", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "orders", []string{"order.placed"}, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		at := time.Now().UTC()
		var copies []store.EventCopy
		for seq := int64(1); seq <= 20; seq++ {
			if seq == 3 || seq == 15 { // lost
				continue
			}
			copies = append(copies, store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: seq, TypeSeq: seq,
				Tenant: "acme", StreamID: "s", StreamVersion: seq, EventType: "order.placed", Payload: []byte("{}"), OccurredAt: at})
		}
		if _, err := store.EventsIngest(ctx, pool, copies); err != nil {
			t.Fatal(err)
		}
		cfg := config.Defaults()
		cfg.RepairMode = config.ReportOnly
		v := &checkpoint.Verifier{Pool: pool, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
		window := func(first, last int64) wire.Checkpoint {
			return wire.Checkpoint{Origin: "orders", IntervalS: 1, At: at.Add(time.Duration(first) * time.Second),
				From: first, To: last + 1, Type: "order.placed",
				Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: last - first + 1, First: &first, Last: &last}}}
		}
		if err := v.Verify(ctx, window(11, 20), false); err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(ctx, window(1, 10), false); err != nil {
			t.Fatal(err)
		}
		if err := v.Beat(ctx, wire.Beat{Origin: "orders", IntervalS: 1, At: at.Add(30 * time.Second), From: 21, To: 21}); err != nil {
			t.Fatal(err)
		}
		var named string
		if err := pool.QueryRow(ctx, `select coalesce(range_agg(r)::text, '{}')
			from streamseal.gap_reports g cross join unnest(g.type_seqs) r
			where g.origin = 'orders' and g.tenant = 'acme'`).Scan(&named); err != nil {
			t.Fatal(err)
		}
		if named != "{[3,4),[15,16)}" {
			t.Fatalf("gaps named %s; want both losses {[3,4),[15,16)}, 3 not left behind the birth as history", named)
		}
		var floor int64
		if err := pool.QueryRow(ctx, "select floor from streamseal.lanes where origin = 'orders' and tenant = 'acme'").Scan(&floor); err != nil {
			t.Fatal(err)
		}
		if floor != 2 {
			t.Fatalf("lane floor %d; want 2, below the hole at 3", floor)
		}
	})

	// Invariant 15 (issue 17): a beat of an older sender (no list) records no round, and the
	// origin keeps no lane-set mark (the feed certifies it by its lanes, as before); a listed beat
	// in two parts starts the mark at its window and moves it over the window only once both
	// parts are recorded and both listed lanes are announced, whichever checkpoint comes last.
	t.Run("AListedBeatMovesTheLaneSetMarkOnceEveryListedLaneIsAnnounced", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "orders", []string{"order.placed", "order.paid"}, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		cfg := config.Defaults()
		cfg.RepairMode = config.ReportOnly
		v := &checkpoint.Verifier{Pool: pool, Service: "billing", Config: cfg, Logger: testrun.Logger(t)}
		mark := func() *int64 {
			var m *int64
			if err := pool.QueryRow(ctx, "select lanes_announced_through from streamseal.known_origins where origin = 'orders'").Scan(&m); err != nil {
				t.Fatal(err)
			}
			return m
		}
		at := time.Now().UTC()
		if err := v.Beat(ctx, wire.Beat{Origin: "orders", IntervalS: 1, At: at, From: 1, To: 1}); err != nil {
			t.Fatal(err)
		}
		if m := mark(); m != nil {
			t.Fatalf("an older sender's beat left the mark at %d; want none", *m)
		}
		round := wire.Beat{Origin: "orders", IntervalS: 1, At: at.Add(time.Second), From: 1, To: 3}
		parts := []wire.Beat{round, round}
		parts[0].Part, parts[0].Parts, parts[0].Lanes = 1, 2, []wire.BeatLane{{Tenant: "acme", Type: "order.placed", Last: 1}}
		parts[1].Part, parts[1].Parts, parts[1].Lanes = 2, 2, []wire.BeatLane{{Tenant: "acme", Type: "order.paid", Last: 1}}
		one := int64(1)
		verify := func(eventType string) {
			t.Helper()
			if err := v.Verify(ctx, wire.Checkpoint{Origin: "orders", IntervalS: 1, At: round.At, From: 1, To: 3, Type: eventType,
				Tenants: []wire.CheckpointTenant{{Tenant: "acme", N: 1, First: &one, Last: &one}}}, false); err != nil {
				t.Fatal(err)
			}
		}
		beat := func(b wire.Beat) {
			t.Helper()
			if err := v.Beat(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		for i, step := range []func(){
			func() { beat(parts[0]) },
			func() { verify("order.placed") },
			func() { beat(parts[1]) },
		} {
			step()
			if m := mark(); m == nil || *m != 1 {
				t.Fatalf("step %d: mark %v; want 1, the round's start, while a part or a listed lane is missing", i+1, m)
			}
		}
		verify("order.paid")
		if m := mark(); m == nil || *m != 3 {
			t.Fatalf("every listed lane announced: mark %v; want 3, the round's end", m)
		}
	})
}
