// Package config is the control plane's one configuration struct: every option with its default
// in one place, loaded from flags and STREAMSEAL_* environment variables (flags win), validated
// at start with errors that name the option and the accepted range.
package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/streamseal/streamseal/controlplane/redelivery"
)

// Repair modes.
const (
	AutoRepairCapped = "auto-repair-capped" // detect and repair, every rung capped (default)
	ReportOnly       = "report-only"        // detect and record exactly what would be requested
)

// Config holds every tunable of a running control plane.
type Config struct {
	CheckpointInterval                 time.Duration
	LivenessIntervals                  int
	MaintenanceInterval                time.Duration
	RepairMode                         string
	MaxAutoRepairRequestsPerCheckpoint int
	RepairRetryAfter                   time.Duration
	EpochWidth                         int64
	SettleWindow                       time.Duration
	StallLimit                         time.Duration
	Redelivery                         redelivery.Limits
	AuditInterval                      time.Duration
	StartupAuditMaxJitter              time.Duration
	MaxAutoRepairRequestsPerAudit      int
	MaxDrillDownTypesPerAudit          int
	MaxDigestsPerManifest              int
	DivergenceReportCooldown           time.Duration
	MaxRepairAttemptsPerBucket         int
	FullSweepCron                      string
	FullSweepEveryNthAudit             int
	// EventRetention is how long JetStream keeps events (0: forever). Repairs come from the
	// origin's store, so the broker holds only what deliveries in flight and restarts need.
	EventRetention time.Duration
}

// Defaults are the proposal's production defaults.
func Defaults() Config {
	return Config{
		CheckpointInterval:                 60 * time.Second,
		LivenessIntervals:                  3,
		MaintenanceInterval:                5 * time.Minute,
		RepairMode:                         AutoRepairCapped,
		MaxAutoRepairRequestsPerCheckpoint: 10,
		RepairRetryAfter:                   5 * time.Minute,
		EpochWidth:                         100000,
		SettleWindow:                       60 * time.Minute,
		StallLimit:                         3600 * time.Second,
		Redelivery:                         redelivery.DefaultLimits,
		AuditInterval:                      1440 * time.Minute,
		StartupAuditMaxJitter:              300 * time.Second,
		MaxAutoRepairRequestsPerAudit:      25,
		MaxDrillDownTypesPerAudit:          10,
		MaxDigestsPerManifest:              500,
		DivergenceReportCooldown:           60 * time.Minute,
		MaxRepairAttemptsPerBucket:         8,
		FullSweepCron:                      "0 3 * * *",
		FullSweepEveryNthAudit:             7,
		EventRetention:                     7 * 24 * time.Hour,
	}
}

// option is one flag/env pair bound to a field.
type option struct {
	flag, env, help string
	set             func(string) error
	get             func() string
}

