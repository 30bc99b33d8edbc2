// options.go: the option table, the one definition of every option of every command.

package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// The commands of the streamseal binary.
const (
	CommandMigrate    = "migrate"
	CommandRun        = "run"
	CommandRepair     = "repair"
	CommandAudit      = "audit"
	CommandStatus     = "status"
	CommandQuarantine = "quarantine"
	CommandDemo       = "demo"
	CommandBench      = "bench"
	CommandNATSConfig = "nats-config"
	CommandBackfill   = "backfill"
	CommandTail       = "tail"
)

// Commands lists every command, in the order help shows them.
var Commands = []string{CommandMigrate, CommandRun, CommandRepair, CommandBackfill, CommandAudit, CommandStatus, CommandQuarantine, CommandTail, CommandDemo, CommandBench, CommandNATSConfig}

// Defaults of the commands' own options.
const (
	NATSDataDirDefault     = "streamseal-nats"                     // run: the embedded server's JetStream storage
	RepairMaxEventsDefault = redelivery.MaxEventsPerRequestDefault // repair: ask for what an origin serves by default
	RepairTimeoutDefault   = 10 * time.Minute                      // repair: give up after
	DemoMetricsAddrDefault = "127.0.0.1:9464"                      // demo --keep: orders' metrics address
	StartTimeoutDefault    = time.Minute                           // run: wait this long for the database and NATS
)

// Options holds the value of every option of every command: the control plane's Config (run,
// audit) and each command's own. A command reads the fields of the options For lists for it.
type Options struct {
	Config

	DatabaseURL     string        // migrate, run, repair, audit, status: this service's database
	ScratchURL      string        // demo, bench (--database-url): a server for scratch databases
	Service         string        // run
	NATSURL         string        // run, repair, audit
	NATS            wire.Security // run, repair, audit: credentials and TLS for --nats-url
	NATSDataDir     string        // run
	Consumes        []string      // run
	Grants          Grants        // run
	MetricsAddr     string        // run
	FeedAddr        string        // run: serve the application feed (SSE) here
	Resume          string        // tail: the token to resume from
	StartTimeout    time.Duration // run
	Origin          string        // repair, audit
	Types           []string      // repair, backfill
	Tenants         []string      // repair
	From, To        int64         // repair
	MaxEvents       int           // repair
	StateOnly       bool          // repair
	Timeout         time.Duration // repair, backfill
	Full            bool          // audit
	Local           bool          // audit
	JSON            bool          // status, quarantine
	Requeue         bool          // quarantine: re-queue instead of listing
	EventIDs        []string      // quarantine: the events to re-queue (none: every one)
	Keep            bool          // demo
	DemoMetricsAddr string        // demo
	Quick           bool          // bench
	Durable         bool          // bench
	CPUProfile      string        // bench: write a Go CPU profile of the run here
	Topology        string        // nats-config: the topology file
	SeedDir         string        // nats-config: where the NKey seeds go
}

// DefaultOptions are every option's default.
func DefaultOptions() Options {
	o := Options{Config: Defaults()}
	for _, opt := range commandOptions(&o) {
		opt.value.reset()
	}
	return o
}

// Option is the one definition of an option: its flag, its environment variable, the commands
// that take it (and those that require it), its default, the values it accepts and its help.
// The default and the accepted values live in its setter, so they are written once.
type Option struct {
	Flag     string   // "checkpoint-interval" is --checkpoint-interval
	Env      string   // STREAMSEAL_ + the flag in upper snake case; empty: a flag only
	Commands []string // the commands that take it
	Required []string // those of Commands that refuse to start without it
	Unset    string   // what an empty default means ("off", "a throwaway cluster")
	Help     string   // what it does; lower case, no final period
	value    value    // the setter: parses into, resets, checks and renders one field
}

// Default is the default as a flag would be written ("1m", "auto-repair-capped"); "" when the
// default is empty (Unset says what that means).
func (o Option) Default() string { return o.value.defaultText() }

// Accepted are the values the option accepts, as help and errors show them ("10ms..1h",
// "auto-repair-capped or report-only"); "" when any value that parses is accepted.
func (o Option) Accepted() string { return o.value.accepted() }

// Type is the placeholder -h shows after the flag ("duration", "int"); "" for a switch.
func (o Option) Type() string { return o.value.Type() }

