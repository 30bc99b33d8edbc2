package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// ScatterOptions sizes the damaged sweep of the audit benchmark: a store of Streams streams
// (EventsPerStream events each; stream k holds only type k mod Types, as an aggregate's events
// are of its kind), and for each loss size that many copies deleted at the consumer, scattered
// over the whole store, below every lane floor (only the audit can see them).
type ScatterOptions struct {
	Streams, EventsPerStream, Types int
	Losses                          []int
	// MaxRounds bounds the audit rounds of one loss size: past it the size is reported as not
	// converged (a finding, not an error).
	MaxRounds int
	// The caps; zero means the product's default (config.Defaults, audit.MaxPagesDefault).
	MaxDrillDownTypes, MaxPages, MaxDigests, MaxRequests, MaxEventsPerRequest int
}

// QuickScatter and FullScatter are the --quick and default sizes of the damaged sweep.
var (
	QuickScatter = ScatterOptions{Streams: 5_000, EventsPerStream: 10, Types: 20, Losses: []int{10, 100, 1000}, MaxRounds: 30}
	FullScatter  = ScatterOptions{Streams: 50_000, EventsPerStream: 10, Types: 20, Losses: []int{10, 100, 1000, 10_000}, MaxRounds: 30}
)

// ScatterRound is one audit round of the sweep: what the audit saw and did, and what was left
// once the repairs it requested had landed.
type ScatterRound struct {
	Mismatched int // types whose type-level digests differed when the audit ran
	Drilled    int // ... of which this audit compared stream pages (the type cap cuts the rest)
	PagesLeft  int // ... of which the page budget stopped before the last page
	Unresolved int // types the audit reported unresolved
	Pages      int // stream-level pages compared
	Buckets    int // divergent stream buckets found
	Requests   int // repair requests sent (the per-audit cap)
	FollowUps  int // requests for the rest of truncated answers (the per-request event cap)
	Differing  int // types whose digests still differed after the repairs landed
}

// ScatterResult is one loss size's convergence.
type ScatterResult struct {
	Losses, StreamsHit int
	Rounds             int // audit rounds until the digests matched (MaxRounds+ when not converged)
	Converged          bool
	Took               time.Duration
	ManifestBytes      int64 // manifest requests and answers
	RepairBytes        int64 // redelivery requests, bundles and summaries
	PerRound           []ScatterRound
}