func (c *Config) options() []option {
	duration := func(p *time.Duration) (func(string) error, func() string) {
		return func(s string) error {
				d, err := time.ParseDuration(s)
				if err != nil {
					return fmt.Errorf("%q is not a duration (e.g. 60s, 5m)", s)
				}
				*p = d
				return nil
			}, func() string {
				return p.String()
			}
	}
	integer := func(p *int) (func(string) error, func() string) {
		return func(s string) error {
				n, err := strconv.Atoi(s)
				if err != nil {
					return fmt.Errorf("%q is not an integer", s)
				}
				*p = n
				return nil
			}, func() string {
				return strconv.Itoa(*p)
			}
	}
	integer64 := func(p *int64) (func(string) error, func() string) {
		return func(s string) error {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return fmt.Errorf("%q is not an integer", s)
				}
				*p = n
				return nil
			}, func() string {
				return strconv.FormatInt(*p, 10)
			}
	}
	text := func(p *string) (func(string) error, func() string) {
		return func(s string) error { *p = s; return nil }, func() string { return *p }
	}
	opt := func(name, help string, set func(string) error, get func() string) option {
		return option{flag: name, env: "STREAMSEAL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")), help: help, set: set, get: get}
	}
	var out []option
	add := func(name, help string, pair func() (func(string) error, func() string)) {
		set, get := pair()
		out = append(out, opt(name, help, set, get))
	}
	add("checkpoint-interval", "how often the origin publishes a continuity checkpoint (10ms..1h)", func() (func(string) error, func() string) { return duration(&c.CheckpointInterval) })
	add("liveness-intervals", "checkpoint intervals of silence before an origin raises the liveness alarm (2..100)", func() (func(string) error, func() string) { return integer(&c.LivenessIntervals) })
	add("maintenance-interval", "how often epochs close and liveness is checked (10ms..24h)", func() (func(string) error, func() string) { return duration(&c.MaintenanceInterval) })
	add("repair-mode", "auto-repair-capped (repair confirmed gaps, capped) or report-only (record what would be requested)", func() (func(string) error, func() string) { return text(&c.RepairMode) })
	add("max-auto-repair-requests-per-checkpoint", "repair requests sent per checkpoint at most; the rest wait for the next (1..10000)", func() (func(string) error, func() string) { return integer(&c.MaxAutoRepairRequestsPerCheckpoint) })
	add("repair-retry-after", "the repair ledger's backoff base: a bucket's k-th repair request waits base x 2^(k-1) (10ms..24h)", func() (func(string) error, func() string) { return duration(&c.RepairRetryAfter) })
	add("epoch-width", "origin_seq width of a new lane's epochs, pinned at its first close (1..1000000000)", func() (func(string) error, func() string) { return integer64(&c.EpochWidth) })
	add("settle-window", "how long an arrival stays unsettled (blocks its epoch from closing) (0s..7d)", func() (func(string) error, func() string) { return duration(&c.SettleWindow) })
	add("stall-limit", "how long a blocked epoch waits before one is forced through per maintenance run (0s..7d)", func() (func(string) error, func() string) { return duration(&c.StallLimit) })
	add("audit-interval", "how often the deep audit runs after the first (10ms..30d)", func() (func(string) error, func() string) { return duration(&c.AuditInterval) })
	add("startup-audit-max-jitter", "the first audit runs 30s plus up to this much after start (0s..1h)", func() (func(string) error, func() string) { return duration(&c.StartupAuditMaxJitter) })
	add("max-auto-repair-requests-per-audit", "repair requests one audit sends at most (1..10000)", func() (func(string) error, func() string) { return integer(&c.MaxAutoRepairRequestsPerAudit) })
	add("max-drill-down-types-per-audit", "mismatched types one audit drills into (1..10000)", func() (func(string) error, func() string) { return integer(&c.MaxDrillDownTypesPerAudit) })
	add("max-digests-per-manifest", "digests per manifest chunk (1..100000)", func() (func(string) error, func() string) { return integer(&c.MaxDigestsPerManifest) })
	add("divergence-report-cooldown", "an unchanged divergence is re-reported once per this (10ms..7d)", func() (func(string) error, func() string) { return duration(&c.DivergenceReportCooldown) })
	add("max-repair-attempts-per-bucket", "after this many requests a bucket's backoff stays at its slowest rung and it alarms as exhausted (1..100)", func() (func(string) error, func() string) { return integer(&c.MaxRepairAttemptsPerBucket) })
	add("full-sweep-cron", "daily sweep schedule \"M H * * *\" (UTC); the default's minute is the service's splay; anything else falls back to every nth audit", func() (func(string) error, func() string) { return text(&c.FullSweepCron) })
	add("full-sweep-every-nth-audit", "without a registrable cron, every nth audit is a sweep (1..1000)", func() (func(string) error, func() string) { return integer(&c.FullSweepEveryNthAudit) })
	add("max-events-per-request", "the most events one redelivery request is served (1..1000000)", func() (func(string) error, func() string) { return integer(&c.Redelivery.MaxEventsPerRequest) })
	add("event-retention", "how long JetStream keeps events, 0 for forever; set the same on every service (0 or 1h..365d)", func() (func(string) error, func() string) { return duration(&c.EventRetention) })
	return out
}

