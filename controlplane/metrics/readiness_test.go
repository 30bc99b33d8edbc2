package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/checkpointtest"
	"github.com/streamseal/streamseal/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// readinessBundle is one consumer ("billing", consuming order.placed from "orders") on its own
// migrated database, its exporter and a server for its /readyz.
type readinessBundle struct {
	pool     *pgxpool.Pool
	exporter *metrics.Exporter
	url      string
}

func setupReadiness(t *testing.T, grace time.Duration) *readinessBundle {
	t.Helper()
	pool := dbtest.NewPool(t, "billing")
	if err := store.SubscriptionsAdd(context.Background(), pool, "", []string{"order.placed"}, store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	e := metrics.New(pool, nil, metrics.Sources{})
	e.Grace = grace
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	return &readinessBundle{pool: pool, exporter: e, url: srv.URL}
}

// readiness is what /readyz answers after the maintenance cycle's reading (Refresh).
func (b *readinessBundle) readiness(t *testing.T) string {
	t.Helper()
	if err := b.exporter.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, b.url+"/readyz")
	if code != http.StatusOK {
		t.Fatalf("/readyz = %d %q with the database up", code, body)
	}
	return body
}

func (b *readinessBundle) requireReady(t *testing.T, when string) {
	t.Helper()
	if body := b.readiness(t); strings.TrimSpace(body) != "ready" {
		t.Fatalf("%s /readyz = %q, want ready", when, body)
	}
}

func (b *readinessBundle) requireDegraded(t *testing.T, when, reason string) {
	t.Helper()
	if body := b.readiness(t); !strings.HasPrefix(body, "degraded: ") || !strings.Contains(body, reason) {
		t.Fatalf("%s /readyz = %q, want degraded naming %q", when, body, reason)
	}
}

