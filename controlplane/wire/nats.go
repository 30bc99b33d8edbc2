package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
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
	opts := &server.Options{
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
		MaxPayload: DefaultMaxMessageBytes,
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

// Connect dials url as service, reconnecting forever: a control plane outlives broker restarts.
func Connect(url, service string, logger *slog.Logger) (*nats.Conn, error) {
	if logger == nil {
		logger = slog.Default()
	}
	nc, err := nats.Connect(url,
		nats.Name("streamseal-"+service),
		nats.Timeout(ConnectTimeoutDefault),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			logger.Warn("wire: disconnected from NATS", "err", err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			logger.Info("wire: reconnected to NATS", "url", c.ConnectedUrl())
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS %s: %w", redact.String(url), err)
	}
	return nc, nil
}

// EnsureStreams creates (or updates) the two JetStream streams streamseal uses: events, kept for
// eventRetention (0: forever), deduplicating re-publishes by message id within two minutes; and
// control messages, kept for a day so a restarted service still finds what was sent to it.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, eventRetention time.Duration) error {
	streams := []jetstream.StreamConfig{{
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
	for _, cfg := range streams {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("ensure JetStream stream %s: %w", cfg.Name, err)
		}
	}
	return nil
}
