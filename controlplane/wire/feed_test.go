package wire_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Invariant 1 (no false gap from a clean stop; what a stopped consumer held goes back at once):
// a Feed that stops hands back every message the server delivered to it and nobody took, so a
// consumer that takes the durable over receives them now, not after AckWait. A message dropped
// instead stays pending, unseen, for the whole AckWait; its checkpoint meanwhile finds it missing
// and a restarted consumer requests a repair of events that were only held (seen: a false gap
// after a consumer restart, TestCheckpoint_ReplicasAndRestartsRaiseNothingFalse under load).
func TestFeed_StopHandsBackEveryDeliveredMessageItDidNotTake_Invariant1(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t, "feed")
	ctx := context.Background()
	subject := wire.LiveSubject("orders", "acme", "order.placed")
	const published = 40
	for i := range published {
		if _, err := js.Publish(ctx, subject, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, wire.EventsStream, jetstream.ConsumerConfig{
		Durable:       "feed-stop",
		FilterSubject: subject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       10 * testrun.Failsafe, // a dropped message cannot come back within the wait below
	})
	if err != nil {
		t.Fatal(err)
	}

	// A small feed: the server delivers more than the one message taken, and the client holds
	// them (in the feed's channel, in the consume callback, in the subscription's buffer).
	first := wire.NewFeed(cons, 2)
	taken, err := first.Fetch(ctx, 1, testrun.Failsafe)
	if err != nil || len(taken) != 1 {
		t.Fatalf("first fetch: %d messages, %v", len(taken), err)
	}
	if err := taken[0].Ack(); err != nil {
		t.Fatal(err)
	}
	testrun.WaitFor(t, "the server delivered more than the feed handed out", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending >= 3
	})
	first.Stop()

	second := wire.NewFeed(cons, 100)
	defer second.Stop()
	seen := map[uint64]bool{}
	testrun.WaitFor(t, "a consumer taking over received every message the stopped feed did not take", func() bool {
		msgs, err := second.Fetch(ctx, 100, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			meta, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			seen[meta.Sequence.Stream] = true
			_ = m.Ack()
		}
		return len(seen) == published-1
	})
}
