// ledger.go: the consumer's durable repair ledger (sql/functions/ledger.sql): per divergent
// bucket, what was reported and requested, with cooldown, backoff and budget; heals delete rows.

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// LedgerPolicy is the ledger's storm bounds (invariant 9).
type LedgerPolicy struct {
	Cooldown    time.Duration // an unchanged divergence re-reports once per this
	BackoffBase time.Duration // a bucket's k-th request waits base × 2^(k-1)
	MaxAttempts int           // after this the backoff stays at its slowest rung
	// DryRun (report-only) climbs the ledger's dry-run ladder: the same decisions on the same
	// schedule, spending no ledger attempt.
	DryRun bool
}

// LedgerDecision is what the ledger says to do about one observed bucket.
type LedgerDecision struct {
	Tenant, EventType, StreamID, Reason string
	Report, Request                     bool
	Attempts                            int
	Settled                             bool // the repair budget is spent
}

// LedgerObserve records a comparison's differing buckets of origin and decides, per bucket,
// whether to report it and whether to request its repair (streamseal.ledger_observe).
func LedgerObserve(ctx context.Context, db Querier, origin string, diffs []BucketDiff, p LedgerPolicy, now time.Time) ([]LedgerDecision, error) {
	body, err := json.Marshal(diffs)
	if err != nil {
		return nil, fmt.Errorf("ledger observe: %w", err)
	}
	rows, err := db.Query(ctx, `
		select tenant, event_type, stream_id, reason, report, request, attempts, settled
		from streamseal.ledger_observe($1, $2::jsonb, make_interval(secs => $3), make_interval(secs => $4), $5, $6, $7)`,
		origin, body, p.Cooldown.Seconds(), p.BackoffBase.Seconds(), p.MaxAttempts, now, p.DryRun)
	if err != nil {
		return nil, classify("ledger observe", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[LedgerDecision])
	if err != nil {
		return nil, classify("ledger observe", err)
	}
	return out, nil
}

// Heal is one ledgered bucket proven healed, with its age from first sighting.
type Heal struct {
	Tenant, EventType, StreamID string
	Age                         time.Duration
}

// LedgerHealMatched heals the ledgered buckets of origin's eventTypes in the stream range
// (after, through] ("" is open) that diffs no longer names (streamseal.ledger_heal_matched: the
// heal rule is SQL's). With no diffs and no range it heals every ledgered bucket of the types.
// tenants (none: every tenant) narrows it to the tenants a page was asked for.
func LedgerHealMatched(ctx context.Context, db Querier, origin string, eventTypes []string, diffs []BucketDiff, after, through string, now time.Time, tenants ...string) ([]Heal, error) {
	if diffs == nil {
		diffs = []BucketDiff{}
	}
	body, err := json.Marshal(diffs)
	if err != nil {
		return nil, fmt.Errorf("ledger heal: %w", err)
	}
	rows, err := db.Query(ctx, `
		select tenant, event_type, stream_id, extract(epoch from heal_age)::float8
		from streamseal.ledger_heal_matched($1, $2, $3::jsonb, $4, $5, $6, $7)`,
		origin, eventTypes, body, textOrNull(after), textOrNull(through), now, tenantsOrNull(tenants))
	if err != nil {
		return nil, classify("ledger heal", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Heal, error) {
		var h Heal
		var seconds float64
		err := row.Scan(&h.Tenant, &h.EventType, &h.StreamID, &seconds)
		h.Age = time.Duration(seconds * float64(time.Second))
		return h, err
	})
	if err != nil {
		return nil, classify("ledger heal", err)
	}
	return out, nil
}

// BucketKey names one ledgered bucket.
type BucketKey struct {
	Tenant    string `json:"tenant"`
	EventType string `json:"event_type"`
	StreamID  string `json:"stream_id"`
}

// LedgerUnrequest gives back the attempt of buckets whose request a cap cut before it left
// (streamseal.ledger_unrequest), so they go out at the next audit instead of after a backoff;
// dryRun gives back on the dry-run ladder (report-only), as LedgerPolicy.DryRun climbed it.
func LedgerUnrequest(ctx context.Context, db Querier, origin string, keys []BucketKey, dryRun bool, now time.Time) error {
	body, err := json.Marshal(keys)
	if err != nil {
		return fmt.Errorf("ledger unrequest: %w", err)
	}
	if _, err := db.Exec(ctx, "select streamseal.ledger_unrequest($1, $2::jsonb, $3, $4)", origin, body, now, dryRun); err != nil {
		return classify("ledger unrequest", err)
	}
	return nil
}

// LedgerTotals is the ledger's backlog over every origin (streamseal.ledger_backlog).
type LedgerTotals struct {
	Unhealed, Exhausted int64
	OldestUnhealed      time.Duration
}

// LedgerBacklogTotal sums the backlog of every origin, for the gauges.
func LedgerBacklogTotal(ctx context.Context, db Querier) (LedgerTotals, error) {
	var t LedgerTotals
	var oldest float64
	if err := db.QueryRow(ctx, `
		select coalesce(sum(unhealed), 0)::bigint, coalesce(sum(exhausted), 0)::bigint,
		       coalesce(extract(epoch from max(oldest_age)), 0)::float8
		from streamseal.ledger_backlog()`).Scan(&t.Unhealed, &t.Exhausted, &oldest); err != nil {
		return LedgerTotals{}, classify("read ledger backlog", err)
	}
	t.OldestUnhealed = time.Duration(oldest * float64(time.Second))
	return t, nil
}

// LedgerAlarms is what of the ledger, over every origin, makes a service degraded (readiness).
type LedgerAlarms struct {
	AgedDeficits       int64 // deficit buckets unhealed since before the grace's start
	IdentityMismatches int64 // buckets whose events share ids with the origin's but differ
	LocalExtras        int64 // buckets holding events the origin does not have
}

// LedgerAlarmsCount counts the ledger's alarms: deficits first seen before before (younger
// ones may heal within a cycle), and every identity mismatch and local extra (no redelivery
// heals them, waiting does not either).
func LedgerAlarmsCount(ctx context.Context, db Querier, before time.Time) (LedgerAlarms, error) {
	var a LedgerAlarms
	if err := db.QueryRow(ctx, `
		select count(*) filter (where reason = 'deficit' and first_seen_at <= $1),
		       count(*) filter (where reason = 'identity_mismatch'),
		       count(*) filter (where reason = 'local_extra')
		from streamseal.repair_ledger`, before).Scan(&a.AgedDeficits, &a.IdentityMismatches, &a.LocalExtras); err != nil {
		return LedgerAlarms{}, classify("count ledger alarms", err)
	}
	return a, nil
}

// LedgerReasonCount is origin's unhealed buckets of one reason.
type LedgerReasonCount struct {
	Reason    string
	Unhealed  int
	Exhausted int
}

// LedgerCountsByReason counts origin's unhealed and exhausted buckets per reason (status).
func LedgerCountsByReason(ctx context.Context, db Querier, origin string) ([]LedgerReasonCount, error) {
	rows, err := db.Query(ctx, `
		select reason, count(*)::int, (count(*) filter (where exhausted_at is not null))::int
		from streamseal.repair_ledger where origin = $1 group by reason order by reason`, origin)
	if err != nil {
		return nil, classify("read ledger of "+origin, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[LedgerReasonCount])
	if err != nil {
		return nil, classify("read ledger of "+origin, err)
	}
	return out, nil
}

// tenantsOrNull is nil (SQL null: every tenant) for no tenants.
func tenantsOrNull(tenants []string) []string {
	if len(tenants) == 0 {
		return nil
	}
	return tenants
}
