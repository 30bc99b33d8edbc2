package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/redact"
)

// Embedded is an in-process NATS server with JetStream, for single-machine use, tests and the
// demo. It listens on loopback only.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts a NATS server with JetStream storing under dir, on a random loopback
// port, and waits until it accepts connections.
func StartEmbedded(dir string) (*Embedded, error) {
	return StartEmbeddedOn(dir, server.RANDOM_PORT)
}

// StartEmbeddedOn is StartEmbedded on a given loopback port (a restart reuses its predecessor's
// port and store, so clients reconnect to the same history).
func StartEmbeddedOn(dir string, port int) (*Embedded, error) {
	return StartEmbeddedSecured(dir, port, EmbeddedAuth{})
}

// EmbeddedAuth secures an embedded server: its users (authorization is on as soon as there is
// one; package natsauth computes them) and, with TLS set, a TLS-only listener (TLSVerify: clients
// must present a certificate TLS.ClientCAs verifies).
type EmbeddedAuth struct {
	Users     []*server.User
	NkeyUsers []*server.NkeyUser
	TLS       *tls.Config
	TLSVerify bool
}

// StartEmbeddedSecured is StartEmbeddedOn with auth's users and TLS.
func StartEmbeddedSecured(dir string, port int, auth EmbeddedAuth) (*Embedded, error) {
	opts := &server.Options{
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
		MaxPayload: DefaultMaxMessageBytes,
		Users:      auth.Users,
		Nkeys:      auth.NkeyUsers,
	}
	if auth.TLS != nil {
		opts.TLS, opts.TLSConfig, opts.TLSVerify = true, auth.TLS, auth.TLSVerify
		opts.TLSTimeout = 5
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("configure embedded NATS: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("embedded NATS did not become ready within 30s")
	}
	return &Embedded{srv: srv}, nil
}

// Port is the server's client port.
func (e *Embedded) Port() int { return e.srv.Addr().(*net.TCPAddr).Port }

// URL is the client URL of the embedded server.
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Shutdown stops the server and waits for it.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// ConnectTimeoutDefault bounds one attempt to reach a NATS server (dial and handshake): a server
// that accepts TCP and never answers fails the attempt instead of hanging it.
const ConnectTimeoutDefault = 5 * time.Second

// Connect dials url as service with sec's credentials and TLS, reconnecting forever: a control
// plane outlives broker restarts. Every connection of service takes its replies (JetStream
// pulls, publish acks, request replies) under InboxPrefix(service), the one reply prefix the
// generated permissions let service subscribe to. A refusal by the server (a permissions
// violation) is logged, never fatal: the operation it refused fails on its own.
func Connect(url, service string, sec Security, logger *slog.Logger) (*nats.Conn, error) {
	if logger == nil {
		logger = slog.Default()
	}
	secOpts, err := sec.natsOptions()
	if err != nil {
		return nil, err
	}
	opts := append([]nats.Option{
		nats.Name("streamseal-" + service),
		nats.CustomInboxPrefix(InboxPrefix(service)),
		nats.Timeout(ConnectTimeoutDefault),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: this side closed the connection
				logger.Warn("wire: disconnected from NATS", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			logger.Info("wire: reconnected to NATS", "url", redact.String(c.ConnectedUrl()))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			logger.Warn("wire: NATS refused an operation", "service", service, "subscription", subject, "err", err)
		}),
	}, secOpts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS %s as %s (%s): %w", redact.String(url), service, sec, err)
	}
	return nc, nil
}

// EnsureStreams makes sure the two JetStream streams streamseal uses exist as configured: events,
// kept for eventRetention (0: forever), deduplicating re-publishes by message id within two
// minutes; and control messages, kept for a day so a restarted service still finds what was sent
// to it. It reads each stream's info first and creates a missing stream, so a service whose NATS
// user may only read stream info and create the two streams (the generated permissions, package
// natsauth) starts against streams that exist; it updates a stream only when its configuration
// differs (another --event-retention), which needs a user allowed to update streams.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, eventRetention time.Duration) error {
	for _, cfg := range StreamConfigs(eventRetention) {
		st, err := js.Stream(ctx, cfg.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			if _, err := js.CreateStream(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return fmt.Errorf("create JetStream stream %s: %w", cfg.Name, err)
			}
		case err != nil:
			return fmt.Errorf("read JetStream stream %s: %w", cfg.Name, err)
		case !streamConfigured(st.CachedInfo().Config, cfg):
			if _, err := js.UpdateStream(ctx, cfg); err != nil {
				return fmt.Errorf("update JetStream stream %s (its configuration differs from this service's, e.g. --event-retention; "+
					"set the same value everywhere or update it as an admin): %w", cfg.Name, err)
			}
		}
	}
	return nil
}

// StreamConfigs are the configurations of the two streams EnsureStreams keeps.
func StreamConfigs(eventRetention time.Duration) []jetstream.StreamConfig {
	return []jetstream.StreamConfig{{
		Name:       EventsStream,
		Subjects:   []string{eventsPrefix + ">"},
		Storage:    jetstream.FileStorage,
		Retention:  jetstream.LimitsPolicy,
		MaxAge:     eventRetention,
		Duplicates: 2 * time.Minute,
	}, {
		Name:       ControlStream,
		Subjects:   []string{controlPrefix + ">"},
		Storage:    jetstream.FileStorage,
		Retention:  jetstream.LimitsPolicy,
		MaxAge:     24 * time.Hour,
		MaxMsgSize: DefaultMaxMessageBytes,
	}}
}

// streamConfigured reports whether a stream's configuration has every setting want sets (a zero
// duplicates window or message size in want is the server's default, whatever it is; a zero
// MaxAge is "forever" and compared).
func streamConfigured(have, want jetstream.StreamConfig) bool {
	return slices.Equal(have.Subjects, want.Subjects) && have.Storage == want.Storage && have.Retention == want.Retention &&
		have.MaxAge == want.MaxAge &&
		(want.Duplicates == 0 || have.Duplicates == want.Duplicates) &&
		(want.MaxMsgSize == 0 || have.MaxMsgSize == want.MaxMsgSize)
}
