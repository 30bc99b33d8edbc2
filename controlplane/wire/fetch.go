package wire

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// FetchAvailable returns up to max messages without waiting for a full batch: what is already
// pending, or else the first message to arrive within idle (then whatever came with it). A plain
// Fetch waits for the whole batch or its timeout, which turns every partial batch into a stall.
func FetchAvailable(ctx context.Context, cons jetstream.Consumer, max int, idle time.Duration) ([]jetstream.Msg, error) {
	msgs, err := drain(cons.FetchNoWait(max))
	if err != nil || len(msgs) > 0 {
		return msgs, err
	}
	first, err := cons.Fetch(1, jetstream.FetchMaxWait(idle))
	if err != nil {
		return nil, err
	}
	msgs, err = drain(first, nil)
	if err != nil || len(msgs) == 0 || max == 1 {
		return msgs, err
	}
	more, err := drain(cons.FetchNoWait(max - 1))
	return append(msgs, more...), err
}

func drain(batch jetstream.MessageBatch, err error) ([]jetstream.Msg, error) {
	if err != nil {
		return nil, err
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrNoHeartbeat) {
		return msgs, err
	}
	return msgs, nil
}
