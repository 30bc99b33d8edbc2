package config

import (
	"flag"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/backfill"
	"github.com/streamseal/streamseal/controlplane/redelivery"
)

var update = flag.Bool("update", false, "rewrite the README's configuration table from the option table")

func TestConfig(t *testing.T) {
	t.Run("DefaultsAreValid", func(t *testing.T) {
		if err := Defaults().Validate(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Defaults", func(t *testing.T) {
		want := Config{
			CheckpointInterval:                 CheckpointIntervalDefault,
			LivenessIntervals:                  LivenessIntervalsDefault,
			ReadinessGrace:                     ReadinessGraceDefault,
			MaintenanceInterval:                MaintenanceIntervalDefault,
			RepairMode:                         RepairModeDefault,
			MaxAutoRepairRequestsPerCheckpoint: MaxAutoRepairRequestsPerCheckpointDefault,
			RepairRetryAfter:                   RepairRetryAfterDefault,
			RepairAnswerGrace:                  RepairAnswerGraceDefault,
			EpochWidth:                         EpochWidthDefault,
			SettleWindow:                       SettleWindowDefault,
			StallLimit:                         StallLimitDefault,
			Redelivery:                         redelivery.DefaultLimits,
			AuditInterval:                      AuditIntervalDefault,
			StartupAuditMaxJitter:              StartupAuditMaxJitterDefault,
			MaxAutoRepairRequestsPerAudit:      MaxAutoRepairRequestsPerAuditDefault,
			MaxDrillDownTypesPerAudit:          MaxDrillDownTypesPerAuditDefault,
			MaxDigestsPerManifest:              MaxDigestsPerManifestDefault,
			DivergenceReportCooldown:           DivergenceReportCooldownDefault,
			MaxRepairAttemptsPerBucket:         MaxRepairAttemptsPerBucketDefault,
			FullSweepCron:                      FullSweepCronDefault,
			FullSweepEveryNthAudit:             FullSweepEveryNthAuditDefault,
			EventRetention:                     EventRetentionDefault,
			EphemeralGrace:                     EphemeralGraceDefault,
			BackfillOnGrowth:                   BackfillOnGrowthDefault,
			BackfillServeCopies:                BackfillServeCopiesDefault,
			BackfillReaskAfter:                 BackfillReaskAfterDefault,
			MaxAutoRebuildsPerAudit:            MaxAutoRebuildsPerAuditDefault,
			MaxCoverageGapReportsPerAudit:      MaxCoverageGapReportsPerAuditDefault,
		}
		if got := Defaults(); got != want {
			t.Fatalf("Defaults() = %+v\nwant        %+v", got, want)
		}
		o := DefaultOptions()
		if o.Config != want || o.NATSDataDir != NATSDataDirDefault || o.MaxEvents != RepairMaxEventsDefault ||
			o.Timeout != RepairTimeoutDefault || o.DemoMetricsAddr != DemoMetricsAddrDefault || o.DatabaseURL != "" {
			t.Fatalf("DefaultOptions() = %+v", o)
		}
	})

	t.Run("FlagsOverrideEnvironmentOverrideDefaults", func(t *testing.T) {
		t.Setenv("STREAMSEAL_CHECKPOINT_INTERVAL", "30s")
		t.Setenv("STREAMSEAL_REPAIR_MODE", "report-only")
		c := Defaults()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		if err := c.RegisterFlags(fs); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse([]string{"--checkpoint-interval", "5s"}); err != nil {
			t.Fatal(err)
		}
		if c.CheckpointInterval != 5*time.Second || c.RepairMode != ReportOnly || c.LivenessIntervals != 3 {
			t.Fatalf("config = %+v", c)
		}
	})

	// Invariant 14: how long a backfill nobody answered, or an answer that stalled, waits before
	// it is asked again is the operator's (issue 18), from the backfill loop's default.
	t.Run("BackfillReaskAfterIsAnOption", func(t *testing.T) {
		if BackfillReaskAfterDefault != backfill.ReaskAfterDefault {
			t.Fatalf("default %s, want the backfill loop's %s", BackfillReaskAfterDefault, backfill.ReaskAfterDefault)
		}
		t.Setenv("STREAMSEAL_BACKFILL_REASK_AFTER", "90s")
		c := Defaults()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if err := c.RegisterFlags(fs); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse(nil); err != nil || c.BackfillReaskAfter != 90*time.Second {
			t.Fatalf("from the environment: %v, %s; want 1m30s", err, c.BackfillReaskAfter)
		}
		c.BackfillReaskAfter = 0
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--backfill-reask-after") {
			t.Fatalf("a zero re-ask delay: %v; want a refusal naming --backfill-reask-after", err)
		}
	})

	// Invariants 1 and 14: how long a repair answer's bundles are still stored after its summary
	// (another replica handled it first) is the operator's, run only, from the receiver's
	// default; a malformed or out-of-range value is refused naming the option and the range.
	t.Run("RepairAnswerGraceIsARunOption", func(t *testing.T) {
		if RepairAnswerGraceDefault != redelivery.AnswerGraceDefault {
			t.Fatalf("default %s, want the receiver's %s", RepairAnswerGraceDefault, redelivery.AnswerGraceDefault)
		}
		t.Setenv("STREAMSEAL_REPAIR_ANSWER_GRACE", "20m")
		o := DefaultOptions()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if err := o.RegisterFlags(fs, CommandRun); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse(nil); err != nil || o.RepairAnswerGrace != 20*time.Minute {
			t.Fatalf("from the environment: %v, %s; want 20m", err, o.RepairAnswerGrace)
		}
		if err := fs.Parse([]string{"--repair-answer-grace", "soon"}); err == nil || !strings.Contains(err.Error(), "repair-answer-grace") {
			t.Fatalf("a malformed grace: %v; want a refusal naming --repair-answer-grace", err)
		}
		for _, bad := range []time.Duration{0, 25 * time.Hour} {
			c := Defaults()
			c.RepairAnswerGrace = bad
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--repair-answer-grace "+FormatDuration(bad)+" is out of range: expected 1ms..24h") {
				t.Fatalf("--repair-answer-grace %s: %v; want a refusal naming the option and its range", bad, err)
			}
		}
		audit := flag.NewFlagSet("audit", flag.ContinueOnError)
		audit.SetOutput(io.Discard)
		ao := DefaultOptions()
		if err := ao.RegisterFlags(audit, CommandAudit); err != nil {
			t.Fatal(err)
		}
		if audit.Lookup("repair-answer-grace") != nil {
			t.Fatal("audit takes --repair-answer-grace; it stores no repair answers")
		}
	})

	t.Run("CommandOptionsComeFromFlagsAndEnvironment", func(t *testing.T) {
		t.Setenv("STREAMSEAL_DATABASE_URL", "postgres://env/db")
		t.Setenv("STREAMSEAL_NATS_DATA_DIR", "") // empty counts as unset
		t.Setenv("STREAMSEAL_SETTLE_WINDOW", "2m")
		o := DefaultOptions()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		if err := o.RegisterFlags(fs, CommandRun); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse([]string{"--service", "billing", "--consumes", "a.b, c.d", "--grant", "shipping=a.b@acme", "--grant-all-tenants", "shipping=c.d"}); err != nil {
			t.Fatal(err)
		}
		if o.DatabaseURL != "postgres://env/db" || o.Service != "billing" || o.NATSDataDir != NATSDataDirDefault ||
			!slices.Equal(o.Consumes, []string{"a.b", "c.d"}) || len(o.Grants) != 2 || !slices.Equal(o.Grants[0].Tenants, []string{"acme"}) || o.Grants[0].AllTenants || !o.Grants[1].AllTenants || !slices.Equal(o.Grants[1].Types, []string{"c.d"}) ||
			o.SettleWindow != 2*time.Minute {
			t.Fatalf("options = %+v", o)
		}
		if err := o.ValidateFor(CommandRun); err != nil {
			t.Fatal(err)
		}
	})

	// Invariant 11: a grant names its tenants or says every tenant; naming none is refused with
	// what to write instead, never read as every tenant. A bare @ is the single-tenant tenant "".
	t.Run("AGrantNamesItsTenantsOrSaysEveryTenant", func(t *testing.T) {
		o := DefaultOptions()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if err := o.RegisterFlags(fs, CommandRun); err != nil {
			t.Fatal(err)
		}
		err := fs.Parse([]string{"--grant", "shipping=a.b"})
		if err == nil || !strings.Contains(err.Error(), "names no tenants") || !strings.Contains(err.Error(), "--grant-all-tenants shipping=a.b") {
			t.Fatalf("a grant naming no tenant: %v; want a refusal saying what to write", err)
		}
		if err := fs.Parse([]string{"--grant", "shipping=a.b@"}); err != nil || len(o.Grants) != 1 ||
			!slices.Equal(o.Grants[0].Tenants, []string{""}) || o.Grants[0].AllTenants {
			t.Fatalf("a bare @: %v, grants %+v; want the single-tenant tenant \"\" only", err, o.Grants)
		}
	})

	t.Run("BadValuesNameTheOptionAndTheRange", func(t *testing.T) {
		c := Defaults()
		c.RepairMode = "yolo"
		c.MaxAutoRepairRequestsPerCheckpoint = 0
		c.CheckpointInterval = 2 * time.Hour
		err := c.Validate()
		for _, want := range []string{
			`--repair-mode "yolo" is not a mode: expected auto-repair-capped or report-only`,
			"--max-auto-repair-requests-per-checkpoint 0 is out of range: expected 1..10000",
			"--checkpoint-interval 2h is out of range: expected 10ms..1h",
		} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v does not say %q", err, want)
			}
		}
		if n := strings.Count(err.Error(), "\n") + 1; n != 3 {
			t.Fatalf("%d lines for 3 problems:\n%v", n, err)
		}
	})

	t.Run("EventRetentionIsForeverOrAtLeastAnHour", func(t *testing.T) {
		for _, ok := range []time.Duration{0, time.Hour, 7 * 24 * time.Hour, 365 * 24 * time.Hour} {
			c := Defaults()
			c.EventRetention = ok
			if err := c.Validate(); err != nil {
				t.Fatalf("--event-retention %s refused: %v", ok, err)
			}
		}
		for _, bad := range []time.Duration{time.Minute, -time.Hour, 366 * 24 * time.Hour} {
			c := Defaults()
			c.EventRetention = bad
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--event-retention") || !strings.Contains(err.Error(), "expected 0 (forever) or 1h..8760h") {
				t.Fatalf("--event-retention %s: %v; want a refusal naming the option and its range", bad, err)
			}
		}
	})

	t.Run("UnparsableEnvironmentIsRefusedByName", func(t *testing.T) {
		t.Setenv("STREAMSEAL_LIVENESS_INTERVALS", "three")
		c := Defaults()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		err := c.RegisterFlags(fs)
		if err == nil || !strings.Contains(err.Error(), `STREAMSEAL_LIVENESS_INTERVALS "three": expected an integer`) {
			t.Fatalf("got %v, want an error naming STREAMSEAL_LIVENESS_INTERVALS", err)
		}
		if fs.Parse([]string{"--epoch-width", "ten"}) == nil {
			t.Fatal("an unparsable flag was accepted")
		}
	})

	t.Run("MissingAndBadCommandOptionsNameTheirFlags", func(t *testing.T) {
		o := DefaultOptions()
		o.Origin = "BAD!"
		o.MaxEvents = 0
		err := o.ValidateFor(CommandRepair)
		want := []string{
			"--database-url is required (or STREAMSEAL_DATABASE_URL): this service's database, a PostgreSQL URL",
			"--nats-url is required (or STREAMSEAL_NATS_URL): the NATS server",
			`--origin "BAD!" is not a service name: expected [a-z][a-z0-9-]{0,62}`,
			"--types is required: comma-separated event types to ask for",
			"--tenant is required: comma-separated tenants to ask for",
			"--max-events 0 is out of range: expected >= 1",
		}
		if err == nil || err.Error() != strings.Join(want, "\n") {
			t.Fatalf("got\n%v\nwant one line per problem:\n%s", err, strings.Join(want, "\n"))
		}
		// audit takes --origin too, but does not need it.
		o = DefaultOptions()
		o.DatabaseURL, o.NATSURL = "postgres://x", "nats://x"
		if err := o.ValidateFor(CommandAudit); err != nil {
			t.Fatalf("audit without --origin: %v", err)
		}
	})
}

