// Package config is the one home of streamseal's configuration: every option of every command is
// defined once, in the table in options.go (flag, STREAMSEAL_* environment variable, default,
// accepted values, help, and the field it sets), and the flag sets, the environment lookup
// (flags win), the range checks, the -h text and the README's configuration table all derive
// from that table. Config is the part a running control plane takes (run, audit); Options adds
// the options of each command. Errors name the option and the values it accepts.
//
// Each default is a named constant: beside its owner where config can import the owner
// (redelivery, backfill), here where the owner imports config (audit, checkpoint, jobs) and reuses it.
package config

import (
	"errors"
	"flag"
	"time"

	"github.com/streamseal/streamseal/controlplane/backfill"
	"github.com/streamseal/streamseal/controlplane/redelivery"
)

// Repair modes.
const (
	AutoRepairCapped = "auto-repair-capped" // detect and repair, every rung capped (default)
	ReportOnly       = "report-only"        // detect and record exactly what would be requested
)

// Backfill on growth: on sends one broadcast state-only request per expansion of what the service
// consumes; off leaves expansions pending (shown by status; the audit says pending_backfill).
const (
	BackfillOn  = "on"
	BackfillOff = "off"
)

// Defaults of Config: the proposal's production defaults. The audit and jobs packages name theirs
// after these (audit.MaxDrillDownTypesDefault, jobs.DefaultSweepCron).
const (
	CheckpointIntervalDefault                 = 60 * time.Second
	LivenessIntervalsDefault                  = 3
	ReadinessGraceDefault                     = 5 * time.Minute
	MaintenanceIntervalDefault                = 5 * time.Minute
	RepairModeDefault                         = AutoRepairCapped
	MaxAutoRepairRequestsPerCheckpointDefault = 10
	RepairRetryAfterDefault                   = 5 * time.Minute
	RepairAnswerGraceDefault                  = redelivery.AnswerGraceDefault
	EpochWidthDefault                         = 100000
	SettleWindowDefault                       = 60 * time.Minute
	StallLimitDefault                         = 3600 * time.Second
	MaxEventsPerRequestDefault                = redelivery.MaxEventsPerRequestDefault
	AuditIntervalDefault                      = 1440 * time.Minute
	StartupAuditMaxJitterDefault              = 300 * time.Second
	MaxAutoRepairRequestsPerAuditDefault      = 25
	MaxDrillDownTypesPerAuditDefault          = 10
	MaxDigestsPerManifestDefault              = 500
	DivergenceReportCooldownDefault           = 60 * time.Minute
	MaxRepairAttemptsPerBucketDefault         = 8
	FullSweepCronDefault                      = "0 3 * * *"
	FullSweepEveryNthAuditDefault             = 7
	EventRetentionDefault                     = 7 * 24 * time.Hour
	EphemeralGraceDefault                     = 24 * time.Hour
	DestructionHoldLimitDefault               = redelivery.HoldLimitDefault
	BackfillOnGrowthDefault                   = BackfillOn
	BackfillServeCopiesDefault                = BackfillOff
	BackfillReaskAfterDefault                 = backfill.ReaskAfterDefault
	BackfillServeShareDefault                 = redelivery.BackfillShareDefault
	MaxAutoRebuildsPerAuditDefault            = 5
	MaxCoverageGapReportsPerAuditDefault      = 100
)

// Config holds every tunable of a running control plane.
type Config struct {
	CheckpointInterval                 time.Duration
	LivenessIntervals                  int
	ReadinessGrace                     time.Duration
	MaintenanceInterval                time.Duration
	RepairMode                         string
	MaxAutoRepairRequestsPerCheckpoint int
	RepairRetryAfter                   time.Duration
	// RepairAnswerGrace is how long after a repair answer's summary its bundles are still stored:
	// another replica may handle the summary first (redelivery.Receiver.AnswerGrace).
	RepairAnswerGrace             time.Duration
	EpochWidth                    int64
	SettleWindow                  time.Duration
	StallLimit                    time.Duration
	Redelivery                    redelivery.Limits
	AuditInterval                 time.Duration
	StartupAuditMaxJitter         time.Duration
	MaxAutoRepairRequestsPerAudit int
	MaxDrillDownTypesPerAudit     int
	MaxDigestsPerManifest         int
	DivergenceReportCooldown      time.Duration
	MaxRepairAttemptsPerBucket    int
	FullSweepCron                 string
	FullSweepEveryNthAudit        int
	// EventRetention is how long JetStream keeps events (0: forever). Repairs come from the
	// origin's store, so the broker holds only what deliveries in flight and restarts need.
	EventRetention time.Duration
	// EphemeralGrace is how long ephemeral events are kept before the maintenance job reaps them
	// (held ones longer: Redelivery.HoldLimit).
	EphemeralGrace time.Duration
	// BackfillOnGrowth is BackfillOn or BackfillOff.
	BackfillOnGrowth string
	// BackfillServeCopies (BackfillOn or BackfillOff) lets this service answer other services'
	// backfills with the copies it holds of other origins' events, under its own grants.
	BackfillServeCopies string
	// BackfillReaskAfter is how long a backfill broadcast no origin answered, or an origin's
	// answer that made no progress, waits before it is asked again (a stalled answer backs off
	// up to 16 times it).
	BackfillReaskAfter time.Duration
	// MaxAutoRebuildsPerAudit caps the projection streams one coverage audit rebuilds (issue 19).
	MaxAutoRebuildsPerAudit int
	// MaxCoverageGapReportsPerAudit caps the coverage findings one coverage audit records.
	MaxCoverageGapReportsPerAudit int
}

// Defaults are the proposal's production defaults: each option's default from the table, and
// redelivery's limits that are not options.
func Defaults() Config {
	c := Config{Redelivery: redelivery.DefaultLimits}
	for _, o := range tunables(&c) {
		o.value.reset()
	}
	return c
}

// RegisterFlags adds every option of Config to fs, with the environment's value (if set) as the
// default. An environment value that does not parse is returned as an error naming the variable.
func (c *Config) RegisterFlags(fs *flag.FlagSet) error {
	return register(fs, tunables(c), "")
}

// Validate checks every option of Config against the values it accepts, one error per option
// refused.
func (c Config) Validate() error {
	var errs []error
	for _, o := range tunables(&c) {
		errs = append(errs, o.value.check("--"+o.Flag))
	}
	return errors.Join(errs...)
}
