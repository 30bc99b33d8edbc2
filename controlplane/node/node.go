// Package node wires one service's control plane: the loops `streamseal run` starts (stamper,
// relay, inbox, control endpoint with the redelivery server and the repair receiver) over one
// database pool and one NATS connection. The harness starts several nodes in one process; the
// run command starts one. It owns the wiring and the lifetimes, no rule of its own.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/riverqueue/river"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/backfill"
	"github.com/streamseal/streamseal/controlplane/checkpoint"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/inbox"
	"github.com/streamseal/streamseal/controlplane/jobs"
	"github.com/streamseal/streamseal/controlplane/metrics"
	"github.com/streamseal/streamseal/controlplane/projections"
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/relay"
	"github.com/streamseal/streamseal/controlplane/stamper"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Config is what a node needs.
type Config struct {
	Service  string
	Pool     *pgxpool.Pool
	NC       *nats.Conn
	Logger   *slog.Logger
	Settings config.Config // zero value: config.Defaults()
	// Suppress injects loss at the inbox's receive seam (tests and the demo only).
	Suppress inbox.Suppress
	// NoRelay leaves the relay to the caller (a test that kills and restarts it).
	NoRelay bool
}

// Node is one service's running control plane.
type Node struct {
	Name       string
	Pool       *pgxpool.Pool
	NC         *nats.Conn
	JS         jetstream.JetStream
	Seam       *wire.Seam
	Control    *wire.Control
	Inbox      *inbox.Inbox
	Relay      *relay.Relay
	Redelivery *redelivery.Server
	Repair     *redelivery.Receiver
	Publisher  *checkpoint.Publisher
	Verifier   *checkpoint.Verifier
	Manifest   *audit.ManifestServer
	Auditor    *audit.Auditor
	Backfill   *backfill.Loop
	// Projections runs the SQL projections and reactors registered in the store.
	Projections *projections.Runner
	Metrics     *metrics.Exporter
	River       *river.Client[pgx.Tx]

	settings config.Config
	noRelay  bool
	logger   *slog.Logger
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	errs     chan error
}