// AuditScatter runs the damaged sweep: for each loss size, audit rounds (one audit, then a wait
// until every repair request it caused has been answered) until the consumer's digests equal the
// origin's. A round that ends with digests differing must have reported unresolved types
// (invariant 14); one that did not is returned as an error.
func AuditScatter(ctx context.Context, newDB harness.NewDatabase, opts ScatterOptions, out io.Writer) ([]ScatterResult, error) {
	h, err := harness.New(ctx, newDB, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	defer h.Close()
	settings := config.Defaults()
	settings.CheckpointInterval = time.Hour
	settings.MaintenanceInterval = time.Hour
	settings.AuditInterval = 30 * 24 * time.Hour
	settings.SettleWindow = time.Millisecond
	if opts.MaxDrillDownTypes > 0 {
		settings.MaxDrillDownTypesPerAudit = opts.MaxDrillDownTypes
	}
	if opts.MaxDigests > 0 {
		settings.MaxDigestsPerManifest = opts.MaxDigests
	}
	if opts.MaxRequests > 0 {
		settings.MaxAutoRepairRequestsPerAudit = opts.MaxRequests
	}
	if opts.MaxEventsPerRequest > 0 {
		settings.Redelivery.MaxEventsPerRequest = opts.MaxEventsPerRequest
	}
	var manifestBytes, repairBytes atomic.Int64
	tap := func(s *harness.Service) {
		s.Control.Tap = func(_ string, data []byte) {
			env, _, err := wire.Decode(data, 0)
			if err != nil {
				return
			}
			switch env.Kind {
			case wire.KindManifestRequest, wire.KindManifestAnswer:
				manifestBytes.Add(int64(len(data)))
			case wire.KindRedeliveryRequest, wire.KindRedeliveryBundle, wire.KindRedeliverySummary:
				repairBytes.Add(int64(len(data)))
			}
		}
	}
	types := make([]string, opts.Types)
	for i := range types {
		types[i] = fmt.Sprintf("bench.t%02d", i)
	}
	const originName, consumerName = "scatter-orders", "scatter-billing"
	origin, err := h.Start(ctx, originName, harness.Options{Settings: settings, NoRelay: true,
		Grants: map[string][]string{consumerName: types}}, tap)
	if err != nil {
		return nil, err
	}
	var summaries atomic.Int64
	var pages atomic.Int64
	consumer, err := h.Start(ctx, consumerName, harness.Options{Settings: settings, Consumes: types}, func(s *harness.Service) {
		tap(s)
		// Called after a truncated answer's follow-up is recorded: once the summaries seen
		// equal the requests recorded, every request and follow-up has been answered.
		s.Repair.OnSummary = func(wire.RedeliverySummary) { summaries.Add(1) }
		s.Auditor.OnProgress = func(p audit.Progress) { pages.Store(int64(p.Pages)) }
		if opts.MaxPages > 0 {
			s.Auditor.Limits.MaxPages = opts.MaxPages
		}
	})
	if err != nil {
		return nil, err
	}
	// The rounds are this benchmark's: the periodic startup audit (30 s plus jitter after start)
	// would interleave with them, so the consumer's job runner stops (no checkpoint, maintenance
	// or audit job is part of what is measured).
	if err := consumer.River.Stop(ctx); err != nil {
		return nil, err
	}
	if _, err := consumer.Pool.Exec(ctx, "select streamseal.observe_origin($1, $2, 3600, 0, 0)", originName, wire.ControlSubjectFrom(originName, consumerName)); err != nil {
		return nil, err
	}
	events := int64(opts.Streams) * int64(opts.EventsPerStream)
	if err := loadBoth(ctx, originName, origin.Pool, consumer.Pool, 0, events, opts.Types, opts.Streams); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "damaged sweep: %d events over %d streams (%d types); losses scattered over the whole store, each size audited until the digests match\n",
		events, opts.Streams, opts.Types)
	fmt.Fprintf(out, "caps: %d drill-down types, %d pages of %d digests per audit, %d repair requests per audit, %d events per request\n",
		settings.MaxDrillDownTypesPerAudit, cmp.Or(opts.MaxPages, audit.MaxPagesDefault), settings.MaxDigestsPerManifest,
		settings.MaxAutoRepairRequestsPerAudit, settings.Redelivery.MaxEventsPerRequest)

	var results []ScatterResult
	for i, losses := range opts.Losses {
		// Each size starts from the first stream (the drill-down cursors of the last size are
		// forgotten), so sizes are comparable.
		if _, err := consumer.Pool.Exec(ctx, "delete from streamseal.audit_cursors"); err != nil {
			return nil, err
		}
		r := ScatterResult{Losses: losses}
		if err := consumer.Pool.QueryRow(ctx, `
			with gone as (
				delete from streamseal.events where event_id in (
					select event_id from streamseal.events where origin = $1
					order by md5(event_id::text || $3) limit $2)
				returning stream_id)
			select count(distinct stream_id) from gone`, originName, losses, fmt.Sprint(i)).Scan(&r.StreamsHit); err != nil {
			return nil, err
		}
		manifestBytes.Store(0)
		repairBytes.Store(0)
		start := time.Now()
		for r.Rounds < opts.MaxRounds {
			r.Rounds++
			pages.Store(0)
			followUps := consumer.Repair.FollowUps()
			findings, err := consumer.Auditor.Run(ctx, audit.Scope{Full: true})
			if err != nil {
				return nil, err
			}
			if len(findings) != 1 || findings[0].Skipped != "" {
				return nil, fmt.Errorf("round %d audited %+v, want one origin", r.Rounds, findings)
			}
			f := findings[0]
			if err := repairsLanded(ctx, consumer.Pool, &summaries); err != nil {
				return nil, err
			}
			round := ScatterRound{Mismatched: len(f.Unresolved), Unresolved: len(f.Unresolved), Pages: int(pages.Load()),
				Buckets: len(f.Divergent), Requests: f.Requests, FollowUps: int(consumer.Repair.FollowUps() - followUps)}
			for _, u := range f.Unresolved {
				if u.Drilled {
					round.Drilled++
				}
				if u.ResumeAfter != "" {
					round.PagesLeft++
				}
			}
			if round.Differing, err = typesDiffering(ctx, originName, origin.Pool, consumer.Pool); err != nil {
				return nil, err
			}
			r.PerRound = append(r.PerRound, round)
			if round.Differing == 0 {
				r.Converged = true
				break
			}
			if len(f.Unresolved) == 0 {
				return nil, fmt.Errorf("%d losses, round %d: the audit reported all-clear (no unresolved type) while %d types' digests differ",
					losses, r.Rounds, round.Differing)
			}
		}
		r.Took = time.Since(start)
		r.ManifestBytes, r.RepairBytes = manifestBytes.Load(), repairBytes.Load()
		if r.Converged {
			// The proof round (not counted): the audit after convergence reports all-clear and
			// heals the repair ledger. Without it the ledger keeps each repaired bucket's last
			// signature and backoff, and a later size that loses the same event again looks
			// like the same unhealed bucket, held until the backoff (5 min) expires: measured,
			// 14 buckets of the 10 000 size stuck behind the 1000 size's rows.
			findings, err := consumer.Auditor.Run(ctx, audit.Scope{Full: true})
			if err != nil {
				return nil, err
			}
			var ledgered int
			if err := consumer.Pool.QueryRow(ctx, "select count(*) from streamseal.repair_ledger").Scan(&ledgered); err != nil {
				return nil, err
			}
			if len(findings) != 1 || len(findings[0].Unresolved) != 0 || len(findings[0].Divergent) != 0 || ledgered != 0 {
				return nil, fmt.Errorf("%d losses: the audit after convergence found %+v with %d ledger rows left; want all-clear and an empty ledger",
					losses, findings, ledgered)
			}
		}
		results = append(results, r)
		fmt.Fprintf(out, "  %d losses (%d streams): rounds %s\n", losses, r.StreamsHit, roundsText(r))
		if !r.Converged {
			if err := writeResidue(ctx, out, originName, origin.Pool, consumer.Pool); err != nil {
				return nil, err
			}
		}
	}
	writeScatterTable(out, results)
	// The baseline is the smallest size of the same run: growth with the damage, not the store.
	if first, last := results[0], results[len(results)-1]; len(results) > 1 {
		fmt.Fprintf(out, "from %d to %d losses (%.0fx the damage, same store): wire bytes %.1fx (manifest %.1fx, repair %.1fx), rounds %d -> %d\n",
			first.Losses, last.Losses, float64(last.Losses)/float64(first.Losses),
			float64(last.ManifestBytes+last.RepairBytes)/float64(first.ManifestBytes+first.RepairBytes),
			float64(last.ManifestBytes)/float64(first.ManifestBytes), float64(last.RepairBytes)/float64(first.RepairBytes),
			first.Rounds, last.Rounds)
	}
	return results, nil
}

