// Package jobs schedules the control plane's periodic work on River: one job kind per SQL entry
// point (checkpoint: next_checkpoint and the liveness check; maintenance: close_epochs and
// reap_ephemeral; audit:
// the manifest exchange and comparison; coverage audit: coverage_audit). River
// elects a leader among a service's replicas and only the leader enqueues periodic jobs; the SQL
// underneath is safe to run twice anyway (the checkpoint window is taken under a row lock, epoch
// closes under lane locks). Jobs hold no rule of their own.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/checkpoint"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/migrate"
	"github.com/streamseal/streamseal/controlplane/projections"
	"github.com/streamseal/streamseal/controlplane/store"
)

// CheckpointArgs is the periodic checkpoint job: publish this service's checkpoint, then check
// the liveness of the origins it hears from.
type CheckpointArgs struct{}

// Kind implements river.JobArgs.
func (CheckpointArgs) Kind() string { return "streamseal_checkpoint" }

// MaintenanceArgs is the periodic maintenance job: close settled epochs, reap ephemeral events
// past their grace (holds respected).
type MaintenanceArgs struct{}

// Kind implements river.JobArgs.
func (MaintenanceArgs) Kind() string { return "streamseal_maintenance" }

// AuditArgs is the periodic deep audit job.
type AuditArgs struct{}

// Kind implements river.JobArgs.
func (AuditArgs) Kind() string { return "streamseal_audit" }

// CoverageAuditArgs is the periodic local coverage audit (projections.Audit), on the deep
// audit's schedule.
type CoverageAuditArgs struct{}

// Kind implements river.JobArgs.
func (CoverageAuditArgs) Kind() string { return "streamseal_coverage_audit" }

type coverageAuditWorker struct {
	river.WorkerDefaults[CoverageAuditArgs]
	pool   *pgxpool.Pool
	cfg    config.Config
	ins    *metrics.Instruments
	logger *slog.Logger
}

func (w *coverageAuditWorker) Work(ctx context.Context, _ *river.Job[CoverageAuditArgs]) error {
	_, err := projections.Audit(ctx, w.pool, w.cfg, w.ins, w.logger)
	return err
}

// Timeout lets a coverage audit replay its capped rebuilds.
func (w *coverageAuditWorker) Timeout(*river.Job[CoverageAuditArgs]) time.Duration {
	return 10 * time.Minute
}

type auditWorker struct {
	river.WorkerDefaults[AuditArgs]
	auditor *audit.Auditor
	// fallback, when set, runs the sweep every nth audit (no cron could be registered).
	fallback *everyNth
	sweeper  *Sweeper
}

func (w *auditWorker) Work(ctx context.Context, _ *river.Job[AuditArgs]) error {
	if w.fallback != nil && w.fallback.due() {
		return w.sweeper.Sweep(ctx)
	}
	_, err := w.auditor.RunOnce(ctx)
	if errors.Is(err, audit.ErrAuditRunning) {
		return nil // the running audit covers this one
	}
	return err
}

// Timeout lets an audit wait for its origins' answers longer than the default job timeout.
func (w *auditWorker) Timeout(*river.Job[AuditArgs]) time.Duration { return 10 * time.Minute }

// startupThenEvery is the audit's schedule: the first run 30 s plus a random splay after start
// (so a fleet's deploy does not audit in lockstep), then every interval.
type startupThenEvery struct {
	first    time.Time
	interval time.Duration
}

func (s *startupThenEvery) Next(current time.Time) time.Time {
	if current.Before(s.first) {
		return s.first
	}
	return current.Add(s.interval)
}

type checkpointWorker struct {
	river.WorkerDefaults[CheckpointArgs]
	publisher *checkpoint.Publisher
	verifier  *checkpoint.Verifier
}

func (w *checkpointWorker) Work(ctx context.Context, _ *river.Job[CheckpointArgs]) error {
	if _, err := w.publisher.Publish(ctx); err != nil {
		return err
	}
	if err := w.verifier.CheckLiveness(ctx); err != nil {
		return err
	}
	return w.verifier.Prune(ctx)
}

// SentRequestsRetention is how long a consumer remembers a request it sent (and an audit's record
// of the requests it sent or would have sent): long past any answer
// (a truncated answer's summary arrives within seconds; a lost one is asked again), short enough
// that the record stays small.
const SentRequestsRetention = 7 * 24 * time.Hour

type maintenanceWorker struct {
	river.WorkerDefaults[MaintenanceArgs]
	pool    *pgxpool.Pool
	cfg     config.Config
	logger  *slog.Logger
	refresh func(context.Context) error // the metrics' backlog gauges, once per cycle
}