// New builds a node's components without starting them; adjust hooks, then call Start.
func New(cfg Config) (*Node, error) {
	// An asynchronous publish nobody answers (a stray subscriber on a subject whose stream is
	// gone) is given up after the relay's AckWait: unanswered publishes never pile up to the
	// client's cap on pending ones, where every later publish would stall.
	js, err := jetstream.New(cfg.NC, jetstream.WithPublishAsyncTimeout(relay.AckWaitDefault))
	if err != nil {
		return nil, fmt.Errorf("JetStream for %s: %w", cfg.Service, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("service", cfg.Service)
	settings := cfg.Settings
	if settings == (config.Config{}) {
		settings = config.Defaults()
	}
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	n := &Node{Name: cfg.Service, Pool: cfg.Pool, NC: cfg.NC, JS: js, settings: settings, noRelay: cfg.NoRelay, logger: logger, errs: make(chan error, 8)}
	// The exporter first: its counters read the components below at scrape time, and its
	// instruments are handed to them.
	n.Metrics = metrics.New(cfg.Pool, cfg.NC, metrics.Sources{
		InboxStored:                func() int64 { return n.Inbox.Counts().Stored },
		InboxSuppressed:            func() int64 { return n.Inbox.Counts().Suppressed },
		InboxRejected:              func() int64 { return n.Inbox.Counts().Rejected },
		CheckpointsPublished:       func() int64 { return n.Publisher.Published() },
		CheckpointsReceived:        func() int64 { r, _, _ := n.Verifier.Counts(); return r },
		GapsDetected:               func() int64 { _, g, _ := n.Verifier.Counts(); return g },
		RedeliveryRequestsReceived: func() int64 { r, _, _ := n.Redelivery.Counts(); return r },
		RedeliveryRefused:          func() int64 { _, f, _ := n.Redelivery.Counts(); return f },
		RedeliveryEventsShipped:    func() int64 { _, _, s := n.Redelivery.Counts(); return s },
		ManifestsAnswered:          func() int64 { a, _ := n.Manifest.Counts(); return a },
		ManifestChunksSent:         func() int64 { _, c := n.Manifest.Counts(); return c },
		SeamDropped:                func() map[string]int64 { return n.Seam.Dropped() },
	})
	n.Metrics.Grace = settings.ReadinessGrace
	ins := n.Metrics.Instruments
	n.Seam = &wire.Seam{Self: cfg.Service, Logger: logger}
	n.Control = &wire.Control{JS: js, Seam: n.Seam, Logger: logger,
		OnDead: func(_ wire.Envelope, reason string) { ins.DeadMessage("control", reason) }}
	n.Inbox = &inbox.Inbox{Pool: cfg.Pool, JS: js, Service: cfg.Service, Logger: logger, Suppress: cfg.Suppress, Metrics: ins}
	n.Relay = &relay.Relay{Pool: cfg.Pool, JS: js, Logger: logger, Metrics: ins}
	n.Redelivery = &redelivery.Server{Pool: cfg.Pool, JS: js, Service: cfg.Service, Limits: settings.Redelivery, Logger: logger, Metrics: ins,
		ServeCopies: settings.BackfillServeCopies == config.BackfillOn}
	n.Repair = &redelivery.Receiver{Pool: cfg.Pool, JS: js, Service: cfg.Service, Logger: logger, Metrics: ins, AcceptUnservable: true,
		AnswerGrace: settings.RepairAnswerGrace}
	n.Publisher = &checkpoint.Publisher{Pool: cfg.Pool, JS: js, Service: cfg.Service, Interval: settings.CheckpointInterval, Logger: logger}
	n.Verifier = &checkpoint.Verifier{Pool: cfg.Pool, JS: js, Service: cfg.Service, Config: settings, Logger: logger, Metrics: ins,
		Started: time.Now()}
	n.Inbox.OnCheckpoint = n.Verifier.VerifyRun
	n.Inbox.OnBeat = n.Verifier.Beat
	n.Manifest = &audit.ManifestServer{Pool: cfg.Pool, JS: js, Service: cfg.Service, MaxDigests: settings.MaxDigestsPerManifest, Logger: logger, Metrics: ins}
	n.Auditor = &audit.Auditor{Pool: cfg.Pool, JS: js, Service: cfg.Service, Config: settings, Logger: logger, Metrics: ins,
		Limits: audit.Limits{MaxDrillDownTypes: settings.MaxDrillDownTypesPerAudit, MaxDigests: settings.MaxDigestsPerManifest,
			MaxRequests: settings.MaxAutoRepairRequestsPerAudit}}
	n.Backfill = &backfill.Loop{Pool: cfg.Pool, JS: js, Service: cfg.Service, Enabled: settings.BackfillOnGrowth == config.BackfillOn,
		ReaskAfter: settings.BackfillReaskAfter, MaxEvents: settings.Redelivery.MaxEventsPerRequest, Logger: logger, Metrics: ins}
	n.Projections = &projections.Runner{Pool: cfg.Pool, Logger: logger}
	client, err := jobs.NewClient(cfg.Pool, settings, n.Publisher, n.Verifier, n.Auditor, n.Metrics.Refresh, logger)
	if err != nil {
		return nil, err
	}
	n.River = client
	return n, nil
}

// Start runs the node's loops until Stop (or ctx's end). It ensures the JetStream streams first.
// A payload limit (streamseal.limits) the connected broker cannot carry with the envelope is
// refused first: an event at that limit would be stored and never published.
func (n *Node) Start(ctx context.Context) error {
	limits, err := store.LimitsGet(ctx, n.Pool)
	if err != nil {
		return err
	}
	if err := wire.CheckPayloadLimit(limits.MaxPayloadBytes, limits.MaxIDBytes, limits.MaxMetadataBytes, n.NC.MaxPayload()); err != nil {
		return err
	}
	if err := wire.EnsureStreams(ctx, n.JS, n.settings.EventRetention); err != nil {
		return err
	}
	n.Redelivery.Register(n.Control)
	n.Repair.Register(n.Control)
	n.Manifest.Register(n.Control)
	n.Auditor.Register(n.Control)
	// The consumed-type registry first: a starting control plane takes the first baseline, and a
	// type consumed since the last start is an expansion whose backfill goes out now.
	if err := n.Backfill.Start(ctx); err != nil {
		return fmt.Errorf("backfill at start: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	n.cancel = cancel
	// The leading relay stamps as it publishes; the standalone stamper stands aside meanwhile
	// and numbers events whenever this replica does not lead (or runs no relay).
	n.goRun(runCtx, "stamper", (&stamper.Loop{Pool: n.Pool, Logger: n.logger, Metrics: n.Metrics.Instruments, Yield: n.Relay.Stamping}).Run)
	if !n.noRelay {
		n.goRun(runCtx, "relay", n.Relay.Run)
	}
	n.goRun(runCtx, "inbox", n.Inbox.Run)
	n.goRun(runCtx, "control", n.Control.Run)
	n.goRun(runCtx, "redelivery", n.Redelivery.Run)
	n.goRun(runCtx, "backfill", n.Backfill.Run)
	n.goRun(runCtx, "projections", n.Projections.Run)
	if err := n.River.Start(runCtx); err != nil {
		cancel()
		return fmt.Errorf("start River: %w", err)
	}
	return nil
}

func (n *Node) goRun(ctx context.Context, what string, run func(context.Context) error) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			n.errs <- fmt.Errorf("%s %s: %w", n.Name, what, err)
		}
	}()
}

// Err returns a loop's failure, if one has failed.
func (n *Node) Err() error {
	select {
	case err := <-n.errs:
		return err
	default:
		return nil
	}
}

// Wait blocks until every loop has returned.
func (n *Node) Wait() { n.wg.Wait() }

// Stop stops River (letting running jobs finish), cancels the loops and waits for them. The pool
// and connection stay the caller's.
func (n *Node) Stop() {
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.River.Stop(stopCtx); err != nil {
		n.logger.Warn("node: River did not stop cleanly", "err", err)
	}
	if n.cancel != nil {
		n.cancel()
	}
	n.wg.Wait()
}