// Takes reports whether command takes the option.
func (o Option) Takes(command string) bool { return slices.Contains(o.Commands, command) }

// RequiredBy reports whether command refuses to start without the option.
func (o Option) RequiredBy(command string) bool { return slices.Contains(o.Required, command) }

// Usage is the option's -h text for command: help, then accepted values, whether it is required,
// its environment variable and its default.
func (o Option) Usage(command string) string {
	var parts []string
	if a := o.Accepted(); a != "" {
		parts = append(parts, a)
	}
	if o.RequiredBy(command) {
		parts = append(parts, "required")
	}
	if o.Env != "" {
		parts = append(parts, "env "+o.Env)
	}
	switch {
	case o.RequiredBy(command):
	case o.Default() != "":
		parts = append(parts, "default "+o.Default())
	case o.Unset != "":
		parts = append(parts, "default "+o.Unset)
	}
	if len(parts) == 0 {
		return o.Help
	}
	return o.Help + " (" + strings.Join(parts, "; ") + ")"
}

// Definitions are every option of every command, in the README's order.
func Definitions() []Option {
	var o Options
	return table(&o)
}

// For are the options command takes, in the README's order.
func For(command string) []Option {
	var out []Option
	for _, o := range Definitions() {
		if o.Takes(command) {
			out = append(out, o)
		}
	}
	return out
}

// RegisterFlags adds command's options to fs, bound to o's fields, with the environment's value
// (if set and not empty) as the default. Environment values that do not parse are returned as
// errors naming the variable.
func (o *Options) RegisterFlags(fs *flag.FlagSet, command string) error {
	var mine []Option
	for _, opt := range table(o) {
		if opt.Takes(command) {
			mine = append(mine, opt)
		}
	}
	return register(fs, mine, command)
}

// ValidateFor checks command's options: each required one is set and each set one is within
// the values it accepts. It returns one error per problem, each naming its flag.
func (o *Options) ValidateFor(command string) error {
	var errs []error
	for _, opt := range table(o) {
		switch {
		case !opt.Takes(command):
		case command == CommandAudit && o.Local && opt.Flag == "nats-url" && opt.value.empty():
			// audit --local compares projections with the store: no broker.
		case opt.RequiredBy(command) && opt.value.empty():
			or := ""
			if opt.Env != "" {
				or = " (or " + opt.Env + ")"
			}
			errs = append(errs, fmt.Errorf("--%s is required%s: %s", opt.Flag, or, opt.Help))
		default:
			errs = append(errs, opt.value.check("--"+opt.Flag))
		}
	}
	if slices.ContainsFunc(table(o), func(opt Option) bool { return opt.Flag == "nats-creds" && opt.Takes(command) }) {
		errs = append(errs, o.validateNATSSecurity(command))
	}
	return errors.Join(errs...)
}

// register applies the environment to opts and adds them to fs.
func register(fs *flag.FlagSet, opts []Option, command string) error {
	var errs []error
	for _, o := range opts {
		if v := os.Getenv(o.Env); o.Env != "" && v != "" {
			if err := o.value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %w", o.Env, v, err))
			}
		}
		fs.Var(o.value, o.Flag, o.Usage(command))
	}
	return errors.Join(errs...)
}

// table is every option bound to o's fields: the commands' own options, then Config's.
func table(o *Options) []Option {
	return append(commandOptions(o), tunables(&o.Config)...)
}