// repairsLanded waits until every redelivery request the consumer recorded (audit requests and
// the follow-ups of truncated answers) has had its summary handled: an origin sends a request's
// summary after its last bundle, and the control endpoint handles them in order.
func repairsLanded(ctx context.Context, consumer *pgxpool.Pool, summaries *atomic.Int64) error {
	return waitUntil(ctx, func() (bool, error) {
		var sent int64
		err := consumer.QueryRow(ctx, "select count(*) from streamseal.sent_requests").Scan(&sent)
		return summaries.Load() >= sent, err
	})
}

// typesDiffering counts the event types whose digests (the fold of every stream bucket of the
// origin's events) differ between the origin and the consumer.
func typesDiffering(ctx context.Context, originName string, origin, consumer *pgxpool.Pool) (int, error) {
	const q = `select coalesce(string_agg(event_type || ':' || x0 || ',' || x1 || ',' || n, ' ' order by event_type), '')
		from (select event_type, bit_xor(x0) x0, bit_xor(x1) x1, sum(n) n from streamseal.stream_digests
		      where origin = $1 group by event_type) d`
	var a, b string
	if err := origin.QueryRow(ctx, q, originName).Scan(&a); err != nil {
		return 0, err
	}
	if err := consumer.QueryRow(ctx, q, originName).Scan(&b); err != nil {
		return 0, err
	}
	left := map[string]bool{}
	for _, d := range strings.Fields(a) {
		left[d] = true
	}
	differing := 0
	for _, d := range strings.Fields(b) {
		if !left[d] {
			differing++
		}
		delete(left, d)
	}
	return max(differing, len(left)), nil
}

