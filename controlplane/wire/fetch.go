package wire

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Feed is one pull consumer's deliveries, taken in batches without waiting for a full one: what
// has arrived, or else the first message to arrive within idle (then whatever came with it).
//
// It keeps one subscription open for its whole life (jetstream Consume) rather than one per
// fetch. A fetch's subscription is torn down by the client once its reply has been silent for a
// second past the request's expiry (nats.go's own guard, 1 s for a no-wait fetch); a server slow
// to answer under load then delivers into a subscription nobody holds any more, and those
// messages stay pending, unseen, until AckWait (a minute) redelivers them: a minute's stall of
// the subject and a broken order proof, seen as ack-pending deliveries with nothing redelivered
// while the inbox had received none of them. On a long-lived subscription a late delivery is
// still received. Stop hands back (naks) whatever arrived and was not taken; only a crash leaves
// deliveries pending until AckWait.
type Feed struct {
	cons jetstream.Consumer
	max  int
	msgs chan jetstream.Msg
	errs chan error
	done chan struct{}
	once sync.Once
	cc   jetstream.ConsumeContext
}

// drainWait bounds how long Stop waits for the server to confirm the unsubscribe.
const drainWait = 5 * time.Second

// NewFeed starts consuming cons, keeping up to max messages requested ahead. The caller takes
// batches with Fetch and must Stop the feed.
func NewFeed(cons jetstream.Consumer, max int) *Feed {
	return &Feed{cons: cons, max: max, msgs: make(chan jetstream.Msg, 2*max),
		errs: make(chan error, 1), done: make(chan struct{})}
}

func (f *Feed) start() error {
	cc, err := f.cons.Consume(func(m jetstream.Msg) {
		select {
		case <-f.done: // stopping: what arrives now goes back at once (see Stop)
			_ = m.Nak()
			return
		default:
		}
		select {
		case f.msgs <- m:
		case <-f.done:
			_ = m.Nak()
		}
	}, jetstream.PullMaxMessages(f.max), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		select {
		case f.errs <- err:
		default: // one unreported error is enough to break the caller's proof
		}
	}))
	if err != nil {
		return err
	}
	f.cc = cc
	return nil
}

// Fetch returns up to max messages: those already arrived, or else the first to arrive within
// idle and whatever arrived with it; none when idle passes. An error the subscription reported
// (a missed heartbeat, a consumer deleted) is returned once: deliveries may have been lost, and a
// closed subscription is opened again on the next Fetch.
func (f *Feed) Fetch(ctx context.Context, max int, idle time.Duration) ([]jetstream.Msg, error) {
	if f.cc == nil {
		if err := f.start(); err != nil {
			return nil, err
		}
	}
	select {
	case <-f.cc.Closed():
		f.cc = nil
		return nil, errors.New("consume subscription closed")
	default:
	}
	var msgs []jetstream.Msg
	t := time.NewTimer(idle)
	defer t.Stop()
	select {
	case m := <-f.msgs:
		msgs = append(msgs, m)
	case err := <-f.errs:
		return nil, err
	case <-t.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for len(msgs) < max {
		select {
		case m := <-f.msgs:
			msgs = append(msgs, m)
		default:
			return msgs, nil
		}
	}
	return msgs, nil
}

// Stop ends the subscription and hands back (nak) what arrived and was not fetched, so whoever
// takes the consumer over gets it at once instead of after AckWait. It drains rather than stops
// the subscription: a plain stop discards what the client library already buffered and what
// the server sends before it learns of the unsubscribe, and each such message would stay
// pending, unseen, for the whole AckWait while the checkpoints behind it find it missing.
// Draining hands those to the callback, which naks them once done is closed.
func (f *Feed) Stop() {
	f.once.Do(func() {
		close(f.done)
		if f.cc != nil {
			f.cc.Drain()
			select {
			case <-f.cc.Closed():
			case <-time.After(drainWait): // a server gone silent: stop waiting, AckWait returns the rest
				f.cc.Stop()
			}
		}
		for {
			select {
			case m := <-f.msgs:
				_ = m.Nak()
			default:
				return
			}
		}
	})
}