// observeBucket has the ledger record one differing bucket of orders' order.placed stream s1
// with reason, as an audit does (folds that say that reason: fewer events, more, or as many
// with other identities).
func observeBucket(t *testing.T, pool *pgxpool.Pool, reason string) {
	t.Helper()
	diff := store.BucketDiff{StreamID: "s1", Tenant: "acme", EventType: "order.placed", LocalX0: 1, LocalX1: 1, LocalN: 2,
		OriginX0: 2, OriginX1: 2, OriginN: 2, Reason: reason}
	switch reason {
	case "deficit":
		diff.LocalN = 1
	case "local_extra":
		diff.LocalN = 3
	}
	policy := store.LedgerPolicy{Cooldown: time.Hour, BackoffBase: time.Hour, MaxAttempts: 8}
	if _, err := store.LedgerObserve(context.Background(), pool, "orders", []store.BucketDiff{diff}, policy, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// healBuckets heals every ledgered bucket of orders' order.placed, as a matching audit does.
func healBuckets(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := store.LedgerHealMatched(context.Background(), pool, "orders", []string{"order.placed"}, nil, "", "", time.Now()); err != nil {
		t.Fatal(err)
	}
}

// Each reason readiness knows flips /readyz to "degraded" naming it, and back to "ready" when it
// clears. The grace is 0 here, so a deficit or a confirmed gap counts at its first reading.
func TestReadyz_EachReasonDegradesAndClears(t *testing.T) {
	t.Parallel()

	for _, c := range []struct{ reason, says string }{
		{"deficit", "buckets unhealed past the readiness grace"},
		{"identity_mismatch", "buckets hold an identity mismatch"},
		{"local_extra", "buckets hold local extras"},
	} {
		t.Run("BucketWith_"+c.reason, func(t *testing.T) {
			t.Parallel()
			b := setupReadiness(t, 0)
			b.requireReady(t, "with an empty ledger")
			observeBucket(t, b.pool, c.reason)
			b.requireDegraded(t, "with a "+c.reason+" bucket", "1 "+c.says)
			healBuckets(t, b.pool)
			b.requireReady(t, "after the bucket healed")
		})
	}

	t.Run("ConfirmedGap", func(t *testing.T) {
		t.Parallel()
		b := setupReadiness(t, 0)
		// type_seqs 1..3 announced and none held: suspected at the first checkpoint, confirmed at
		// the next.
		checkpointtest.Verify(t, b.pool, "billing", checkpointtest.Announcing("orders", "order.placed", 0, 10, "acme", 1, 3))
		b.requireReady(t, "with the hole only suspected")
		checkpointtest.Verify(t, b.pool, "billing", checkpointtest.Heartbeat("orders", "order.placed", "acme", 10, 20))
		b.requireDegraded(t, "with the hole confirmed", "1 lanes hold confirmed, unrepaired gaps")
		if err := store.LaneAcceptLoss(context.Background(), b.pool, "orders", "acme", "order.placed", [][2]int64{{1, 4}}, "absent"); err != nil {
			t.Fatal(err)
		}
		b.requireReady(t, "after the loss was accepted")
	})

	t.Run("SilentOrigin", func(t *testing.T) {
		t.Parallel()
		b := setupReadiness(t, 0)
		ctx := context.Background()
		sighting := store.OriginSighting{Origin: "orders", Control: "orders.control", IntervalS: 60, To: 10}
		if _, err := store.OriginObserve(ctx, b.pool, sighting); err != nil {
			t.Fatal(err)
		}
		b.requireReady(t, "with the origin just heard")
		requireSilentGauge(t, b.exporter, "orders", 0)
		// An hour without a checkpoint, then the maintenance cycle's liveness check marks it.
		if _, err := b.pool.Exec(ctx, "update streamseal.known_origins set last_checkpoint_at = now() - interval '1 hour'"); err != nil {
			t.Fatal(err)
		}
		if _, err := store.OriginsSilent(ctx, b.pool, 3); err != nil {
			t.Fatal(err)
		}
		b.requireDegraded(t, "with the origin silent", "origins silent: orders")
		requireSilentGauge(t, b.exporter, "orders", 1)
		sighting.To = 20
		if _, err := store.OriginObserve(ctx, b.pool, sighting); err != nil {
			t.Fatal(err)
		}
		b.requireReady(t, "with the origin heard again")
		requireSilentGauge(t, b.exporter, "orders", 0)
	})
}

// The grace keeps a deficit or a confirmed gap that may heal within a cycle from flipping
// readiness: younger than the grace they are not reasons; identity mismatches and local extras
// never heal by waiting and count at once.
func TestReadyz_GraceHoldsBackYoungDeficitsAndGapsOnly(t *testing.T) {
	t.Parallel()
	b := setupReadiness(t, time.Hour)
	observeBucket(t, b.pool, "deficit")
	checkpointtest.Verify(t, b.pool, "billing", checkpointtest.Announcing("orders", "order.placed", 0, 10, "acme", 1, 3))
	checkpointtest.Verify(t, b.pool, "billing", checkpointtest.Heartbeat("orders", "order.placed", "acme", 10, 20))
	b.requireReady(t, "with a deficit and a confirmed gap younger than the grace")
	// An hour and a minute later (the exporter's clock), both are past it.
	b.exporter.Now = func() time.Time { return time.Now().Add(61 * time.Minute) }
	b.requireDegraded(t, "with both past the grace", "1 buckets unhealed past the readiness grace")
	b.requireDegraded(t, "with both past the grace", "1 lanes hold confirmed, unrepaired gaps")
}

func requireSilentGauge(t *testing.T, e *metrics.Exporter, origin string, want float64) {
	t.Helper()
	families, err := e.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "streamseal_origin_silent" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "origin" && l.GetValue() == origin {
					if got := m.GetGauge().GetValue(); got != want {
						t.Fatalf("streamseal_origin_silent{origin=%q} = %v, want %v", origin, got, want)
					}
					return
				}
			}
		}
	}
	t.Fatalf("streamseal_origin_silent{origin=%q} is not exported", origin)
}