// roundsText is one line per size: each round's mismatched types (drilled, pages left),
// pages, divergent buckets, requests (+follow-ups) and the types still differing after it.
func roundsText(r ScatterResult) string {
	var b strings.Builder
	for i, rd := range r.PerRound {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d: %d types (%d drilled, %d left) %dp %db %dr+%df ->%d", i+1, rd.Mismatched, rd.Drilled, rd.PagesLeft,
			rd.Pages, rd.Buckets, rd.Requests, rd.FollowUps, rd.Differing)
	}
	return b.String()
}

func writeScatterTable(out io.Writer, results []ScatterResult) {
	fmt.Fprintf(out, "| losses | streams hit | audit rounds | seconds | manifest bytes | repair bytes | wire bytes | bytes per loss |\n")
	fmt.Fprintf(out, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range results {
		rounds := fmt.Sprint(r.Rounds)
		if !r.Converged {
			rounds = fmt.Sprintf("> %d (not converged)", r.Rounds)
		}
		total := r.ManifestBytes + r.RepairBytes
		fmt.Fprintf(out, "| %d | %d | %s | %.1f | %d | %d | %d | %.0f |\n", r.Losses, r.StreamsHit, rounds, r.Took.Seconds(),
			r.ManifestBytes, r.RepairBytes, total, float64(total)/float64(r.Losses))
	}
}

// scatterFigures are the RESULT line's, from the largest size: "scatter_rounds_<size>=<rounds>"
// (-1 when it did not converge; the full run's size is 10k) and its wire bytes per loss.
func scatterFigures(results []ScatterResult) string {
	last := results[len(results)-1]
	rounds := last.Rounds
	if !last.Converged {
		rounds = -1
	}
	size := fmt.Sprint(last.Losses)
	if last.Losses%1000 == 0 {
		size = fmt.Sprintf("%dk", last.Losses/1000)
	}
	return fmt.Sprintf("scatter_rounds_%s=%d scatter_bytes_per_loss=%.0f", size, rounds,
		float64(last.ManifestBytes+last.RepairBytes)/float64(last.Losses))
}

// writeResidue says what is left when a size did not converge: the stream buckets that still
// differ, and what the consumer's repair ledger and sent requests say about them.
func writeResidue(ctx context.Context, out io.Writer, originName string, origin, consumer *pgxpool.Pool) error {
	const q = `select stream_id, event_type, x0, x1, n from streamseal.stream_digests where origin = $1`
	type bucket struct{ stream, eventType string }
	type fold struct{ x0, x1, n int64 }
	read := func(pool *pgxpool.Pool) (map[bucket]fold, error) {
		rows, err := pool.Query(ctx, q, originName)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		m := map[bucket]fold{}
		for rows.Next() {
			var b bucket
			var f fold
			if err := rows.Scan(&b.stream, &b.eventType, &f.x0, &f.x1, &f.n); err != nil {
				return nil, err
			}
			m[b] = f
		}
		return m, rows.Err()
	}
	want, err := read(origin)
	if err != nil {
		return err
	}
	have, err := read(consumer)
	if err != nil {
		return err
	}
	var streams []string
	missing := int64(0)
	for b, f := range want {
		if have[b] != f {
			streams = append(streams, b.stream)
			missing += f.n - have[b].n
		}
	}
	var ledgered, requested, spent int
	if err := consumer.QueryRow(ctx, `
		select count(*), count(*) filter (where attempts > 0), count(*) filter (where exhausted_at is not null)
		from streamseal.repair_ledger where origin = $1 and stream_id = any($2)`, originName, streams).Scan(&ledgered, &requested, &spent); err != nil {
		return err
	}
	var named int
	if err := consumer.QueryRow(ctx, `
		select count(distinct s) from streamseal.sent_requests r, jsonb_array_elements_text(r.request -> 'streams') s
		where s = any($1)`, streams).Scan(&named); err != nil {
		return err
	}
	fmt.Fprintf(out, "  residue: %d stream buckets still differ (%d events short); %d of them in the repair ledger (%d requested, %d budget spent); %d named by a sent request\n",
		len(streams), missing, ledgered, requested, spent, named)
	return nil
}