// TestOptionTable: every option is defined once and well formed, so what derives from the table
// (flags, environment, -h, the README) is right by construction.
func TestOptionTable(t *testing.T) {
	envName := regexp.MustCompile(`^STREAMSEAL_[A-Z0-9_]+$`)
	seen := map[string]bool{}
	for _, o := range Definitions() {
		if len(o.Commands) == 0 {
			t.Errorf("--%s is taken by no command", o.Flag)
		}
		for _, c := range o.Commands {
			if !slices.Contains(Commands, c) {
				t.Errorf("--%s names an unknown command %q", o.Flag, c)
			}
			if seen[c+" --"+o.Flag] {
				t.Errorf("%s has two definitions of --%s", c, o.Flag)
			}
			seen[c+" --"+o.Flag] = true
		}
		for _, c := range o.Required {
			if !o.Takes(c) {
				t.Errorf("--%s is required by %s, which does not take it", o.Flag, c)
			}
		}
		if o.Env != "" && (!envName.MatchString(o.Env) || o.Env != "STREAMSEAL_"+strings.ToUpper(strings.ReplaceAll(o.Flag, "-", "_"))) {
			t.Errorf("--%s: environment variable %q is not STREAMSEAL_ + the flag in upper snake case", o.Flag, o.Env)
		}
		if o.Help == "" || strings.HasSuffix(o.Help, ".") {
			t.Errorf("--%s: help %q is empty or ends with a period", o.Flag, o.Help)
		}
		for _, c := range o.Commands {
			u := o.Usage(c)
			if !strings.HasPrefix(u, o.Help) || !strings.Contains(u, o.Accepted()) || (o.Env != "" && !strings.Contains(u, "env "+o.Env)) {
				t.Errorf("%s --%s: usage %q lacks its help, accepted values or environment variable", c, o.Flag, u)
			}
			if !o.RequiredBy(c) && o.Default() != "" && !strings.Contains(u, "default "+o.Default()) {
				t.Errorf("%s --%s: usage %q lacks its default %q", c, o.Flag, u, o.Default())
			}
		}
	}
	for _, c := range Commands {
		if len(For(c)) == 0 {
			t.Errorf("command %s has no options", c)
		}
	}
}

// TestDurationsRenderAsTheyParse: defaults and ranges are shown in a form the flag reads back.
func TestDurationsRenderAsTheyParse(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 60 * time.Second: "1m", 90 * time.Minute: "90m",
		7 * 24 * time.Hour: "168h", 10 * time.Millisecond: "10ms", 1500 * time.Millisecond: "1500ms", -time.Hour: "-1h"} {
		got := FormatDuration(d)
		if got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != d {
			t.Errorf("%q parses back as %v, %v", got, back, err)
		}
	}
}

// The README's configuration table is the operator's reference: it is the option table rendered
// (every option of every command, with its flag, environment variable, default, commands and
// accepted values). Run with -update to rewrite it after changing an option.
func TestReadmeConfigurationTableIsTheOptionTable(t *testing.T) {
	const path = "../../README.md"
	const begin, end = "<!-- begin: configuration table", "<!-- end: configuration table -->"
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("README has no %q … %q markers around its configuration table", begin, end)
	}
	i += strings.Index(text[i:], "-->\n") + len("-->\n")
	got, want := text[i:j], ReadmeTable()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(text[:i]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README's configuration table differs from the option table (go test ./controlplane/config -run Readme -update rewrites it).\ngot:\n%s\nwant:\n%s", got, want)
}
