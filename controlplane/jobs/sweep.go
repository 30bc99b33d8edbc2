package jobs

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/store"
)

// DefaultSweepCron is the sweep's default schedule; its minute is replaced by the service's
// splay so a fleet does not sweep in the same minute.
const DefaultSweepCron = config.FullSweepCronDefault

// Splay is a service's stable minute, FNV-1a of its name mod 60. Go's map hashing and
// string.GetHashCode-style hashes are randomized per process and would re-randomize the very
// collisions the splay exists to prevent.
func Splay(service string) int {
	h := fnv.New32a()
	h.Write([]byte(service))
	return int(h.Sum32() % 60)
}

// dailyAt fires once a day at hour:minute UTC.
type dailyAt struct{ hour, minute int }

func (d dailyAt) Next(current time.Time) time.Time {
	c := current.UTC()
	next := time.Date(c.Year(), c.Month(), c.Day(), d.hour, d.minute, 0, 0, time.UTC)
	if !next.After(c) {
		next = next.AddDate(0, 0, 1)
	}
	return next
}

// SweepSchedule turns cron into a schedule for service. Only the daily form "M H * * *" is
// registrable; the default cron gets the service's splay as its minute. Anything else returns
// ok = false, and the sweep falls back to every nth audit: it is never silently lost.
func SweepSchedule(cron, service string) (river.PeriodicSchedule, bool) {
	fields := strings.Fields(cron)
	if len(fields) != 5 || fields[2] != "*" || fields[3] != "*" || fields[4] != "*" {
		return nil, false
	}
	minute, err1 := strconv.Atoi(fields[0])
	hour, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil || minute < 0 || minute > 59 || hour < 0 || hour > 23 {
		return nil, false
	}
	if cron == DefaultSweepCron {
		minute = Splay(service)
	}
	return dailyAt{hour: hour, minute: minute}, true
}

// SweepArgs is the sweep job: trust-but-verify the digest table and the sealed epochs against
// recomputes (healing drift), then a full-history audit of every origin.
type SweepArgs struct{}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return "streamseal_sweep" }

// Sweeper runs a sweep.
type Sweeper struct {
	Pool      *pgxpool.Pool
	Auditor   *audit.Auditor
	Logger    *slog.Logger
	MaxEpochs int                  // epochs verified per sweep (the verify cursor resumes from there next time)
	Metrics   *metrics.Instruments // nil: not measured
}

// Sweep runs one sweep now.
func (s *Sweeper) Sweep(ctx context.Context) error {
	drift, err := store.StreamDigestsVerify(ctx, s.Pool, true)
	if err != nil {
		return err
	}
	healed := map[string]int64{}
	for _, d := range drift {
		healed[d.Kind]++
		s.Logger.Error("sweep: DIGEST DRIFT healed: an unaccounted write path touched the store", "kind", d.Kind,
			"origin", d.Origin, "tenant", d.Tenant, "type", d.EventType, "stream", d.StreamID, "stored_n", d.Stored.N, "actual_n", d.Actual.N)
	}
	checks, err := store.EpochsVerify(ctx, s.Pool, max(1, s.MaxEpochs))
	if err != nil {
		return err
	}
	var checked int64
	for _, c := range checks {
		checked += int64(c.Checked)
		healed["epoch"] += int64(c.Drifted)
		if c.PrefixHealed {
			healed["epoch_prefix"]++
		}
		if c.Drifted > 0 || c.PrefixHealed {
			s.Logger.Error("sweep: SEALED EPOCH DRIFT healed", "origin", c.Origin, "checked", c.Checked,
				"drifted", c.Drifted, "prefix_healed", c.PrefixHealed)
		}
	}
	s.Metrics.Verified(checked, healed)
	if _, err := s.Auditor.Run(ctx, audit.Scope{Full: true}); err != nil {
		return fmt.Errorf("full-history audit: %w", err)
	}
	return nil
}

type sweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	sweeper *Sweeper
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	return w.sweeper.Sweep(ctx)
}

func (w *sweepWorker) Timeout(*river.Job[SweepArgs]) time.Duration { return time.Hour }

// everyNth counts audits and says when the fallback sweep is due.
type everyNth struct {
	n     int64
	count atomic.Int64
}

func (e *everyNth) due() bool { return e.n > 0 && e.count.Add(1)%e.n == 0 }
