package wire_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Invariant 13 (no wedge): a control message whose handler can never succeed terminates. A
// permanent refusal (SQLSTATE 22023, e.g. a summary naming the range [5,1)) is handled once and
// dead at once; a failure that repeats is retried with backoff up to MaxDeliver deliveries, then
// dead. Each dead message is counted with its reason. Before, both were retried every 2 s forever.
func TestControl_PoisonMessagesTerminate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		err        error
		wantCalls  int64
		wantReason string
	}{
		{"PermanentRefusalIsDeadAtOnce", fmt.Errorf("accept summary: %w: type_seq range [5,1) is empty", store.ErrInvalidInput), 1, "permanent"},
		{"RepeatedFailureIsDeadAfterMaxDeliver", fmt.Errorf("database unreachable"), 3, "max_deliver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := natstest.Start(t)
			_, js := srv.Connect(t, "billing")
			var calls atomic.Int64
			var mu sync.Mutex
			var dead []string
			deadDone := make(chan struct{})
			c := &wire.Control{JS: js, Seam: &wire.Seam{Self: "billing"}, Logger: testrun.Logger(t),
				MaxDeliver: 3, RetryBase: time.Millisecond,
				OnDead: func(_ wire.Envelope, reason string) {
					mu.Lock()
					dead = append(dead, reason)
					mu.Unlock()
					close(deadDone)
				}}
			c.Handle(wire.KindRedeliverySummary, func(context.Context, wire.Envelope, []byte) error {
				calls.Add(1)
				return tc.err
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })

			env, err := wire.NewEnvelope(wire.KindRedeliverySummary, "orders", "billing", wire.RedeliverySummary{RequestID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			if err := wire.Publish(context.Background(), js, env, nil); err != nil {
				t.Fatal(err)
			}
			select {
			case <-deadDone:
			case <-time.After(testrun.Failsafe):
				t.Fatalf("the message never died: handled %d times", calls.Load())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(dead) != 1 || dead[0] != tc.wantReason || calls.Load() != tc.wantCalls {
				t.Fatalf("dead %v after %d calls, want [%s] after %d", dead, calls.Load(), tc.wantReason, tc.wantCalls)
			}
		})
	}
}

// Invariant 13 (no wedge): the control endpoint's start-up cleanup (removing the durable of the
// layout before the sender joined the subject) is best effort and waits for nothing. On a bus
// whose permissions refuse that delete (hand-written, or generated before they allowed it), the
// refused JetStream request is never answered; the endpoint waited it out (the client's API
// timeout, here longer than the failsafe) before creating its consumers, so every start consumed
// control messages that much later. It handles a message while the refused delete is pending.
func TestControl_StartsWhileARefusedCleanupIsPending_Invariant13(t *testing.T) {
	t.Parallel()
	srv, err := wire.StartEmbeddedSecured(t.TempDir(), server.RANDOM_PORT, wire.EmbeddedAuth{Users: []*server.User{{
		Username: "billing", Password: "pw-billing",
		Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"$JS.API.CONSUMER.DELETE.>"}},
			Subscribe: &server.SubjectPermission{Allow: []string{">"}},
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := wire.Connect(srv.URL(), "billing", wire.Security{User: "billing", Password: "pw-billing"}, testrun.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	// An unanswered request waits longer than the failsafe: waiting for it fails the test.
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(2*testrun.Failsafe))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()
	if err := wire.EnsureStreams(ctx, js, 0); err != nil {
		t.Fatal(err)
	}
	c := natstest.Control(t, js, "billing")
	got := make(chan string, 1)
	c.Handle(wire.KindRedeliverySummary, func(_ context.Context, env wire.Envelope, _ []byte) error {
		got <- env.ID
		return nil
	})
	testrun.Go(t, "billing's control endpoint", c.Run)
	env, err := wire.NewEnvelope(wire.KindRedeliverySummary, "orders", "billing", wire.RedeliverySummary{RequestID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.Publish(ctx, js, env, nil); err != nil {
		t.Fatal(err)
	}
	if id := testrun.Receive(t, "billing's control endpoint handling a message", got); id != env.ID {
		t.Fatalf("handled %s, want %s", id, env.ID)
	}
}
