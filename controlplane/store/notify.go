// notify.go: the wake-ups. Inserting an own event notifies ChannelUnstamped (the stamper
// listens); a stamp batch notifies ChannelStamped (the relay listens). A listening connection is
// a dedicated *pgx.Conn (hijacked from the pool), never a pooled one.

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The NOTIFY channels the SQL layer signals.
const (
	ChannelUnstamped = "streamseal_unstamped" // an own event was inserted, not yet numbered
	ChannelStamped   = "streamseal_stamped"   // stamp() numbered a batch
)

// Listen subscribes conn to channel (one of the Channel constants).
func Listen(ctx context.Context, conn *pgx.Conn, channel string) error {
	if _, err := conn.Exec(ctx, "listen "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen %s: %w", channel, err)
	}
	return nil
}

// WaitNotification blocks until a notification arrives on conn (true) or deadline passes
// (false). It returns ctx's error once ctx ends.
func WaitNotification(ctx context.Context, conn *pgx.Conn, deadline time.Time) (bool, error) {
	waitCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	_, err := conn.WaitForNotification(waitCtx)
	switch {
	case ctx.Err() != nil:
		return false, ctx.Err()
	case err == nil:
		return true, nil
	case errors.Is(err, context.DeadlineExceeded):
		return false, nil
	default:
		return false, fmt.Errorf("wait for notification: %w", err)
	}
}

// AbsorbNotifications consumes notifications on conn until deadline and says how many it saw.
func AbsorbNotifications(ctx context.Context, conn *pgx.Conn, deadline time.Time) (int, error) {
	seen := 0
	for {
		woken, err := WaitNotification(ctx, conn, deadline)
		if err != nil || !woken {
			return seen, err
		}
		seen++
	}
}
