// Package natstest gives a component test the real wire: an embedded NATS server with JetStream
// (wire.StartEmbedded, in the test's temp dir) and streamseal's two streams, connections as
// named services, and a Recorder that reads what was published on a subject, in stream order,
// as the witness a test waits on.
//
// Tooling only: test files import it, product packages never do (internal/layout checks).
package natstest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Server is one test's embedded NATS server, its streams already created.
type Server struct {
	Embedded *wire.Embedded
	// JS is an administrative JetStream context (not any service's): for recording, counting
	// and publishing what a test injects.
	JS jetstream.JetStream
	// Certs are the TLS files of a server StartSecured started with TLS (nil otherwise).
	Certs *Certs

	passwords map[string]string // StartSecured's users; nil: an open server
}

// Start starts an embedded NATS server with JetStream for t, creates streamseal's event and
// control streams (events kept forever), and shuts the server down when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir() // removed after the shutdown below (cleanups run last-first)
	srv, err := wire.StartEmbedded(dir)
	if err != nil {
		t.Fatalf("start embedded NATS: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	s := &Server{Embedded: srv}
	_, s.JS = s.Connect(t, "natstest")
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()
	if err := wire.EnsureStreams(ctx, s.JS, 0); err != nil {
		t.Fatalf("create JetStream streams: %v", err)
	}
	return s
}

// Connect dials the server as service (the connection is named after it) and closes the
// connection when t ends.
func (s *Server) Connect(t testing.TB, service string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts := []nats.Option{nats.Name("streamseal-" + service)}
	if s.passwords != nil { // a secured server: the test's own connections are the admin's
		sec := s.Security(AdminUser)
		opts = append(opts, nats.UserInfo(sec.User, sec.Password))
		if sec.TLSCAFile != "" {
			cfg, err := sec.TLSConfig()
			if err != nil {
				t.Fatal(err)
			}
			opts = append(opts, nats.Secure(cfg))
		}
	}
	nc, err := nats.Connect(s.Embedded.URL(), opts...)
	if err != nil {
		t.Fatalf("connect to embedded NATS as %s: %v", service, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("JetStream for %s: %v", service, err)
	}
	return nc, js
}

// Count returns how many messages stream holds on subject (wildcards allowed). JetStream has
// acknowledged every message it counts, so a count taken after a component reported its work
// done is exact: nothing it published is still on its way.
func (s *Server) Count(t testing.TB, stream, subject string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()
	st, err := s.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatalf("info of stream %s: %v", stream, err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// Msg is one recorded message.
type Msg struct {
	Subject   string
	Header    nats.Header
	Data      []byte
	StreamSeq uint64
}

// Recorder keeps every message a stream holds on some subjects, from the stream's start and in
// stream order, as they arrive.
type Recorder struct {
	mu      sync.Mutex
	msgs    []Msg
	changed chan struct{} // closed and replaced on every arrival
}

// Record starts recording stream's messages on subjects (an ordered consumer from the start of
// the stream) until t ends.
func (s *Server) Record(t testing.TB, stream string, subjects ...string) *Recorder {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()
	cons, err := s.JS.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: subjects})
	if err != nil {
		t.Fatalf("record %s %v: %v", stream, subjects, err)
	}
	r := &Recorder{changed: make(chan struct{})}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		md, _ := m.Metadata()
		msg := Msg{Subject: m.Subject(), Header: m.Headers(), Data: append([]byte(nil), m.Data()...)}
		if md != nil {
			msg.StreamSeq = md.Sequence.Stream
		}
		r.mu.Lock()
		r.msgs = append(r.msgs, msg)
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
	})
	if err != nil {
		t.Fatalf("record %s %v: %v", stream, subjects, err)
	}
	t.Cleanup(cc.Stop)
	return r
}

// Messages returns what has arrived so far.
func (r *Recorder) Messages() []Msg {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Msg(nil), r.msgs...)
}

// Await waits until witness holds for the messages recorded so far (re-checked at each arrival)
// and returns them; it fails t after testrun.Failsafe.
func (r *Recorder) Await(t testing.TB, what string, witness func([]Msg) bool) []Msg {
	t.Helper()
	deadline := time.NewTimer(testrun.Failsafe)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		msgs, changed := append([]Msg(nil), r.msgs...), r.changed
		r.mu.Unlock()
		if witness(msgs) {
			return msgs
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("gave up waiting for: %s (%d messages recorded)", what, len(msgs))
		}
	}
}

// AwaitCount waits until at least n messages have arrived and returns them all.
func (r *Recorder) AwaitCount(t testing.TB, what string, n int) []Msg {
	t.Helper()
	return r.Await(t, what, func(m []Msg) bool { return len(m) >= n })
}

// Control returns a control endpoint for service on js (its receive seam in front), logging
// through the test. Register handlers on it, then run it with testrun.Go(t, …, c.Run).
func Control(t testing.TB, js jetstream.JetStream, service string) *wire.Control {
	logger := testrun.Logger(t)
	return &wire.Control{JS: js, Seam: &wire.Seam{Self: service, Logger: logger}, Logger: logger}
}

// Envelopes decodes recorded control messages (a message that does not decode fails t), with
// their attachments.
func Envelopes(t testing.TB, msgs []Msg) ([]wire.Envelope, [][]byte) {
	t.Helper()
	envs, attachments := make([]wire.Envelope, len(msgs)), make([][]byte, len(msgs))
	for i, m := range msgs {
		env, attachment, err := wire.Decode(m.Data, 0)
		if err != nil {
			t.Fatalf("recorded control message %d on %s does not decode: %v", i, m.Subject, err)
		}
		envs[i], attachments[i] = env, attachment
	}
	return envs, attachments
}
