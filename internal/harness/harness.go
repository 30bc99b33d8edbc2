// Package harness runs several streamseal services in one process over the real wire: an
// embedded NATS server with JetStream, one PostgreSQL database per service, and each service's
// node (package node: the same wiring the run command starts). Tests and the demo use it; fault injection sits at real seams (the
// inbox's receive seam, the control endpoint's tap), never inside the logic.
package harness

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/inbox"
	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/controlplane/node"
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/testcerts"
)

// NewDatabase returns the URL of a fresh, migrated database for a service.
type NewDatabase func(ctx context.Context, service string) (string, error)

// Harness owns the embedded NATS server and the services started on it.
type Harness struct {
	NATS      *wire.Embedded
	newDB     NewDatabase
	logger    *slog.Logger
	natsDir   string
	auth      wire.EmbeddedAuth // NewSecured's users; empty: an open server
	passwords map[string]string // by user; nil: an open server
	certs     *testcerts.Certs  // NewSecured's TLS files; nil: plain connections
	mu        sync.Mutex
	services  []*Service
}

// New starts an embedded NATS server (JetStream in a temp dir) and creates the streams.
func New(ctx context.Context, newDB NewDatabase, logger *slog.Logger) (*Harness, error) {
	return start(ctx, newDB, logger, nil, false)
}

// NewSecured is New with authorization on: one user per service of topo, with the permissions
// package natsauth generates, and an admin user that creates the streams. Each service Start
// starts connects as its own user (a service topo does not name cannot connect). With withTLS
// the server is TLS-only and requires client certificates (throwaway ones, package testcerts),
// which every connection presents.
func NewSecured(ctx context.Context, newDB NewDatabase, logger *slog.Logger, topo natsauth.Topology, withTLS bool) (*Harness, error) {
	if err := topo.Validate(); err != nil {
		return nil, fmt.Errorf("harness topology: %w", err)
	}
	return start(ctx, newDB, logger, &topo, withTLS)
}

func start(ctx context.Context, newDB NewDatabase, logger *slog.Logger, topo *natsauth.Topology, withTLS bool) (*Harness, error) {
	if logger == nil {
		logger = slog.Default()
	}
	dir, err := os.MkdirTemp("", "streamseal-nats-")
	if err != nil {
		return nil, err
	}
	h := &Harness{newDB: newDB, logger: logger, natsDir: dir}
	admin := wire.Security{}
	if topo != nil {
		h.passwords = map[string]string{}
		for _, name := range topo.Names() {
			h.passwords[name] = "harness-" + name + "-" + uuid.NewString()
		}
		h.auth = wire.EmbeddedAuth{Users: topo.Users(natsauth.AdminUser, h.passwords)}
	}
	if withTLS {
		if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o700); err != nil {
			return nil, err
		}
		if h.certs, err = testcerts.Write(filepath.Join(dir, "certs")); err != nil {
			return nil, err
		}
		if h.auth.TLS, err = h.certs.ServerTLS(); err != nil {
			return nil, err
		}
		h.auth.TLSVerify = true
	}
	if topo != nil {
		admin = h.security(natsauth.AdminUser)
	}
	srv, err := wire.StartEmbeddedSecured(dir, server.RANDOM_PORT, h.auth)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h.NATS = srv
	nc, err := wire.Connect(srv.URL(), "harness", admin, logger)
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

// Security is how service connects to this harness's server (an operator's command connects as
// the service's own user on a secured harness).
func (h *Harness) Security(service string) wire.Security { return h.security(service) }

// security is how service connects: as its own user on a secured harness, openly otherwise.
func (h *Harness) security(service string) wire.Security {
	var sec wire.Security
	if h.passwords != nil {
		sec = wire.Security{User: service, Password: h.passwords[service]}
	}
	if h.certs != nil {
		sec.TLSCAFile, sec.TLSCertFile, sec.TLSKeyFile = h.certs.CAFile, h.certs.ClientCertFile, h.certs.ClientKeyFile
	}
	return sec
}

// RestartNATS shuts the NATS server down and starts it again on the same port and store: every
// client loses its connection and must reconnect (a broker restart).
func (h *Harness) RestartNATS() error {
	port := h.NATS.Port()
	h.NATS.Shutdown()
	srv, err := wire.StartEmbeddedSecured(h.natsDir, port, h.auth)
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
	// DatabaseUser, when set, is the login role the service connects as (its database URL with
	// the user replaced), for everything it does: configuring and running. The database itself
	// was migrated by the URL's own user, its owner (`migrate` as owner, `run` as, e.g., a role
	// granted only streamseal_control).
	DatabaseUser string
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
	if opts.DatabaseUser != "" {
		if url, err = withUser(url, opts.DatabaseUser); err != nil {
			return nil, err
		}
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
	nc, err := wire.Connect(h.NATS.URL(), name, h.security(name), h.logger)
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
		// The first audit still comes 30 s after start plus a random splay: the longest splay
		// keeps it out of a scenario's few seconds (one at 30-330 s repaired losses a redelivery
		// test meant to keep, once load stretched it past half a minute).
		settings.StartupAuditMaxJitter = time.Hour
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

// withUser returns databaseURL connecting as user instead of its own user.
func withUser(databaseURL, user string) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", fmt.Errorf("database URL: %w", err)
	}
	q := u.Query()
	q.Del("user")
	q.Del("password")
	u.RawQuery = q.Encode()
	u.User = url.User(user)
	return u.String(), nil
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
