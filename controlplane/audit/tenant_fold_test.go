package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/checkpointtest"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// TestTenantFolds proves the origin -> type -> tenant -> stream exchange over the real wire
// (invariant 8: a healthy audit costs O(event types), whatever the tenant count; invariant 14:
// a window certifies when every part of it compared equal, however many chunks carried it).
func TestTenantFolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		pool, origin *pgxpool.Pool
		toBilling    *natstest.Recorder // everything sent to billing: the origin's answers
	}

	// setup: "orders" grants billing types for every tenant and answers with maxDigests per
	// chunk; billing subscribes to them for every tenant and asks maxDigests per chunk.
	setup := func(t *testing.T, types []string, maxDigests int) (*audit.Auditor, *testBundle) {
		t.Helper()
		srv := natstest.Start(t)
		origin := dbtest.NewPool(t, "orders")
		if err := store.GrantsAdd(ctx, origin, "billing", types, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		_, ordersJS := srv.Connect(t, "orders")
		ordersControl := natstest.Control(t, ordersJS, "orders")
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "", types, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		checkpointtest.Verify(t, pool, "billing", checkpointtest.Heartbeat("orders", types[0], "t0000", 0, 0))
		_, billingJS := srv.Connect(t, "billing")
		settings := config.Defaults()
		settings.SettleWindow = 0
		a := &audit.Auditor{Pool: pool, JS: billingJS, Service: "billing", Config: settings, Logger: testrun.Logger(t),
			Limits: audit.Limits{MaxDigests: maxDigests}}
		control := natstest.Control(t, billingJS, "billing")
		a.Register(control)
		testrun.Go(t, "billing control endpoint", control.Run)
		(&audit.ManifestServer{Pool: origin, JS: ordersJS, Service: "orders", MaxDigests: maxDigests, Logger: a.Logger}).Register(ordersControl)
		testrun.Go(t, "orders control endpoint", ordersControl.Run)
		return a, &testBundle{pool: pool, origin: origin, toBilling: srv.Record(t, wire.ControlStream, wire.ControlFilters("billing")[0])}
	}

	// populate appends one event per (tenant, type) for tenants t0000.. at the origin and hands
	// billing every copy but those lost says.
	populate := func(t *testing.T, b *testBundle, tenants int, types []string, lost func(tenant string) bool) {
		t.Helper()
		var events []store.NewEvent
		for i := range tenants {
			for _, ty := range types {
				events = append(events, ownEvent(fmt.Sprintf("t%04d", i), fmt.Sprintf("s%04d-%s", i, ty), 1, ty))
			}
		}
		appendStamped(t, b.origin, events...)
		var copies []store.EventCopy
		for _, c := range ownLane(t, b.origin) {
			if lost == nil || !lost(c.Tenant) {
				copies = append(copies, c)
			}
		}
		ingest(t, b.pool, copies)
	}

	// answers returns every manifest answer chunk billing received so far, with its size.
	answers := func(t *testing.T, b *testBundle) (out []wire.ManifestAnswer, sizes []int) {
		t.Helper()
		msgs := b.toBilling.Messages()
		envs, _ := natstest.Envelopes(t, msgs)
		for i, env := range envs {
			var a wire.ManifestAnswer
			if env.Kind == wire.KindManifestAnswer && json.Unmarshal(env.Body, &a) == nil {
				out, sizes = append(out, a), append(sizes, len(msgs[i].Data))
			}
		}
		return out, sizes
	}

	// Invariants 8 and 14: 10 tenants x 2 types is 20 (tenant, type) pairs, far above 3 digests a
	// chunk; before the fold the type-level answer carried 20 digests in 7 chunks and the seal
	// never advanced. Now the healthy answer carries one digest per type, and the window seals.
	t.Run("SealsAboveMaxDigestsPairsWithOneDigestPerType", func(t *testing.T) {
		t.Parallel()
		types := eventTypes[:2]
		a, b := setup(t, types, 3)
		populate(t, b, 10, types, nil)
		findings, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		if f := findings[0]; !f.Sealed || f.SealedThrough != 21 || len(f.Divergent) != 0 {
			t.Fatalf("finding %+v; want the healthy window sealed through 21", f)
		}
		got, _ := answers(t, b)
		if len(got) != 1 || got[0].Level != wire.LevelFolds || len(got[0].Digests) != len(types) || got[0].Chunks != 1 {
			t.Fatalf("answers %+v; want one folds-level chunk carrying one digest per type (%d)", got, len(types))
		}
	})

	// Invariant 14 (certification across chunks): 5 types at 3 digests a chunk is a fold answer
	// of 2 chunks; every part compared equal, so the window seals. (Before: only a one-chunk
	// answer sealed.)
	t.Run("SealsAWindowWhoseAnswerTookSeveralChunks", func(t *testing.T) {
		t.Parallel()
		types := []string{"k.a", "k.b", "k.c", "k.d", "k.e"}
		a, b := setup(t, types, 3)
		populate(t, b, 4, types, nil)
		findings, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := answers(t, b)
		if len(got) != 2 || got[0].Chunks != 2 {
			t.Fatalf("answers %+v; want the fold answer in 2 chunks", got)
		}
		if f := findings[0]; !f.Sealed || f.SealedThrough != 21 {
			t.Fatalf("finding %+v; want the window sealed through 21 across both chunks", f)
		}
	})

	// Invariants 1 and 8: one lost event in one tenant among ten is found through the tenant
	// pages (type -> tenant) and named at stream level (tenant -> stream), wherever its tenant
	// sorts: first, middle, last; only the mismatched tenants are walked at stream level.
	for _, lostTenant := range []string{"t0000", "t0005", "t0009"} {
		t.Run("FindsDamageInOneTenantAmongMany/"+lostTenant, func(t *testing.T) {
			t.Parallel()
			types := eventTypes[:2]
			a, b := setup(t, types, 3)
			populate(t, b, 10, types, nil)
			if _, err := b.pool.Exec(ctx, "delete from streamseal.events where tenant = $1 and event_type = $2", lostTenant, types[1]); err != nil {
				t.Fatal(err)
			}
			findings, err := a.Run(ctx, audit.Scope{})
			if err != nil {
				t.Fatal(err)
			}
			f := findings[0]
			want := fmt.Sprintf("[{s%s-%s %s %s deficit 0 1}]", lostTenant[1:], types[1], lostTenant, types[1])
			if fmt.Sprint(f.Divergent) != want || f.Requests != 1 || f.Sealed {
				t.Fatalf("finding %+v; want divergent %s, one repair request, no seal", f, want)
			}
			got, _ := answers(t, b)
			for _, ans := range got {
				if ans.Level == wire.LevelStreams {
					for _, d := range ans.Digests {
						if d.Tenant != lostTenant {
							t.Fatalf("stream page holds tenant %s; want only the mismatched tenant %s walked", d.Tenant, lostTenant)
						}
					}
				}
			}
		})
	}
}

