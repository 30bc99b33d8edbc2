package natstest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/testcerts"
	"github.com/streamseal/streamseal/internal/testrun"
)

// AdminUser is the administrative user of a secured server: Server.JS and Server.Connect use it.
const AdminUser = "natstest-admin"

// SecuredOptions configure StartSecured.
type SecuredOptions struct {
	// TLS makes the listener TLS-only and requires a client certificate signed by Certs' CA.
	TLS bool
}

// StartSecured is Start with authorization on: one user per service of topo, with the
// permissions package natsauth computes for it, and an admin user for the test's own setup and
// recording (s.JS, s.Connect). Security(service) gives a service's credentials (and, with
// opts.TLS, the CA and a client certificate).
func StartSecured(t testing.TB, topo natsauth.Topology, opts SecuredOptions) *Server {
	t.Helper()
	if err := topo.Validate(); err != nil {
		t.Fatalf("topology: %v", err)
	}
	passwords := map[string]string{AdminUser: "pw-" + AdminUser}
	for _, svc := range topo.Services {
		passwords[svc.Name] = "pw-" + svc.Name
	}
	auth := wire.EmbeddedAuth{Users: topo.Users(AdminUser, passwords)}
	var certs *Certs
	if opts.TLS {
		certs = NewCerts(t)
		cfg, err := certs.ServerTLS()
		if err != nil {
			t.Fatal(err)
		}
		auth.TLS, auth.TLSVerify = cfg, true
	}
	dir := t.TempDir()
	srv, err := wire.StartEmbeddedSecured(dir, server.RANDOM_PORT, auth)
	if err != nil {
		t.Fatalf("start secured embedded NATS: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	s := &Server{Embedded: srv, passwords: passwords, Certs: certs}
	_, s.JS = s.Connect(t, AdminUser)
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()
	if err := wire.EnsureStreams(ctx, s.JS, 0); err != nil {
		t.Fatalf("create JetStream streams: %v", err)
	}
	return s
}

// Security is the credentials (and TLS files) service connects with to a secured server.
func (s *Server) Security(service string) wire.Security {
	sec := wire.Security{User: service, Password: s.passwords[service]}
	if s.Certs != nil {
		sec.TLSCAFile, sec.TLSCertFile, sec.TLSKeyFile = s.Certs.CAFile, s.Certs.ClientCertFile, s.Certs.ClientKeyFile
	}
	return sec
}

// Client is a connection as one service whose refusals by the server (permissions violations)
// are kept, in order, as the witness a test waits on.
type Client struct {
	NC *nats.Conn
	JS jetstream.JetStream

	mu      sync.Mutex
	errs    []error
	changed chan struct{}
}

// ConnectAs dials a secured server as service, with service's credentials and reply prefix
// (wire.InboxPrefix), keeping every asynchronous error the server reports.
func (s *Server) ConnectAs(t testing.TB, service string) *Client {
	t.Helper()
	c := &Client{changed: make(chan struct{})}
	sec := s.Security(service)
	opts := []nats.Option{nats.Name("streamseal-" + service), nats.CustomInboxPrefix(wire.InboxPrefix(service)),
		nats.UserInfo(sec.User, sec.Password),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			c.mu.Lock()
			c.errs = append(c.errs, err)
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
		})}
	if sec.TLSCAFile != "" {
		cfg, err := sec.TLSConfig()
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, nats.Secure(cfg))
	}
	nc, err := nats.Connect(s.Embedded.URL(), opts...)
	if err != nil {
		t.Fatalf("connect to secured NATS as %s: %v", service, err)
	}
	t.Cleanup(nc.Close)
	c.NC = nc
	if c.JS, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return c
}

// Errors returns the errors the server reported so far.
func (c *Client) Errors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.errs...)
}

// AwaitViolation waits until the server reported a permissions violation naming subject, and
// returns it; it fails t after testrun.Failsafe.
func (c *Client) AwaitViolation(t testing.TB, subject string) error {
	t.Helper()
	deadline := time.NewTimer(testrun.Failsafe)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		errs, changed := append([]error(nil), c.errs...), c.changed
		c.mu.Unlock()
		for _, err := range errs {
			if strings.Contains(strings.ToLower(err.Error()), "permissions violation") && strings.Contains(err.Error(), `"`+subject+`"`) {
				return err
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no permissions violation for %q reported; errors so far: %v", subject, errs)
		}
	}
}

// Certs are testcerts.Certs: a throwaway CA, server and client certificates as PEM files.
type Certs = testcerts.Certs

// NewCerts writes Certs into t.TempDir().
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	c, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatalf("generate TLS certificates: %v", err)
	}
	return c
}
