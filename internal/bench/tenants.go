package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// TenantsOptions sizes the tenants benchmark: one lane whose tenant count grows through Tenants
// (each tenant one event of each of Types types), a healthy audit at each size.
type TenantsOptions struct {
	Tenants []int
	Types   int
}

// QuickTenants and FullTenants are the --quick and default sizes: 100 and 10 000 (tenant, type)
// pairs quick; 100, 10 000 and 100 000 tenants x 5 types in full.
var (
	QuickTenants = TenantsOptions{Tenants: []int{20, 2_000}, Types: 5}
	FullTenants  = TenantsOptions{Tenants: []int{100, 10_000, 100_000}, Types: 5}
)

// Tenants measures invariant 8 across tenants (issue 21): the wire bytes (requests and answers)
// of a healthy whole-history audit and of the windowed audit above the seal at each tenant count,
// whether the seal advanced at each, and at each size the bytes and time of the whole-history
// audit that finds one lost event in the tenant that sorts last (then its repair is waited for).
// RESULT: audit_bytes_flatness (healthy bytes at the largest size / at the smallest, target
// <= 1.5), seal_advanced (1 when every size sealed), damaged_bytes and damaged_seconds (the
// damage audit at the largest size), damaged_bytes_flatness (its bytes at the largest size / at
// the smallest: the drill costs the damage, not the tenant count), damaged_found (1 when every
// size's one audit found the damaged tenant's bucket); and the checkpoint figures of issue 21
// item 3 at each size (tenantsCheckpoints): checkpoint_bytes_flatness, max_live_delay_intervals.
func Tenants(ctx context.Context, newDB harness.NewDatabase, opts TenantsOptions, out io.Writer) error {
	load := watchLoad(out)
	h, err := harness.New(ctx, newDB, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer h.Close()
	settings := config.Defaults()
	settings.CheckpointInterval = time.Hour
	settings.MaintenanceInterval = time.Hour
	settings.SettleWindow = time.Millisecond
	var wireBytes atomic.Int64
	tap := func(s *harness.Service) {
		s.Control.Tap = func(_ string, data []byte) {
			if env, _, err := wire.Decode(data, 0); err == nil && (env.Kind == wire.KindManifestAnswer || env.Kind == wire.KindManifestRequest) {
				wireBytes.Add(int64(len(data)))
			}
		}
	}
	types := make([]string, opts.Types)
	for i := range types {
		types[i] = fmt.Sprintf("bench.t%02d", i)
	}
	orders, err := h.Start(ctx, "orders", harness.Options{Settings: settings, NoRelay: true, Grants: map[string][]string{"billing": types}}, tap)
	if err != nil {
		return err
	}
	billing, err := h.Start(ctx, "billing", harness.Options{Settings: settings, Consumes: types}, tap)
	if err != nil {
		return err
	}
	// No periodic audit may land among the measured ones (see auditGrowth).
	if err := billing.River.Stop(ctx); err != nil {
		return err
	}
	if _, err := billing.Pool.Exec(ctx, "select streamseal.observe_origin('orders', $1, 3600, 0, 0)", wire.ControlSubjectFrom("orders", "billing")); err != nil {
		return err
	}
	fmt.Fprintf(out, "tenants benchmark: one lane, %d event types, one event per (tenant, type); healthy audits at %v tenants\n", opts.Types, opts.Tenants)
	runAudit := func(full bool) (audit.Finding, int64, time.Duration, error) {
		wireBytes.Store(0)
		start := time.Now()
		findings, err := billing.Auditor.Run(ctx, audit.Scope{Full: full})
		if err != nil {
			return audit.Finding{}, 0, 0, err
		}
		if len(findings) != 1 {
			return audit.Finding{}, 0, 0, fmt.Errorf("audited %d origins, want 1", len(findings))
		}
		return findings[0], wireBytes.Load(), time.Since(start), nil
	}
	var healthy []int64
	var damaged []damage
	sealed := 1
	loaded := 0
	for _, tenants := range opts.Tenants {
		if err := loadTenants(ctx, orders.Pool, billing.Pool, loaded*opts.Types, tenants*opts.Types, opts.Types); err != nil {
			return err
		}
		loaded = tenants
		whole, wholeBytes, wholeTook, err := runAudit(true)
		if err != nil {
			return err
		}
		steady, steadyBytes, steadyTook, err := runAudit(false)
		if err != nil {
			return err
		}
		if !whole.Sealed || len(whole.Divergent) != 0 {
			sealed = 0
		}
		fmt.Fprintf(out, "%d tenants (%d pairs): healthy whole-history audit %d bytes, %s, sealed=%v; windowed %d bytes, %s, sealed=%v\n",
			tenants, tenants*opts.Types, wholeBytes, wholeTook.Round(time.Millisecond), whole.Sealed, steadyBytes,
			steadyTook.Round(time.Millisecond), steady.Sealed)
		healthy = append(healthy, wholeBytes)
		d, err := auditOneDamagedTenant(ctx, billing.Pool, tenants, opts.Types, types[len(types)-1], runAudit)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%d tenants: one event lost in tenant %s (sorts last): the audit finding it %d bytes, %s, divergent buckets found %d, repaired in %s\n",
			tenants, d.tenant, d.bytes, d.took.Round(time.Millisecond), d.found, d.repaired.Round(time.Millisecond))
		damaged = append(damaged, d)
	}
	flatness := float64(healthy[len(healthy)-1]) / float64(healthy[0])
	first, last := damaged[0], damaged[len(damaged)-1]
	found := 1
	for _, d := range damaged {
		if d.found != 1 {
			found = 0
		}
	}
	checkpointFlatness, maxLiveDelay, err := tenantsCheckpoints(ctx, newDB, opts, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "RESULT tenants audit_bytes_flatness=%.3f checkpoint_bytes_flatness=%.3f seal_advanced=%d max_live_delay_intervals=%.3f healthy_bytes_small=%d healthy_bytes_large=%d damaged_bytes=%d damaged_bytes_small=%d damaged_bytes_flatness=%.3f damaged_seconds=%.3f damaged_found=%d busy=%d\n",
		flatness, checkpointFlatness, sealed, maxLiveDelay, healthy[0], healthy[len(healthy)-1], last.bytes, first.bytes, float64(last.bytes)/float64(first.bytes),
		last.took.Seconds(), found, load.End())
	return nil
}

