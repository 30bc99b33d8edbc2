// Package harness runs several streamseal services in one process over the real wire: an
// embedded NATS server with JetStream, one PostgreSQL database per service, and each service's
// loops (stamper, relay, inbox, control endpoint, redelivery server, repair receiver) as the
// run command wires them. Tests and the demo use it; fault injection sits at real seams (the
// inbox's receive seam, the control endpoint's tap), never inside the logic.
package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/inbox"
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/relay"
	"github.com/streamseal/streamseal/controlplane/repair"
	"github.com/streamseal/streamseal/controlplane/stamper"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// NewDatabase returns the URL of a fresh, migrated database for a service.
type NewDatabase func(ctx context.Context, service string) (string, error)

// Harness owns the embedded NATS server and the services started on it.
type Harness struct {
	NATS     *wire.Embedded
	newDB    NewDatabase
	logger   *slog.Logger
	natsDir  string
	mu       sync.Mutex
	services []*Service
}

// New starts an embedded NATS server (JetStream in a temp dir) and creates the streams.
func New(ctx context.Context, newDB NewDatabase, logger *slog.Logger) (*Harness, error) {
	if logger == nil {
		logger = slog.Default()
	}
	dir, err := os.MkdirTemp("", "streamseal-nats-")
	if err != nil {
		return nil, err
	}
	srv, err := wire.StartEmbedded(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h := &Harness{NATS: srv, newDB: newDB, logger: logger, natsDir: dir}
	nc, err := wire.Connect(srv.URL(), "harness", logger)
	if err != nil {
		h.Close()
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		h.Close()
		return nil, err
	}
	if err := wire.EnsureStreams(ctx, js); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Close stops every service, then the NATS server, and removes its data.
func (h *Harness) Close() {
	h.mu.Lock()
	services := h.services
	h.services = nil
	h.mu.Unlock()
	for _, s := range services {
		s.Stop()
	}
	h.NATS.Shutdown()
	os.RemoveAll(h.natsDir)
}

// Options configure one service before it starts.
type Options struct {
	Consumes []string // event types subscribed to, from any origin
	Grants   map[string][]string
	Suppress inbox.Suppress // fault injection at the inbox's receive seam
	Limits   redelivery.Limits
}

// Service is one running service.
type Service struct {
	Name       string
	Pool       *pgxpool.Pool
	NC         *nats.Conn
	JS         jetstream.JetStream
	Seam       *wire.Seam
	Control    *wire.Control
	Inbox      *inbox.Inbox
	Relay      *relay.Relay
	Redelivery *redelivery.Server
	Repair     *repair.Receiver

	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
}

// Start creates the service's database, configures it, and starts its loops. configure runs
// after the components exist and before any loop starts (set hooks there).
func (h *Harness) Start(ctx context.Context, name string, opts Options, configure func(*Service)) (*Service, error) {
	url, err := h.newDB(ctx, name)
	if err != nil {
		return nil, err
	}
	pool, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	s := &Service{Name: name, Pool: pool, errs: make(chan error, 8)}
	if err := s.configureDatabase(ctx, opts); err != nil {
		pool.Close()
		return nil, err
	}
	if s.NC, err = wire.Connect(h.NATS.URL(), name, h.logger); err != nil {
		pool.Close()
		return nil, err
	}
	if s.JS, err = jetstream.New(s.NC); err != nil {
		s.NC.Close()
		pool.Close()
		return nil, err
	}
	logger := h.logger.With("service", name)
	s.Seam = &wire.Seam{Self: name, Logger: logger}
	s.Control = &wire.Control{JS: s.JS, Seam: s.Seam, Logger: logger}
	s.Inbox = &inbox.Inbox{Pool: pool, JS: s.JS, Service: name, Logger: logger, Suppress: opts.Suppress}
	s.Relay = &relay.Relay{Pool: pool, JS: s.JS, Logger: logger}
	s.Redelivery = &redelivery.Server{Pool: pool, JS: s.JS, Service: name, Limits: opts.Limits, Logger: logger}
	s.Repair = &repair.Receiver{Pool: pool, Service: name, Logger: logger}
	if configure != nil {
		configure(s)
	}
	s.Redelivery.Register(s.Control)
	s.Repair.Register(s.Control)

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.goRun(runCtx, "stamper", (&stamper.Loop{Pool: pool, Logger: logger}).Run)
	s.goRun(runCtx, "relay", s.Relay.Run)
	s.goRun(runCtx, "inbox", s.Inbox.Run)
	s.goRun(runCtx, "control", s.Control.Run)
	s.goRun(runCtx, "redelivery", s.Redelivery.Run)

	h.mu.Lock()
	h.services = append(h.services, s)
	h.mu.Unlock()
	return s, nil
}

func (s *Service) configureDatabase(ctx context.Context, opts Options) error {
	if err := store.SetServiceName(ctx, s.Pool, s.Name); err != nil {
		return err
	}
	if len(opts.Consumes) > 0 {
		if _, err := s.Pool.Exec(ctx, "select streamseal.subscribe($1)", opts.Consumes); err != nil {
			return fmt.Errorf("subscribe %s: %w", s.Name, err)
		}
	}
	for service, types := range opts.Grants {
		if _, err := s.Pool.Exec(ctx, "select streamseal.grant_redelivery($1, $2)", service, types); err != nil {
			return fmt.Errorf("grant %s to %s: %w", types, service, err)
		}
	}
	return nil
}

func (s *Service) goRun(ctx context.Context, what string, run func(context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.errs <- fmt.Errorf("%s %s: %w", s.Name, what, err)
		}
	}()
}

// Err returns the first loop failure, if any loop has failed.
func (s *Service) Err() error {
	select {
	case err := <-s.errs:
		return err
	default:
		return nil
	}
}

// Stop cancels the service's loops, waits for them, and closes its connections.
func (s *Service) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.wg.Wait()
	s.cancel = nil
	s.NC.Close()
	s.Pool.Close()
}