// TestTenantFolds_HealthyAnswerBytesAreFlatInTheTenantCount measures invariant 8: the healthy
// audit's answer bytes at 100 and at 10 000 (tenant, type) pairs (20 and 2 000 tenants x 5
// types), side by side in one run; the fold makes them equal up to the digits of the counts.
func TestTenantFolds_HealthyAnswerBytesAreFlatInTheTenantCount(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 10 000 events")
	}
	t.Parallel()
	ctx := context.Background()
	types := []string{"k.a", "k.b", "k.c", "k.d", "k.e"}
	measure := func(tenants int) int {
		srv := natstest.Start(t)
		origin := dbtest.NewPool(t, "orders")
		if err := store.GrantsAdd(ctx, origin, "billing", types, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		_, ordersJS := srv.Connect(t, "orders")
		ordersControl := natstest.Control(t, ordersJS, "orders")
		pool := dbtest.NewPool(t, "billing")
		if err := store.SubscriptionsAdd(ctx, pool, "", types, store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		checkpointtest.Verify(t, pool, "billing", checkpointtest.Heartbeat("orders", types[0], "t0000", 0, 0))
		_, billingJS := srv.Connect(t, "billing")
		settings := config.Defaults()
		settings.SettleWindow = 0
		a := &audit.Auditor{Pool: pool, JS: billingJS, Service: "billing", Config: settings, Logger: testrun.Logger(t)}
		control := natstest.Control(t, billingJS, "billing")
		a.Register(control)
		testrun.Go(t, "billing control endpoint", control.Run)
		(&audit.ManifestServer{Pool: origin, JS: ordersJS, Service: "orders", Logger: a.Logger}).Register(ordersControl)
		testrun.Go(t, "orders control endpoint", ordersControl.Run)
		rec := srv.Record(t, wire.ControlStream, wire.ControlFilters("billing")[0])
		var events []store.NewEvent
		for i := range tenants {
			for _, ty := range types {
				events = append(events, ownEvent(fmt.Sprintf("t%05d", i), fmt.Sprintf("s%05d-%s", i, ty), 1, ty))
			}
		}
		appendStamped(t, origin, events...)
		ingest(t, pool, ownLane(t, origin))
		findings, err := a.Run(ctx, audit.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		if !findings[0].Sealed {
			t.Fatalf("%d pairs: finding %+v; want the healthy window sealed", tenants*len(types), findings[0])
		}
		bytes := 0
		for _, m := range rec.Await(t, "the fold answer", func(m []natstest.Msg) bool { return len(m) >= 1 }) {
			bytes += len(m.Data)
		}
		return bytes
	}
	small, large := measure(20), measure(2000)
	t.Logf("healthy audit answer bytes: %d at 100 pairs, %d at 10000 pairs (flatness %.3f)", small, large, float64(large)/float64(small))
	if float64(large) > 1.5*float64(small) {
		t.Fatalf("healthy audit answer bytes %d at 10000 pairs vs %d at 100: want flat (<= 1.5x)", large, small)
	}
}
