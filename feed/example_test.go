package feed_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/feed"
)

// A projection reads order.placed events in commit order and stores its token in the same
// transaction as its own writes: a crash between the two cannot skip or double-apply a batch.
// On restart it resumes from the stored token, on this database or another holding the same
// origins.
func ExampleSubscribe() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres:///billing")
	if err != nil {
		log.Fatal(err)
	}
	var saved string // read from the projection's own table at start; "" the first time
	err = feed.Subscribe(ctx, pool, feed.Options{Types: []string{"order.placed"}, Resume: saved},
		func(ctx context.Context, tx pgx.Tx, b feed.Batch) error {
			for _, e := range b.Events {
				if _, err := tx.Exec(ctx, "insert into orders_seen (event_id) values ($1) on conflict do nothing", e.EventID); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, "update projection_state set token = $1", b.Token)
			return err
		})
	if err != nil {
		log.Fatal(err) // feed.ErrBadRequest, ErrConflict, ErrGone: the token cannot be honoured here
	}
}

// A named projection is registered in the store (streamseal.register_feed_projection): the store
// keeps its token and per-stream cursors, written in each batch's transaction with the handler's
// own writes, so the local coverage audit proves it reached every stream's head. A stream the
// audit finds short, skipped, born late or out of order is rebuilt here: Reset, then the
// stream's events in version order as one Batch{Replay: true}.
func ExampleOptions_name() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres:///billing")
	if err != nil {
		log.Fatal(err)
	}
	sub := feed.NewSubscriber(pool, feed.Options{
		Kind: feed.Projection, Name: "orders-seen", Types: []string{"order.placed"},
		Reset: func(ctx context.Context, tx pgx.Tx, s feed.Stream) error {
			_, err := tx.Exec(ctx, "delete from orders_seen where stream_id = $1", s.StreamID)
			return err
		},
	})
	err = sub.Run(ctx, func(ctx context.Context, tx pgx.Tx, b feed.Batch) error {
		for _, e := range b.Events {
			if _, err := tx.Exec(ctx, "insert into orders_seen (stream_id, event_id) values ($1, $2)", e.StreamID, e.EventID); err != nil {
				return err
			}
		}
		return nil // the store keeps the token
	})
	if err != nil {
		log.Fatal(err)
	}
}