// commandOptions are the options of the commands that are not control plane tunables.
func commandOptions(o *Options) []Option {
	const (
		migrate, run, repair, audit, status, demo, bench = CommandMigrate, CommandRun, CommandRepair, CommandAudit, CommandStatus, CommandDemo, CommandBench
		quarantine, backfill                             = CommandQuarantine, CommandBackfill
	)
	tail := CommandTail
	service := []string{migrate, run, repair, backfill, audit, status, quarantine, tail}
	natsClients := []string{run, repair, backfill, audit}
	return []Option{
		{Flag: "database-url", Env: "STREAMSEAL_DATABASE_URL", Commands: service, Required: service,
			Help:  "this service's database, a PostgreSQL URL",
			value: text(&o.DatabaseURL, "")},
		{Flag: "database-url", Env: "STREAMSEAL_DATABASE_URL", Commands: []string{demo, bench},
			Unset: "a throwaway cluster",
			Help:  "a PostgreSQL server to create the scratch databases on (its role must be able to create databases)",
			value: text(&o.ScratchURL, "")},
		{Flag: "service", Env: "STREAMSEAL_SERVICE", Commands: []string{run},
			Unset: "the name the database already has",
			Help:  "this service's name, set once per database",
			value: serviceName(&o.Service)},
		{Flag: "nats-url", Env: "STREAMSEAL_NATS_URL", Commands: []string{run, repair, backfill, audit}, Required: []string{repair, backfill, audit},
			Unset: "run starts an embedded server",
			Help:  "the NATS server",
			value: text(&o.NATSURL, "")},
		{Flag: "nats-creds", Env: "STREAMSEAL_NATS_CREDS", Commands: natsClients,
			Unset: "none",
			Help:  "NATS credentials file (a user JWT and its NKey seed, as nsc writes them)",
			value: file(&o.NATS.CredsFile)},
		{Flag: "nats-nkey-seed", Env: "STREAMSEAL_NATS_NKEY_SEED", Commands: natsClients,
			Unset: "none",
			Help:  "file holding this service's NKey user seed (SU…), e.g. one `streamseal nats-config --out` wrote",
			value: file(&o.NATS.NKeySeedFile)},
		{Flag: "nats-user", Env: "STREAMSEAL_NATS_USER", Commands: natsClients,
			Unset: "none",
			Help:  "NATS user, with --nats-password",
			value: text(&o.NATS.User, "")},
		{Flag: "nats-password", Env: "STREAMSEAL_NATS_PASSWORD", Commands: natsClients,
			Unset: "none",
			Help:  "NATS password of --nats-user (prefer the environment variable: a flag shows in the process list)",
			value: secret(&o.NATS.Password)},
		{Flag: "nats-token", Env: "STREAMSEAL_NATS_TOKEN", Commands: natsClients,
			Unset: "none",
			Help:  "NATS authentication token (prefer the environment variable: a flag shows in the process list)",
			value: secret(&o.NATS.Token)},
		{Flag: "nats-tls-ca", Env: "STREAMSEAL_NATS_TLS_CA", Commands: natsClients,
			Unset: "the system's roots when TLS is on",
			Help:  "PEM file of the CA that signed the NATS server's certificate; setting any --nats-tls-* option turns TLS on",
			value: file(&o.NATS.TLSCAFile)},
		{Flag: "nats-tls-cert", Env: "STREAMSEAL_NATS_TLS_CERT", Commands: natsClients,
			Unset: "none",
			Help:  "PEM client certificate for a NATS server that requires one, with --nats-tls-key",
			value: file(&o.NATS.TLSCertFile)},
		{Flag: "nats-tls-key", Env: "STREAMSEAL_NATS_TLS_KEY", Commands: natsClients,
			Unset: "none",
			Help:  "PEM private key of --nats-tls-cert",
			value: file(&o.NATS.TLSKeyFile)},
		{Flag: "nats-tls-server-name", Env: "STREAMSEAL_NATS_TLS_SERVER_NAME", Commands: natsClients,
			Unset: "the URL's host",
			Help:  "the name the NATS server's certificate must carry",
			value: text(&o.NATS.TLSServerName, "")},
		{Flag: "nats-data-dir", Env: "STREAMSEAL_NATS_DATA_DIR", Commands: []string{run},
			Help:  "JetStream storage of the embedded NATS server started when --nats-url is empty",
			value: text(&o.NATSDataDir, NATSDataDirDefault)},
		{Flag: "consumes", Env: "STREAMSEAL_CONSUMES", Commands: []string{run},
			Unset: "none",
			Help:  "comma-separated event types this service consumes from any origin, of every tenant (added to streamseal.subscriptions)",
			value: list(&o.Consumes)},
		{Flag: "grant", Commands: []string{run},
			Unset: "none",
			Help:  "service=type1,type2@tenant1,tenant2, repeatable: let service receive these event types of these tenants in redelivery and audits (added to streamseal.grants; a bare @ is the single-tenant tenant)",
			value: grants(&o.Grants, false)},
		{Flag: "grant-all-tenants", Commands: []string{run},
			Unset: "none",
			Help:  "service=type1,type2, repeatable: let service receive these event types of every tenant in redelivery and audits (added to streamseal.grants)",
			value: grants(&o.Grants, true)},
		{Flag: "metrics-addr", Env: "STREAMSEAL_METRICS_ADDR", Commands: []string{run},
			Unset: "off",
			Help:  "serve /metrics, /healthz and /readyz on this address, e.g. :9464",
			value: text(&o.MetricsAddr, "")},
		{Flag: "feed-addr", Env: "STREAMSEAL_FEED_ADDR", Commands: []string{run},
			Unset: "off",
			Help:  "serve the application feed as Server-Sent Events on GET /feed?types=…&tenants=… here, e.g. :9465 (the SSE id is the resume token; reconnect with Last-Event-ID)",
			value: text(&o.FeedAddr, "")},
		{Flag: "start-timeout", Env: "STREAMSEAL_START_TIMEOUT", Commands: []string{run},
			Help:  "at start, retry an unreachable database or NATS with backoff for this long, writing nothing until both answer",
			value: durationIn(&o.StartTimeout, StartTimeoutDefault, time.Second, 24*time.Hour)},
		{Flag: "origin", Commands: []string{repair, audit}, Required: []string{repair},
			Unset: "audit: every known origin",
			Help:  "the origin service that repair asks, or the one origin audit audits",
			value: serviceName(&o.Origin)},
		{Flag: "types", Commands: []string{repair, backfill}, Required: []string{repair, backfill},
			Help:  "comma-separated event types to ask for",
			value: list(&o.Types)},
		{Flag: "types", Commands: []string{tail},
			Unset: "every type",
			Help:  "comma-separated event types to read",
			value: list(&o.Types)},
		{Flag: "tenant", Commands: []string{tail},
			Unset: "every tenant",
			Help:  "comma-separated tenants to read",
			value: list(&o.Tenants)},
		{Flag: "resume", Commands: []string{tail},
			Unset: "from the beginning of the store",
			Help:  "a resume token (the token of a printed line, an SSE id, feed.Subscriber.Token) to continue after",
			value: text(&o.Resume, "")},
		{Flag: "tenant", Commands: []string{repair}, Required: []string{repair},
			Help:  "comma-separated tenants to ask for",
			value: list(&o.Tenants)},
		{Flag: "from", Commands: []string{repair},
			Help:  "first origin_seq of the half-open window [from, to), 0 from the start",
			value: intAtLeast(&o.From, 0, 0)},
		{Flag: "to", Commands: []string{repair},
			Help:  "end of the half-open window [from, to), 0 for no end",
			value: intAtLeast(&o.To, 0, 0)},
		{Flag: "max-events", Commands: []string{repair},
			Help:  "the most events to ask for; the origin clamps it to its own cap",
			value: intAtLeast(&o.MaxEvents, RepairMaxEventsDefault, 1)},
		{Flag: "state-only", Commands: []string{repair},
			Unset: "off",
			Help:  "mark the re-delivered events state-only (backfill: build state, fire no triggers)",
			value: onOff(&o.StateOnly)},
		{Flag: "timeout", Commands: []string{repair, backfill},
			Help:  "give up after this long",
			value: durationAny(&o.Timeout, RepairTimeoutDefault)},
		{Flag: "full", Commands: []string{audit},
			Unset: "off",
			Help:  "compare the whole history from 0, not just the window above the seal",
			value: onOff(&o.Full)},
		{Flag: "local", Commands: []string{audit},
			Unset: "off",
			Help:  "run only the local coverage audit (projections against the store; needs no --nats-url), with the coverage caps and repair mode given",
			value: onOff(&o.Local)},
		{Flag: "json", Commands: []string{status, quarantine},
			Unset: "off",
			Help:  "print JSON for machines instead of a table",
			value: onOff(&o.JSON)},
		{Flag: "requeue", Commands: []string{quarantine},
			Unset: "off: list",
			Help:  "re-queue the quarantined events (--event-ids, or every one) for the relay to publish again, once their cause is fixed",
			value: onOff(&o.Requeue)},
		{Flag: "event-ids", Commands: []string{quarantine},
			Unset: "every quarantined event",
			Help:  "with --requeue: comma-separated event ids to re-queue",
			value: list(&o.EventIDs)},
		{Flag: "keep", Commands: []string{demo},
			Unset: "off",
			Help:  "after the verdict keep the three services running (a trickle of orders, billing still losing some) and serve their metrics until Ctrl-C",
			value: onOff(&o.Keep)},
		{Flag: "metrics-addr", Commands: []string{demo},
			Help:  "with --keep: orders' metrics address; billing and shipping take the next two ports (port 0: free ports)",
			value: text(&o.DemoMetricsAddr, DemoMetricsAddrDefault)},
		{Flag: "topology", Commands: []string{CommandNATSConfig}, Required: []string{CommandNATSConfig},
			Help:  "JSON file naming the services and what each consumes (origin, types, tenants), e.g. docker/nats/topology.json",
			value: file(&o.Topology)},
		{Flag: "out", Commands: []string{CommandNATSConfig},
			Unset: "user/password users, passwords read from nats-server's environment",
			Help:  "directory for one NKey user seed per service (<service>.nk, 0600; kept if present): the config then names NKey users",
			value: text(&o.SeedDir, "")},
		{Flag: "quick", Commands: []string{bench},
			Unset: "off",
			Help:  "run a smaller size",
			value: onOff(&o.Quick)},
		{Flag: "durable", Commands: []string{bench},
			Unset: "off: fsync, synchronous_commit and full-page writes off",
			Help:  "run the throwaway cluster durable (fsync, synchronous_commit and full-page writes on), as users run Postgres; ignored with --database-url",
			value: onOff(&o.Durable)},
		{Flag: "cpuprofile", Commands: []string{bench},
			Unset: "none",
			Help:  "write a Go CPU profile of the benchmark's run to this file (go tool pprof); the databases' own work is not in it",
			value: text(&o.CPUProfile, "")},
	}
}

