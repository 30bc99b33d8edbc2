// Package harness runs several streamseal services in one process over the real wire: an
// embedded NATS server with JetStream, one PostgreSQL database per service, and each service's
// node (package node: the same wiring the run command starts). Tests and the demo use it; fault injection sits at real seams (the
// inbox's receive seam, the control endpoint's tap), never inside the logic.
package harness

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/inbox"
	"github.com/streamseal/streamseal/controlplane/node"
	"github.com/streamseal/streamseal/controlplane/redelivery"
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
	if err := wire.EnsureStreams(ctx, js, config.Defaults().EventRetention); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// RestartNATS shuts the NATS server down and starts it again on the same port and store: every
// client loses its connection and must reconnect (a broker restart).
func (h *Harness) RestartNATS() error {
	port := h.NATS.Port()
	h.NATS.Shutdown()
	srv, err := wire.StartEmbeddedOn(h.natsDir, port)
	if err != nil {
		return err
	}
	h.NATS = srv
	return nil
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
	// Tenants, when set, scopes Consumes and Grants to these tenants; unset, both cover every
	// tenant (said explicitly: store.AllTenants).
	Tenants  []string
	Suppress inbox.Suppress // fault injection at the inbox's receive seam
	Limits   redelivery.Limits
	Settings config.Config // zero: defaults with a slow checkpoint, so tests that do not
	// exercise checkpoints are not disturbed by them
	NoRelay bool // the test runs (and kills) the relay itself
}

// Service is one running service: a node with its own database and NATS connection.
type Service struct {
	*node.Node
	stopOnce sync.Once
}

// Start creates the service's database, configures it, and starts its node. configure runs
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
	if err := configureDatabase(ctx, pool, name, opts); err != nil {
		pool.Close()
		return nil, err
	}
	return h.startNode(ctx, name, pool, opts, configure)
}

func (h *Harness) startNode(ctx context.Context, name string, pool *pgxpool.Pool, opts Options, configure func(*Service)) (*Service, error) {
	nc, err := wire.Connect(h.NATS.URL(), name, h.logger)
	if err != nil {
		pool.Close()
		return nil, err
	}
	settings := opts.Settings
	if settings == (config.Config{}) {
		settings = config.Defaults()
		settings.CheckpointInterval = time.Hour
		settings.MaintenanceInterval = time.Hour
		settings.AuditInterval = 30 * 24 * time.Hour
	}
	if opts.Limits != (redelivery.Limits{}) {
		settings.Redelivery = redelivery.WithDefaults(opts.Limits)
	}
	n, err := node.New(node.Config{Service: name, Pool: pool, NC: nc, Logger: h.logger, Settings: settings,
		Suppress: opts.Suppress, NoRelay: opts.NoRelay})
	if err != nil {
		nc.Close()
		pool.Close()
		return nil, err
	}
	s := &Service{Node: n}
	if configure != nil {
		configure(s)
	}
	if err := n.Start(context.WithoutCancel(ctx)); err != nil {
		nc.Close()
		pool.Close()
		return nil, err
	}
	h.mu.Lock()
	h.services = append(h.services, s)
	h.mu.Unlock()
	return s, nil
}

// StartOn starts another node on of's database (a second replica of the same service, or a
// restart after of was stopped), with its own pool and NATS connection.
func (h *Harness) StartOn(ctx context.Context, of *Service, opts Options, configure func(*Service)) (*Service, error) {
	pool, err := store.Open(ctx, of.Pool.Config().ConnString())
	if err != nil {
		return nil, err
	}
	return h.startNode(ctx, of.Name, pool, opts, configure)
}

func configureDatabase(ctx context.Context, pool *pgxpool.Pool, name string, opts Options) error {
	if err := store.ServiceNameSet(ctx, pool, name); err != nil {
		return err
	}
	scope := store.AllTenants()
	if len(opts.Tenants) > 0 {
		scope = store.Tenants(opts.Tenants...)
	}
	if len(opts.Consumes) > 0 {
		if err := store.SubscriptionsAdd(ctx, pool, "", opts.Consumes, scope); err != nil {
			return fmt.Errorf("subscribe %s: %w", name, err)
		}
	}
	for service, types := range opts.Grants {
		if err := store.GrantsAdd(ctx, pool, service, types, scope); err != nil {
			return fmt.Errorf("grant %s to %s: %w", types, service, err)
		}
	}
	return nil
}

// Stop stops the service's node and closes its connections.
func (s *Service) Stop() {
	s.stopOnce.Do(func() {
		s.Node.Stop()
		s.NC.Close()
		s.Pool.Close()
	})
}
