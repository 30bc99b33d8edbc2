package projections

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
)

// CoverageSettleDefault: a bucket that moved less than this before its projection last caught up
// is not judged by the coverage audit. Both sides are local, so it only has to cover a
// transaction that began before the projection's last read and committed after it.
const CoverageSettleDefault = time.Minute

// Audit runs the local coverage audit once (streamseal.coverage_audit) with cfg's caps and repair
// mode (report-only records the rebuilds it would run), counts its gaps and rebuilds on ins
// (nil: not measured) and logs what it found. The River job (jobs: streamseal_coverage_audit, on
// the deep audit's schedule) and `streamseal audit --local` call it.
func Audit(ctx context.Context, db store.Querier, cfg config.Config, ins *metrics.Instruments, logger *slog.Logger) (store.CoverageAuditResult, error) {
	res, err := store.CoverageAudit(ctx, db, store.CoverageLimits{
		MaxReports: cfg.MaxCoverageGapReportsPerAudit, MaxRebuilds: cfg.MaxAutoRebuildsPerAudit,
		ReportOnly: cfg.RepairMode == config.ReportOnly, Settle: CoverageSettleDefault})
	if err != nil {
		return res, fmt.Errorf("coverage audit: %w", err)
	}
	// A rebuild requested of an application projection is a rebuild requested (it runs there).
	ins.CoverageAudited(res.Gaps, res.Rebuilt+res.Requested, res.WouldRebuild)
	if logger != nil && res.Gaps > 0 {
		logger.Warn("coverage audit: projections short of the store (streamseal status lists the findings)",
			"gaps", res.Gaps, "rebuilt", res.Rebuilt, "requested", res.Requested, "would_rebuild", res.WouldRebuild, "deferred", res.Deferred,
			"replayed_events", res.Replayed)
	}
	return res, nil
}

// WriteCoverage prints one coverage audit's result and its recorded findings for people.
func WriteCoverage(w io.Writer, res store.CoverageAuditResult, findings []store.CoverageFinding, mode string) {
	fmt.Fprintf(w, "coverage audit (%s): %d gaps, %d rebuilt (%d events replayed), %d would rebuild, %d deferred to later audits",
		mode, res.Gaps, res.Rebuilt, res.Replayed, res.WouldRebuild, res.Deferred)
	if res.Requested > 0 {
		fmt.Fprintf(w, ", %d rebuilds requested of application projections (their subscribers run them)", res.Requested)
	}
	fmt.Fprintln(w)
	for _, f := range findings {
		fmt.Fprintf(w, "  %s %s: origin %s tenant %q type %s stream %s: store holds %d, the projection applied %d (%s; seen by %d audits)\n",
			f.Projection, f.Kind, f.Origin, f.Tenant, f.EventType, f.StreamID, f.StoreN, f.CursorN, f.Action, f.Audits)
	}
}