func (w *maintenanceWorker) Work(ctx context.Context, _ *river.Job[MaintenanceArgs]) error {
	closed, err := store.EpochsClose(ctx, w.pool, store.EpochOptions{MaxEpochs: 100, Width: w.cfg.EpochWidth,
		Settle: w.cfg.SettleWindow, StallLimit: w.cfg.StallLimit})
	if err != nil {
		return err
	}
	for _, e := range closed {
		if e.Forced {
			w.logger.Warn("maintenance: stalled epoch forced closed; the sweep will verify it", "origin", e.Origin, "epoch", e.Epoch)
		}
	}
	if _, err := ReapEphemeral(ctx, w.pool, w.cfg.EphemeralGrace, w.logger); err != nil {
		return err
	}
	if _, err := store.SentRequestsPrune(ctx, w.pool, SentRequestsRetention); err != nil {
		return err
	}
	if _, err := store.AuditRequestsPrune(ctx, w.pool, SentRequestsRetention); err != nil {
		return err
	}
	if w.refresh != nil {
		return w.refresh(ctx)
	}
	return nil
}

// ReapBatchMax is how many ephemeral events one maintenance run reaps at most; the rest wait for
// the next run, so a backlog never makes one run long.
const ReapBatchMax = 10000

// ReapEphemeral is the maintenance job's reaper step: it removes the ephemeral events stored
// longer ago than grace (streamseal.reap_ephemeral: an origin's own only once a checkpoint
// covered them, never while a destruction hold names them) and returns how many it removed.
func ReapEphemeral(ctx context.Context, pool *pgxpool.Pool, grace time.Duration, logger *slog.Logger) (int64, error) {
	reaped, err := store.EphemeralReap(ctx, pool, grace, ReapBatchMax)
	if err != nil {
		return 0, err
	}
	if reaped > 0 && logger != nil {
		logger.Info("maintenance: ephemeral events reaped past their grace", "reaped", reaped, "grace", grace)
	}
	return reaped, nil
}

// NewClient builds the River client of one service with its periodic jobs.
func NewClient(pool *pgxpool.Pool, cfg config.Config, publisher *checkpoint.Publisher, verifier *checkpoint.Verifier, auditor *audit.Auditor, refresh func(context.Context) error, logger *slog.Logger) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &checkpointWorker{publisher: publisher, verifier: verifier}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &maintenanceWorker{pool: pool, cfg: cfg, logger: logger, refresh: refresh}); err != nil {
		return nil, err
	}
	sweeper := &Sweeper{Pool: pool, Auditor: auditor, Logger: logger, MaxEpochs: 1000, Metrics: auditor.Metrics}
	sweepSchedule, cronOK := SweepSchedule(cfg.FullSweepCron, auditor.Service)
	aw := &auditWorker{auditor: auditor, sweeper: sweeper}
	if !cronOK {
		logger.Warn("jobs: sweep cron not registrable; the sweep runs every nth audit instead", "cron", cfg.FullSweepCron,
			"every_nth_audit", cfg.FullSweepEveryNthAudit)
		aw.fallback = &everyNth{n: int64(cfg.FullSweepEveryNthAudit)}
	}
	if err := river.AddWorkerSafely(workers, aw); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &sweepWorker{sweeper: sweeper}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &coverageAuditWorker{pool: pool, cfg: cfg, ins: auditor.Metrics, logger: logger}); err != nil {
		return nil, err
	}
	firstAudit := time.Now().Add(min(30*time.Second, cfg.AuditInterval))
	if cfg.StartupAuditMaxJitter > 0 {
		firstAudit = firstAudit.Add(time.Duration(rand.Int64N(int64(cfg.StartupAuditMaxJitter))))
	}
	periodic := []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(cfg.CheckpointInterval),
			func() (river.JobArgs, *river.InsertOpts) { return CheckpointArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(cfg.MaintenanceInterval),
			func() (river.JobArgs, *river.InsertOpts) { return MaintenanceArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true}),
		river.NewPeriodicJob(&startupThenEvery{first: firstAudit, interval: cfg.AuditInterval},
			func() (river.JobArgs, *river.InsertOpts) { return AuditArgs{}, nil }, nil),
		river.NewPeriodicJob(&startupThenEvery{first: firstAudit, interval: cfg.AuditInterval},
			func() (river.JobArgs, *river.InsertOpts) { return CoverageAuditArgs{}, nil }, nil),
	}
	if cronOK {
		periodic = append(periodic, river.NewPeriodicJob(sweepSchedule,
			func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil }, nil))
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            migrate.RiverSchema,
		Logger:            logger,
		Workers:           workers,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		PeriodicJobs:      periodic,
		FetchCooldown:     min(100*time.Millisecond, cfg.CheckpointInterval/4),
		FetchPollInterval: min(time.Second, cfg.CheckpointInterval/2),
		JobTimeout:        time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("River client: %w", err)
	}
	return client, nil
}
