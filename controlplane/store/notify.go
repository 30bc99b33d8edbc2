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

// PayloadRequeue is the ChannelStamped payload of quarantine_requeue: re-queued events wait.
const PayloadRequeue = "requeue"

// WaitOthersNotifications is WaitNotification that passes over the notifications conn's own
// session sent (a relay that stamps hears its own stamp's NOTIFY: nothing new for it). Once
// another session's notification arrives it returns that one's payload with those of every other
// notification already received (a burst of commits is one wake-up).
func WaitOthersNotifications(ctx context.Context, conn *pgx.Conn, deadline time.Time) (payloads []string, woken bool, err error) {
	self := conn.PgConn().PID()
	waitCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		n, err := conn.WaitForNotification(waitCtx)
		switch {
		case ctx.Err() != nil:
			return nil, false, ctx.Err()
		case err == nil && n.PID == self:
			continue
		case err == nil:
			return append([]string{n.Payload}, OthersNotificationsReceived(conn)...), true, nil
		case errors.Is(err, context.DeadlineExceeded):
			return nil, false, nil
		default:
			return nil, false, fmt.Errorf("wait for notification: %w", err)
		}
	}
}

// OthersNotificationsReceived takes, without waiting, the notifications conn has already
// received from other sessions (while it ran its last statements) and returns their payloads:
// none means nothing committed while conn was busy.
func OthersNotificationsReceived(conn *pgx.Conn) []string {
	self := conn.PgConn().PID()
	done, cancel := context.WithCancel(context.Background())
	cancel() // a done context takes only what pgx has buffered
	var payloads []string
	for {
		n, err := conn.WaitForNotification(done)
		if err != nil || n == nil {
			return payloads
		}
		if n.PID != self {
			payloads = append(payloads, n.Payload)
		}
	}
}

// StamperSleep is what StamperSleepArm found (sql/functions/stamper_sleep.sql): whether a loop
// about to wait on ChannelUnstamped holds the sleep lock, so that every append notifies it.
type StamperSleep string

// The answers of StamperSleepArm. SleepUnarmed is no answer: the loop did not try.
const (
	SleepUnarmed   StamperSleep = ""
	SleepArmed     StamperSleep = "armed"     // the lock is held and nothing committed waits: sleep
	SleepWork      StamperSleep = "work"      // committed events wait (the lock was not kept)
	SleepWriters   StamperSleep = "writers"   // appends in flight will not notify: look again soon
	SleepElsewhere StamperSleep = "elsewhere" // another sleeper holds it: every append notifies
)

// StamperSleepArm takes the sleep lock on conn, the connection that LISTENs on ChannelUnstamped
// and will wait (a session lock: it goes with the connection). checkBacklog false takes it
// without looking for committed events (a loop that leaves the stamping to another). Call it
// only when conn does not hold the lock.
func StamperSleepArm(ctx context.Context, conn *pgx.Conn, checkBacklog bool) (StamperSleep, error) {
	var found string
	if err := conn.QueryRow(ctx, "select streamseal.stamper_sleep_arm($1)", checkBacklog).Scan(&found); err != nil {
		return SleepUnarmed, classify("arm the stamper's sleep", err)
	}
	switch s := StamperSleep(found); s {
	case SleepArmed, SleepWork, SleepWriters, SleepElsewhere:
		return s, nil
	default:
		return SleepUnarmed, fmt.Errorf("arm the stamper's sleep: unknown answer %q", found)
	}
}

// StamperSleepRelease gives back the sleep lock conn took with StamperSleepArm; handOver also
// NOTIFYs ChannelUnstamped, for a loop that will not stamp next (whoever does must look now).
func StamperSleepRelease(ctx context.Context, db Querier, handOver bool) error {
	if _, err := db.Exec(ctx, "select streamseal.stamper_sleep_release($1)", handOver); err != nil {
		return classify("release the stamper's sleep", err)
	}
	return nil
}

// UnstampedNotify NOTIFYs ChannelUnstamped: a loop handing the stamping over wakes whoever takes
// it, since appends notify only while a sleeper holds the sleep lock.
func UnstampedNotify(ctx context.Context, db Querier) error {
	if _, err := db.Exec(ctx, "select pg_notify($1, '')", ChannelUnstamped); err != nil {
		return fmt.Errorf("notify %s: %w", ChannelUnstamped, err)
	}
	return nil
}