// loadTenants loads pairs (from, to] into the origin and identical copies into the consumer as
// settled, relayed history (pair p: tenant p / types, type p % types, one event), the write-path
// triggers off as loadBoth does, then rebuilds digests and closes epochs on both sides.
func loadTenants(ctx context.Context, origin, consumer *pgxpool.Pool, from, to, types int) error {
	bounds := strings.NewReplacer("$1", strconv.Itoa(from), "$2", strconv.Itoa(to), "$T", strconv.Itoa(types))
	history := `select ('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid as event_id, 'orders' as origin,
		        g as origin_seq, 1 as type_seq, 't' || lpad(((g - 1) / $T)::text, 7, '0') as tenant,
		        't' || lpad(((g - 1) / $T)::text, 7, '0') || '-' || ((g - 1) % $T) as stream_id, 1 as stream_version,
		        'bench.t' || lpad(((g - 1) % $T)::text, 2, '0') as event_type, '\x7b7d'::bytea as payload,
		        now() - interval '2 hours' as stored_at
		 from generate_series($1 + 1, $2) g`
	originSteps := []string{
		"alter table streamseal.events disable trigger user", ownHistory(history),
		"alter table streamseal.events enable trigger user",
		"update streamseal.stamp_state set last_origin_seq = $2",
		"update streamseal.relay_state set published_through = $2",
		"update streamseal.checkpoint_state set published_through = $2 + 1",
	}
	consumerSteps := []string{"alter table streamseal.events disable trigger user", copyHistory(history), "alter table streamseal.events enable trigger user"}
	for pool, steps := range map[*pgxpool.Pool][]string{origin: originSteps, consumer: consumerSteps} {
		for _, step := range steps {
			if _, err := pool.Exec(ctx, bounds.Replace(step)); err != nil {
				return fmt.Errorf("load pairs %d..%d: %w", from, to, err)
			}
		}
		if err := finishBulkLoad(ctx, pool); err != nil {
			return err
		}
	}
	return nil
}

// damage is one size's damage case: the audit that found one lost event, and its repair.
type damage struct {
	tenant         string
	bytes          int64
	took, repaired time.Duration
	found          int
}

// auditOneDamagedTenant removes, from the consumer's copy, the one event of eventType of the
// tenant that sorts last of tenants, runs one whole-history audit (run) and waits for the repair
// it requested to restore the copy (the next size starts whole).
func auditOneDamagedTenant(ctx context.Context, consumer *pgxpool.Pool, tenants, types int, eventType string,
	run func(full bool) (audit.Finding, int64, time.Duration, error)) (damage, error) {
	d := damage{tenant: fmt.Sprintf("t%07d", tenants-1)}
	if _, err := consumer.Exec(ctx, "delete from streamseal.events where origin = 'orders' and tenant = $1 and event_type = $2", d.tenant, eventType); err != nil {
		return d, err
	}
	f, bytes, took, err := run(true)
	if err != nil {
		return d, err
	}
	d.bytes, d.took = bytes, took
	for _, b := range f.Divergent {
		if b.Tenant == d.tenant {
			d.found++
		}
	}
	started := time.Now()
	for failsafe := time.Now().Add(2 * time.Minute); ; {
		var n int
		if err := consumer.QueryRow(ctx, "select count(*) from streamseal.events where origin = 'orders'").Scan(&n); err != nil {
			return d, err
		}
		if n == tenants*types {
			break
		}
		if time.Now().After(failsafe) {
			return d, fmt.Errorf("the repair of tenant %s did not arrive (%d of %d copies held)", d.tenant, n, tenants*types)
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.repaired = time.Since(started)
	return d, nil
}
