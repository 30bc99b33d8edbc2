// repair.go: acting on what the ledger decided: report divergences, send the deficit repairs
// batched per (tenant, type) within the per-audit cap, give back the attempts the cap cut, and
// record the heals.

package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// ledgerPolicy is the ledger's storm bounds from the configuration; report-only climbs the
// ledger's dry-run ladder (same schedule, no attempt spent).
func (a *Auditor) ledgerPolicy() store.LedgerPolicy {
	return store.LedgerPolicy{Cooldown: a.Config.DivergenceReportCooldown, BackoffBase: a.Config.RepairRetryAfter,
		MaxAttempts: a.Config.MaxRepairAttemptsPerBucket, DryRun: a.Config.RepairMode == config.ReportOnly}
}

func (a *Auditor) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// act hands divergent buckets to the ledger and acts on its decisions: alarms for what it says
// to report, deficit repairs batched per (tenant, type) for what it says to request, capped; in
// report-only mode the same requests are recorded and none is sent. Report-only climbs the
// ledger's dry-run ladder (ledgerPolicy): it records each request when auto-repair would send
// it, on the same backoff, and spends no ledger attempt.
func (a *Auditor) act(ctx context.Context, origin string, from, to int64, decisions []store.LedgerDecision) (int, error) {
	batches := map[[2]string][]string{}
	var keys [][2]string
	for _, d := range decisions {
		if d.Report {
			level := slog.LevelWarn
			if d.Settled {
				level = slog.LevelError
			}
			a.Logger.Log(ctx, level, "audit: divergence", "origin", origin, "tenant", d.Tenant, "type", d.EventType,
				"stream", d.StreamID, "reason", d.Reason, "attempts", d.Attempts, "budget_spent", d.Settled)
		}
		if d.Request {
			k := [2]string{d.Tenant, d.EventType}
			if _, ok := batches[k]; !ok {
				keys = append(keys, k)
			}
			batches[k] = append(batches[k], d.StreamID)
		}
	}
	sent := 0
	for i, k := range keys {
		if sent >= a.Limits.MaxRequests {
			a.Logger.Warn("audit: repair cap reached; the rest waits for the next audit", "origin", origin, "cap", a.Limits.MaxRequests)
			if err := a.unrequest(ctx, origin, keys[i:], batches); err != nil {
				return sent, err
			}
			break
		}
		f, t := from, to
		a.Metrics.RepairRequested("audit", origin)
		req := wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: []string{k[0]}, Types: []string{k[1]},
			Streams: batches[k], FromSeq: &f, ToSeq: &t, MaxEvents: a.Config.Redelivery.MaxEventsPerRequest}
		sent++
		if err := a.request(ctx, origin, req); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// request records one repair request and sends it, or, in report-only mode, records it as the
// request auto-repair would send, byte for byte, and sends nothing.
func (a *Auditor) request(ctx context.Context, origin string, req wire.RedeliveryRequest) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if a.Config.RepairMode == config.ReportOnly {
		a.Logger.Warn("audit: would request repair (report-only)", "origin", origin, "request", string(body))
		return store.AuditRequestRecord(ctx, a.Pool, origin, store.ActionWouldRequest, body)
	}
	if err := store.AuditRequestRecord(ctx, a.Pool, origin, store.ActionRequested, body); err != nil {
		return err
	}
	return redelivery.Send(ctx, a.Pool, a.JS, a.Service, origin, store.SourceAudit, req, uuid.Nil)
}

// unrequest gives back the ledger attempts of the batches the cap cut, so they go out at the next
// audit rather than after a backoff for requests that never left.
func (a *Auditor) unrequest(ctx context.Context, origin string, cut [][2]string, batches map[[2]string][]string) error {
	var keys []store.BucketKey
	for _, k := range cut {
		for _, stream := range batches[k] {
			keys = append(keys, store.BucketKey{Tenant: k[0], EventType: k[1], StreamID: stream})
		}
	}
	return store.LedgerUnrequest(ctx, a.Pool, origin, keys, a.ledgerPolicy().DryRun, a.now())
}

// heal forgets the ledgered buckets of origin's types in the stream range (after, through] that
// diffs no longer names (SQL's rule: ledger_heal_matched), and logs and observes each heal's age
// (first sighting to proven heal). With no diffs and no range: a window matched whole at type
// level, so every ledgered bucket of those types heals.
func (a *Auditor) heal(ctx context.Context, db store.Querier, origin string, types []string, diffs []store.BucketDiff, after, through string, tenants ...string) error {
	heals, err := store.LedgerHealMatched(ctx, db, origin, types, diffs, after, through, a.now(), tenants...)
	if err != nil {
		return err
	}
	for _, h := range heals {
		a.Logger.Info("audit: divergence healed", "origin", origin, "tenant", h.Tenant, "type", h.EventType, "stream", h.StreamID,
			"heal_seconds", h.Age.Seconds())
		a.Metrics.BucketHealed(h.Age.Seconds())
	}
	return nil
}