// tunables are Config's options: the control plane's settings, taken by run and by audit (which
// runs one audit the way run would).
func tunables(c *Config) []Option {
	both := []string{CommandRun, CommandAudit}
	day := 24 * time.Hour
	retention := durationIn(&c.EventRetention, EventRetentionDefault, time.Hour, 365*day)
	retention.zeroMeans = "forever"
	return []Option{
		{Flag: "checkpoint-interval", Env: "STREAMSEAL_CHECKPOINT_INTERVAL", Commands: both,
			Help:  "how often the origin publishes a continuity checkpoint",
			value: durationIn(&c.CheckpointInterval, CheckpointIntervalDefault, 10*time.Millisecond, time.Hour)},
		{Flag: "liveness-intervals", Env: "STREAMSEAL_LIVENESS_INTERVALS", Commands: both,
			Help:  "checkpoint intervals of silence before an origin raises the liveness alarm",
			value: intIn(&c.LivenessIntervals, LivenessIntervalsDefault, 2, 100)},
		{Flag: "readiness-grace", Env: "STREAMSEAL_READINESS_GRACE", Commands: []string{CommandRun},
			Help:  "how long a deficit bucket may stay unhealed, or a confirmed gap unrepaired, before /readyz says degraded (a repair takes a cycle or two)",
			value: durationIn(&c.ReadinessGrace, ReadinessGraceDefault, 0, day)},
		{Flag: "maintenance-interval", Env: "STREAMSEAL_MAINTENANCE_INTERVAL", Commands: both,
			Help:  "how often epochs close, ephemeral events are reaped and liveness is checked",
			value: durationIn(&c.MaintenanceInterval, MaintenanceIntervalDefault, 10*time.Millisecond, day)},
		{Flag: "repair-mode", Env: "STREAMSEAL_REPAIR_MODE", Commands: both,
			Help:  "auto-repair-capped repairs confirmed gaps, capped; report-only records exactly what would be requested and sends nothing",
			value: oneOf(&c.RepairMode, RepairModeDefault, "mode", AutoRepairCapped, ReportOnly)},
		{Flag: "max-auto-repair-requests-per-checkpoint", Env: "STREAMSEAL_MAX_AUTO_REPAIR_REQUESTS_PER_CHECKPOINT", Commands: both,
			Help:  "repair requests sent per checkpoint round at most; the rest wait for the next",
			value: intIn(&c.MaxAutoRepairRequestsPerCheckpoint, MaxAutoRepairRequestsPerCheckpointDefault, 1, 10000)},
		{Flag: "repair-retry-after", Env: "STREAMSEAL_REPAIR_RETRY_AFTER", Commands: both,
			Help:  "the repair ledger's backoff base: a bucket's k-th repair request waits base x 2^(k-1)",
			value: durationIn(&c.RepairRetryAfter, RepairRetryAfterDefault, 10*time.Millisecond, day)},
		{Flag: "repair-answer-grace", Env: "STREAMSEAL_REPAIR_ANSWER_GRACE", Commands: []string{CommandRun},
			Help:  "how long after a repair answer's summary its bundles are still stored, in scope, unless the lane's history changed since the ask (replicas share the control durable: another may handle the summary first); the default covers the control consumer's redelivery horizon",
			value: durationIn(&c.RepairAnswerGrace, RepairAnswerGraceDefault, time.Millisecond, day)},
		{Flag: "epoch-width", Env: "STREAMSEAL_EPOCH_WIDTH", Commands: both,
			Help:  "origin_seq width of a new lane's epochs, pinned at its first close",
			value: intIn(&c.EpochWidth, EpochWidthDefault, 1, 1_000_000_000)},
		{Flag: "settle-window", Env: "STREAMSEAL_SETTLE_WINDOW", Commands: both,
			Help:  "how long an arrival stays unsettled and keeps its epoch open",
			value: durationIn(&c.SettleWindow, SettleWindowDefault, 0, 7*day)},
		{Flag: "stall-limit", Env: "STREAMSEAL_STALL_LIMIT", Commands: both,
			Help:  "how long a blocked epoch waits before one is forced closed per maintenance run",
			value: durationIn(&c.StallLimit, StallLimitDefault, 0, 7*day)},
		{Flag: "ephemeral-grace", Env: "STREAMSEAL_EPHEMERAL_GRACE", Commands: both,
			Help:  "how long ephemeral events are kept before the maintenance job reaps them (an origin's own only once a checkpoint covered them, and never while a repair request holds them)",
			value: durationIn(&c.EphemeralGrace, EphemeralGraceDefault, 0, 365*day)},
		{Flag: "destruction-hold-limit", Env: "STREAMSEAL_DESTRUCTION_HOLD_LIMIT", Commands: both,
			Help:  "how long a repair request naming ephemeral events keeps the reaper off them if it is not served first",
			value: durationIn(&c.Redelivery.HoldLimit, DestructionHoldLimitDefault, time.Millisecond, 7*day)},
		{Flag: "max-events-per-request", Env: "STREAMSEAL_MAX_EVENTS_PER_REQUEST", Commands: both,
			Help:  "the most events one redelivery request is served",
			value: intIn(&c.Redelivery.MaxEventsPerRequest, MaxEventsPerRequestDefault, 1, 1_000_000)},
		{Flag: "backfill-serve-share", Env: "STREAMSEAL_BACKFILL_SERVE_SHARE", Commands: []string{CommandRun},
			Help:  "percent of this origin's time a backfill's answer may work: after each page it waits (100 - share) / share times the page's work, counted at the cheapest rate per event of the answer's pages so far (a page's wait for the CPU is not paused for again) (100: unpaced), so a backfill yields to live traffic as much as its work takes from it; plain repairs are never paced",
			value: intIn(&c.Redelivery.BackfillShare, BackfillServeShareDefault, 1, 100)},
		{Flag: "event-retention", Env: "STREAMSEAL_EVENT_RETENTION", Commands: both,
			Help: "how long JetStream keeps events; repairs come from the origin's store, so the broker needs only what in-flight deliveries and restarts need. " +
				"Every service applies it to the shared stream at start: set the same value everywhere",
			value: retention},
		{Flag: "full-sweep-cron", Env: "STREAMSEAL_FULL_SWEEP_CRON", Commands: both,
			Help:  "daily sweep schedule \"M H * * *\" (UTC); the default's minute is the service's splay; anything else falls back to every nth audit",
			value: text(&c.FullSweepCron, FullSweepCronDefault)},
		{Flag: "full-sweep-every-nth-audit", Env: "STREAMSEAL_FULL_SWEEP_EVERY_NTH_AUDIT", Commands: both,
			Help:  "without a registrable cron, every nth audit is a sweep",
			value: intIn(&c.FullSweepEveryNthAudit, FullSweepEveryNthAuditDefault, 1, 1000)},
		{Flag: "audit-interval", Env: "STREAMSEAL_AUDIT_INTERVAL", Commands: both,
			Help:  "how often the deep audit runs after the first",
			value: durationIn(&c.AuditInterval, AuditIntervalDefault, 10*time.Millisecond, 30*day)},
		{Flag: "startup-audit-max-jitter", Env: "STREAMSEAL_STARTUP_AUDIT_MAX_JITTER", Commands: both,
			Help:  "the first audit runs 30s plus up to this much after start",
			value: durationIn(&c.StartupAuditMaxJitter, StartupAuditMaxJitterDefault, 0, time.Hour)},
		{Flag: "max-auto-repair-requests-per-audit", Env: "STREAMSEAL_MAX_AUTO_REPAIR_REQUESTS_PER_AUDIT", Commands: both,
			Help:  "repair requests one audit sends at most",
			value: intIn(&c.MaxAutoRepairRequestsPerAudit, MaxAutoRepairRequestsPerAuditDefault, 1, 10000)},
		{Flag: "max-auto-rebuilds-per-audit", Env: "STREAMSEAL_MAX_AUTO_REBUILDS_PER_AUDIT", Commands: both,
			Help:  "projection streams one coverage audit resets and replays at most (report-only: would rebuild); the rest wait for later audits",
			value: intIn(&c.MaxAutoRebuildsPerAudit, MaxAutoRebuildsPerAuditDefault, 0, 100000)},
		{Flag: "max-coverage-gap-reports-per-audit", Env: "STREAMSEAL_MAX_COVERAGE_GAP_REPORTS_PER_AUDIT", Commands: both,
			Help:  "coverage findings one coverage audit records at most (every gap is counted)",
			value: intIn(&c.MaxCoverageGapReportsPerAudit, MaxCoverageGapReportsPerAuditDefault, 1, 100000)},
		{Flag: "max-drill-down-types-per-audit", Env: "STREAMSEAL_MAX_DRILL_DOWN_TYPES_PER_AUDIT", Commands: both,
			Help:  "mismatched types one audit drills into per origin",
			value: intIn(&c.MaxDrillDownTypesPerAudit, MaxDrillDownTypesPerAuditDefault, 1, 10000)},
		{Flag: "max-digests-per-manifest", Env: "STREAMSEAL_MAX_DIGESTS_PER_MANIFEST", Commands: both,
			Help:  "digests per manifest chunk",
			value: intIn(&c.MaxDigestsPerManifest, MaxDigestsPerManifestDefault, 1, 100000)},
		{Flag: "divergence-report-cooldown", Env: "STREAMSEAL_DIVERGENCE_REPORT_COOLDOWN", Commands: both,
			Help:  "an unchanged divergence is re-reported once per this",
			value: durationIn(&c.DivergenceReportCooldown, DivergenceReportCooldownDefault, 10*time.Millisecond, 7*day)},
		{Flag: "backfill-on-growth", Env: "STREAMSEAL_BACKFILL_ON_GROWTH", Commands: []string{CommandRun},
			Help:  "on: a type consumed after the first start (a restart or subscribe at run time) is backfilled by one broadcast state-only request; off: it stays pending (status shows it, the audit says pending_backfill)",
			value: oneOf(&c.BackfillOnGrowth, BackfillOnGrowthDefault, "on|off", BackfillOn, BackfillOff)},
		{Flag: "backfill-serve-copies", Env: "STREAMSEAL_BACKFILL_SERVE_COPIES", Commands: []string{CommandRun},
			Help:  "on: answer other services' backfills also with the copies this service holds of other origins' events (under this service's grants; the consumer keeps one copy per event id); off: answer with its own events only (every holder answering multiplies a backfill's wire cost)",
			value: oneOf(&c.BackfillServeCopies, BackfillServeCopiesDefault, "on|off", BackfillOn, BackfillOff)},
		{Flag: "backfill-reask-after", Env: "STREAMSEAL_BACKFILL_REASK_AFTER", Commands: []string{CommandRun},
			Help:  "a backfill broadcast no origin answered, or an origin's answer that made no progress (its follow-up or summary lost), is asked again after this; a stalled answer backs off to 16 times it",
			value: durationIn(&c.BackfillReaskAfter, BackfillReaskAfterDefault, 10*time.Millisecond, 7*day)},
		{Flag: "max-repair-attempts-per-bucket", Env: "STREAMSEAL_MAX_REPAIR_ATTEMPTS_PER_BUCKET", Commands: both,
			Help:  "after this many requests a bucket's backoff stays at its slowest rung and it alarms as exhausted",
			value: intIn(&c.MaxRepairAttemptsPerBucket, MaxRepairAttemptsPerBucketDefault, 1, 100)},
	}
}