// RegisterFlags adds every option to fs, with the environment's value (if set) as the default.
// An environment value that does not parse is returned as an error naming the variable.
func (c *Config) RegisterFlags(fs *flag.FlagSet) error {
	var errs []error
	for _, o := range c.options() {
		if v, ok := os.LookupEnv(o.env); ok {
			if err := o.set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", o.env, err))
			}
		}
		fs.Func(o.flag, o.help+" (env "+o.env+", default "+o.get()+")", o.set)
	}
	return errors.Join(errs...)
}

// Validate checks every option against its accepted range.
func (c Config) Validate() error {
	var errs []error
	durationIn := func(name string, d, lo, hi time.Duration) {
		if d < lo || d > hi {
			errs = append(errs, fmt.Errorf("--%s %s is out of range: expected %s..%s", name, d, lo, hi))
		}
	}
	intIn := func(name string, n, lo, hi int64) {
		if n < lo || n > hi {
			errs = append(errs, fmt.Errorf("--%s %d is out of range: expected %d..%d", name, n, lo, hi))
		}
	}
	durationIn("checkpoint-interval", c.CheckpointInterval, 10*time.Millisecond, time.Hour)
	intIn("liveness-intervals", int64(c.LivenessIntervals), 2, 100)
	durationIn("maintenance-interval", c.MaintenanceInterval, 10*time.Millisecond, 24*time.Hour)
	if c.RepairMode != AutoRepairCapped && c.RepairMode != ReportOnly {
		errs = append(errs, fmt.Errorf("--repair-mode %q is not a mode: expected %s or %s", c.RepairMode, AutoRepairCapped, ReportOnly))
	}
	intIn("max-auto-repair-requests-per-checkpoint", int64(c.MaxAutoRepairRequestsPerCheckpoint), 1, 10000)
	durationIn("repair-retry-after", c.RepairRetryAfter, 10*time.Millisecond, 24*time.Hour)
	intIn("epoch-width", c.EpochWidth, 1, 1_000_000_000)
	durationIn("settle-window", c.SettleWindow, 0, 7*24*time.Hour)
	durationIn("stall-limit", c.StallLimit, 0, 7*24*time.Hour)
	intIn("max-events-per-request", int64(c.Redelivery.MaxEventsPerRequest), 1, 1_000_000)
	durationIn("audit-interval", c.AuditInterval, 10*time.Millisecond, 30*24*time.Hour)
	durationIn("startup-audit-max-jitter", c.StartupAuditMaxJitter, 0, time.Hour)
	intIn("max-auto-repair-requests-per-audit", int64(c.MaxAutoRepairRequestsPerAudit), 1, 10000)
	intIn("max-drill-down-types-per-audit", int64(c.MaxDrillDownTypesPerAudit), 1, 10000)
	intIn("max-digests-per-manifest", int64(c.MaxDigestsPerManifest), 1, 100000)
	durationIn("divergence-report-cooldown", c.DivergenceReportCooldown, 10*time.Millisecond, 7*24*time.Hour)
	intIn("max-repair-attempts-per-bucket", int64(c.MaxRepairAttemptsPerBucket), 1, 100)
	intIn("full-sweep-every-nth-audit", int64(c.FullSweepEveryNthAudit), 1, 1000)
	// JetStream needs a retention of at least its two-minute deduplication window; an hour
	// keeps a broker restart or a slow consumer well inside it.
	if r := c.EventRetention; r != 0 && (r < time.Hour || r > 365*24*time.Hour) {
		errs = append(errs, fmt.Errorf("--event-retention %s is out of range: expected 0 (forever) or %s..%s", r, time.Hour, 365*24*time.Hour))
	}
	return errors.Join(errs...)
}
