package wire

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// fakeMsg is one fetched control message: only what dispatch uses.
type fakeMsg struct {
	jetstream.Msg
	subject string
	data    []byte
	mu      *sync.Mutex
	acks    *[]string
}

func (m fakeMsg) Subject() string { return m.subject }
func (m fakeMsg) Data() []byte    { return m.data }
func (m fakeMsg) Ack() error      { m.record("ack"); return nil }
func (m fakeMsg) Term() error     { m.record("term"); return nil }
func (m fakeMsg) NakWithDelay(time.Duration) error {
	m.record("nak")
	return nil
}
func (m fakeMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{NumDelivered: 1}, nil
}
func (m fakeMsg) record(what string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	*m.acks = append(*m.acks, what)
}

// Invariant 14 (every request reaches an answer, here: sooner): a kind's ahead handler sees each
// accepted message of a fetched batch before any message of that batch is handled, so a truncated
// answer's summary can ask for the rest while the bundles fetched ahead of it are still being
// stored; the handlers still run in order, once each, and every message is acknowledged. A message
// the seam drops reaches no handler, ahead or not.
func TestControl_AheadHandlersSeeTheBatchBeforeItsMessagesAreHandled_Invariant14(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen, acks []string
	note := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, what)
	}
	c := &Control{Seam: &Seam{Self: "billing"}}
	c.HandleBatch(KindRedeliveryBundle, func(_ context.Context, envs []Envelope, _ [][]byte) error {
		note("bundles:" + string(rune('0'+len(envs))))
		return nil
	})
	c.Handle(KindRedeliveryBundle, func(context.Context, Envelope, []byte) error { note("bundle"); return nil })
	c.Handle(KindRedeliverySummary, func(context.Context, Envelope, []byte) error { note("summary"); return nil })
	c.HandleAhead(KindRedeliverySummary, func(_ context.Context, env Envelope, _ []byte) { note("ahead:" + env.From) })

	message := func(kind, from, to string) jetstream.Msg {
		env, err := NewEnvelope(kind, from, to, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		data, err := Encode(env, nil)
		if err != nil {
			t.Fatal(err)
		}
		return fakeMsg{subject: ControlSubjectFrom(to, from), data: data, mu: &mu, acks: &acks}
	}
	c.dispatchAll(context.Background(), []jetstream.Msg{
		message(KindRedeliveryBundle, "orders", "billing"),
		message(KindRedeliveryBundle, "orders", "billing"),
		message(KindRedeliverySummary, "orders", "billing"),
		// Addressed to another service on billing's subject: dropped at the seam.
		message(KindRedeliverySummary, "stock", "shipping"),
	})

	mu.Lock()
	defer mu.Unlock()
	if want := []string{"ahead:orders", "bundles:2", "summary"}; !slices.Equal(seen, want) {
		t.Fatalf("handled %v; want %v: the summary seen ahead of the bundles before it, then everything in order", seen, want)
	}
	if want := []string{"term", "ack", "ack", "ack"}; !slices.Equal(acks, want) {
		t.Fatalf("acknowledged %v; want %v", acks, want)
	}
}
