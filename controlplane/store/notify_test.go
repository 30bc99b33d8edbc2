package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamseal/streamseal/controlplane/store"
)

// Invariant 15 (readers never skip, and a reader waiting for rows is woken): a statement that lands
// copies wakes feed readers on ChannelFeed; own events wake them when stamped, on ChannelStamped,
// and their append sends no feed notification (issue 16: one NOTIFY per own append less, the
// insert trigger sends it). Notifications arrive in commit order, so the first one after an own
// append and its stamp tells which the append sent.
func TestNotify_CopiesWakeFeedReadersOwnEventsWakeThemWhenStamped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := lanePool(t, "notify-feed")
	pooled, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := pooled.Hijack()
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, channel := range []string{store.ChannelFeed, store.ChannelStamped} {
		if err := store.Listen(ctx, conn, channel); err != nil {
			t.Fatal(err)
		}
	}
	next := func(what string) *pgconn.Notification {
		t.Helper()
		waitCtx, cancel := context.WithTimeout(ctx, failsafe)
		defer cancel()
		n, err := conn.WaitForNotification(waitCtx)
		if err != nil {
			t.Fatalf("%s: no notification: %v", what, err)
		}
		return n
	}

	if _, err := store.EventsAppend(ctx, pool, []store.NewEvent{{Tenant: "t", StreamID: "s", StreamVersion: 1,
		EventType: "e", Payload: []byte("{}")}}); err != nil {
		t.Fatal(err)
	}
	if r, err := store.EventsStamp(ctx, pool, 10); err != nil || r.Stamped != 1 {
		t.Fatalf("stamp = %+v, %v; want 1 stamped", r, err)
	}
	if n := next("own append, then its stamp"); n.Channel != store.ChannelStamped {
		t.Fatalf("first notification after an own append and its stamp is on %q (payload %q); want %q: the append itself sends none",
			n.Channel, n.Payload, store.ChannelStamped)
	}

	if _, err := store.EventsIngest(ctx, pool, []store.EventCopy{peerCopy(1)}); err != nil {
		t.Fatal(err)
	}
	if n := next("a copy ingested"); n.Channel != store.ChannelFeed {
		t.Fatalf("notification after a copy landed is on %q; want %q", n.Channel, store.ChannelFeed)
	}
}
