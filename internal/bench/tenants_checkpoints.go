package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/harness"
)

// checkpointInterval is the interval the checkpoint figures are expressed in: the 1 s interval
// issue 21 measured at (the bench publishes its rounds itself, so only the unit matters).
const checkpointInterval = time.Second

// checkpointFigures is what one tenant count costs and delays on the checkpoint path.
type checkpointFigures struct {
	tenants, pairs int
	quietBytes     int64         // wire bytes of one quiet round (the origin's beat alone)
	quietMessages  int64         // messages of one quiet round
	activeBytes    int64         // wire bytes of a round in which every pair had one event
	activeMessages int64         // messages of that round
	liveDelay      time.Duration // a live event appended while that round is published: origin commit -> stored at the consumer
	afterDelay     time.Duration // the same for a live event appended once the whole round is on the wire (behind all of it)
	idleDelay      time.Duration // the same for a live event with no round in flight (the pipeline's own latency)
	roundVerified  time.Duration // publication start -> the consumer verified every message of the round
	falseGaps      int64         // gaps the consumer confirmed (none exist: a healthy run)
}

// tenantCheckpoints measures issue 21 item 3 at one tenant count, on a harness of its own (its
// own NATS server and databases, so no stream holds another size's messages): tenants x types
// pairs of settled history, then
//   - quiet rounds: nothing happened in the window, so a round is the origin's beat alone; its
//     bytes are what a quiet interval costs (flat in the tenant count when quiet pairs are not
//     repeated);
//   - one active round in which every pair had an event (the most a round can carry), and one
//     live event appended once that round's first messages are on the wire: its delay from the
//     origin's commit to the consumer's store, which must stay within one interval.
func tenantCheckpoints(ctx context.Context, newDB harness.NewDatabase, tenants, types int) (checkpointFigures, error) {
	f := checkpointFigures{tenants: tenants, pairs: tenants * types}
	ownDB := func(ctx context.Context, service string) (string, error) {
		return newDB(ctx, fmt.Sprintf("cp%07d-%s", tenants, service))
	}
	h, err := harness.New(ctx, ownDB, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return f, err
	}
	defer h.Close()
	settings := config.Defaults()
	settings.CheckpointInterval = time.Hour // rounds are published here
	settings.MaintenanceInterval = time.Hour
	settings.SettleWindow = time.Millisecond
	names := make([]string, types)
	for i := range names {
		names[i] = fmt.Sprintf("bench.t%02d", i)
	}
	orders, err := h.Start(ctx, "orders", harness.Options{Settings: settings, NoRelay: true, Grants: map[string][]string{"billing": names}}, nil)
	if err != nil {
		return f, err
	}
	billing, err := h.Start(ctx, "billing", harness.Options{Settings: settings, Consumes: names}, nil)
	if err != nil {
		return f, err
	}
	// A round of every pair at 100 000 tenants is 500 000 messages: the bench waits for it (the
	// default deadline of one round's publication is 10 s).
	orders.Publisher.Timeout = 10 * time.Minute
	// No periodic job may publish a round or audit among the measured ones (River.Stop waits
	// for a start-up checkpoint job already running).
	for _, s := range []*harness.Service{orders, billing} {
		if err := s.River.Stop(ctx); err != nil {
			return f, err
		}
	}
	pairs := tenants * types
	if err := loadTenants(ctx, orders.Pool, billing.Pool, 0, pairs, types); err != nil {
		return f, err
	}

	// Every message on the origin's event subjects (checkpoints, beats and events), counted as
	// the broker carries it: subject, headers and payload.
	tap, err := nats.Connect(h.NATS.URL(), nats.Name("bench-tap"))
	if err != nil {
		return f, err
	}
	defer tap.Close()
	var mu sync.Mutex
	var seenBytes, seenMessages int64
	sub, err := tap.Subscribe("streamseal.evt.orders.>", func(m *nats.Msg) {
		size := int64(len(m.Subject) + len(m.Data))
		for k, vs := range m.Header {
			for _, v := range vs {
				size += int64(len(k) + len(v) + 4)
			}
		}
		mu.Lock()
		seenBytes += size
		seenMessages++
		mu.Unlock()
	})
	if err != nil {
		return f, err
	}
	defer sub.Unsubscribe()
	if err := tap.Flush(); err != nil {
		return f, err
	}
	seen := func() (int64, int64) {
		mu.Lock()
		defer mu.Unlock()
		return seenBytes, seenMessages
	}
	// waitSeen waits (failsafe: deadline) until the tap counted at least n messages in all.
	waitSeen := func(n int64, deadline time.Duration) error {
		stop := time.Now().Add(deadline)
		for {
			if _, m := seen(); m >= n {
				return nil
			}
			if time.Now().After(stop) {
				_, m := seen()
				return fmt.Errorf("the tap saw %d of %d messages", m, n)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	// Quiet rounds.
	const quietRounds = 3
	for range quietRounds {
		_, before := seen()
		n, err := orders.Publisher.Publish(ctx)
		if err != nil {
			return f, err
		}
		if n != 0 {
			return f, fmt.Errorf("a quiet round published %d checkpoints", n)
		}
		if err := waitSeen(before+1, time.Minute); err != nil {
			return f, fmt.Errorf("quiet round: %w", err)
		}
	}
	f.quietBytes, f.quietMessages = seen()
	f.quietBytes /= quietRounds
	f.quietMessages /= quietRounds

	// The active round: every pair's second event, settled and relayed on both sides (the
	// consumer holds it: a healthy run), left for the next window.
	if err := loadSecondEvents(ctx, orders, billing, pairs, types); err != nil {
		return f, err
	}
	relayCtx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- orders.Relay.Run(relayCtx) }()
	defer func() { stopRelay(); <-relayDone }()
	failsafe := time.Now().Add(45 * time.Minute) // a round of 500 000 pairs is verified in minutes
	// live appends one live event (a tenant of its own, the first type) and returns its delay
	// from the origin's commit to the consumer's store. Both stamps are the databases' clocks on
	// this machine: the origin's append transaction and the consumer's ingest transaction.
	live := func() (time.Duration, error) {
		id := uuid.New()
		if _, err := store.EventsAppend(ctx, orders.Pool, []store.NewEvent{{EventID: id, Tenant: "live", StreamID: "live-" + id.String(),
			StreamVersion: 1, EventType: names[0], Payload: []byte("{}")}}); err != nil {
			return 0, err
		}
		for {
			if time.Now().After(failsafe) {
				return 0, fmt.Errorf("the live event never reached the consumer")
			}
			var n int
			if err := billing.Pool.QueryRow(ctx, "select count(*) from streamseal.events where event_id = $1", id).Scan(&n); err != nil {
				return 0, err
			}
			if n == 1 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		var committed, arrived time.Time
		if err := orders.Pool.QueryRow(ctx, "select stored_at from streamseal.events where event_id = $1", id).Scan(&committed); err != nil {
			return 0, err
		}
		if err := billing.Pool.QueryRow(ctx, "select stored_at from streamseal.events where event_id = $1", id).Scan(&arrived); err != nil {
			return 0, err
		}
		return arrived.Sub(committed), nil
	}
	// The pipeline's own latency, no round in flight (its event is relayed: one more message).
	if f.idleDelay, err = live(); err != nil {
		return f, err
	}
	if err := waitSeen(f.quietMessages*quietRounds+1, time.Minute); err != nil {
		return f, fmt.Errorf("idle live event: %w", err)
	}
	// The round carries every pair and the idle live event's.
	roundPairs := pairs + 1
	receivedBefore, _, _ := billing.Verifier.Counts()
	bytesBefore, messagesBefore := seen()
	start := time.Now()
	published := make(chan error, 1)
	go func() {
		n, err := orders.Publisher.Publish(ctx)
		if err == nil && n != roundPairs {
			err = fmt.Errorf("the active round published %d checkpoints, want %d", n, roundPairs)
		}
		published <- err
	}()
	// The live event is appended once the round is on the wire.
	if err := waitSeen(messagesBefore+1, time.Minute); err != nil {
		return f, fmt.Errorf("active round: %w", err)
	}
	if f.liveDelay, err = live(); err != nil {
		return f, err
	}
	if err := <-published; err != nil {
		return f, err
	}
	// The worst place for a live event: behind the whole round, which the consumer is still
	// verifying.
	if f.afterDelay, err = live(); err != nil {
		return f, err
	}
	for {
		received, _, _ := billing.Verifier.Counts()
		if received-receivedBefore >= int64(roundPairs) {
			break
		}
		if time.Now().After(failsafe) {
			return f, fmt.Errorf("the consumer verified %d of the round's %d checkpoints", received-receivedBefore, roundPairs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.roundVerified = time.Since(start)
	// The round's checkpoints and beat, and the two live events.
	if err := waitSeen(messagesBefore+int64(roundPairs)+3, time.Minute); err != nil {
		return f, fmt.Errorf("active round: %w", err)
	}
	b, m := seen()
	f.activeBytes, f.activeMessages = b-bytesBefore, m-messagesBefore-2
	_, f.falseGaps, _ = billing.Verifier.Counts()
	return f, nil
}

// loadSecondEvents gives every pair of loadTenants' history its second event (type_seq 2,
// origin_seq pairs+1..2*pairs) on the origin and, identical, on the consumer: stamped and
// relayed, but not checkpointed yet, so the next round carries every pair.
func loadSecondEvents(ctx context.Context, orders, billing *harness.Service, pairs, types int) error {
	bounds := strings.NewReplacer("$P", strconv.Itoa(pairs), "$T", strconv.Itoa(types))
	history := `select ('00000000-0000-4000-9000-' || lpad(to_hex(g), 12, '0'))::uuid as event_id, 'orders' as origin,
		        $P + g as origin_seq, 2 as type_seq, 't' || lpad(((g - 1) / $T)::text, 7, '0') as tenant,
		        't' || lpad(((g - 1) / $T)::text, 7, '0') || '-' || ((g - 1) % $T) as stream_id, 2 as stream_version,
		        'bench.t' || lpad(((g - 1) % $T)::text, 2, '0') as event_type, '\x7b7d'::bytea as payload,
		        now() - interval '1 hour' as stored_at
		 from generate_series(1, $P) g`
	originSteps := []string{
		"alter table streamseal.events disable trigger user", ownHistory(history),
		"alter table streamseal.events enable trigger user",
		"update streamseal.stamp_state set last_origin_seq = 2 * $P",
		"update streamseal.relay_state set published_through = 2 * $P",
		"analyze streamseal.events",
	}
	consumerSteps := []string{"alter table streamseal.events disable trigger user", copyHistory(history), "alter table streamseal.events enable trigger user",
		"analyze streamseal.events"}
	for pool, steps := range map[*harness.Service][]string{orders: originSteps, billing: consumerSteps} {
		for _, step := range steps {
			if _, err := pool.Pool.Exec(ctx, bounds.Replace(step)); err != nil {
				return fmt.Errorf("load second events of %d pairs: %w", pairs, err)
			}
		}
	}
	return nil
}

// tenantsCheckpoints measures every size of opts (tenantCheckpoints), prints the figures and
// returns the RESULT fields: checkpoint_bytes_flatness (quiet round bytes at the largest size /
// at the smallest, target <= 1.5) and max_live_delay_intervals (target <= 1).
func tenantsCheckpoints(ctx context.Context, newDB harness.NewDatabase, opts TenantsOptions, out io.Writer) (flatness, maxDelay float64, err error) {
	var figures []checkpointFigures
	for _, tenants := range opts.Tenants {
		f, err := tenantCheckpoints(ctx, newDB, tenants, opts.Types)
		if err != nil {
			return 0, 0, fmt.Errorf("checkpoints at %d tenants: %w", tenants, err)
		}
		figures = append(figures, f)
		// Printed as each size completes: the largest takes many minutes.
		fmt.Fprintf(out, "%d tenants (%d pairs): quiet checkpoint round %d bytes in %d message(s); a round with every pair active %d bytes in %d messages, verified by the consumer %s after it began; a live event appended during its publication stored %s after its commit, one appended once it was all on the wire %s (%.3f and %.3f intervals of %s; with no round in flight %s); gaps confirmed %d\n",
			f.tenants, f.pairs, f.quietBytes, f.quietMessages, f.activeBytes, f.activeMessages, f.roundVerified.Round(time.Millisecond),
			f.liveDelay.Round(time.Millisecond), f.afterDelay.Round(time.Millisecond), f.liveDelay.Seconds()/checkpointInterval.Seconds(),
			f.afterDelay.Seconds()/checkpointInterval.Seconds(), checkpointInterval, f.idleDelay.Round(time.Millisecond), f.falseGaps)
		maxDelay = max(maxDelay, f.liveDelay.Seconds()/checkpointInterval.Seconds(), f.afterDelay.Seconds()/checkpointInterval.Seconds())
	}
	flatness = float64(figures[len(figures)-1].quietBytes) / float64(figures[0].quietBytes)
	return flatness, maxDelay, nil
}

// QuickTenantCheckpoints and FullTenantCheckpoints are the sizes of `bench tenant-checkpoints`:
// the checkpoint part of `bench tenants` at the sizes (100 and 10 000 tenants x 5 types
// quick; 100, 10 000 and 100 000 in full), without its audits.
var (
	QuickTenantCheckpoints = TenantsOptions{Tenants: []int{100, 10_000}, Types: 5}
	FullTenantCheckpoints  = FullTenants
)

// TenantCheckpoints runs the checkpoint figures of the tenants benchmark alone
// (tenantsCheckpoints: quiet round bytes, a round with every pair active, live events behind it).
// RESULT: checkpoint_bytes_flatness (quiet round bytes at the largest size / at the smallest,
// target <= 1.5) and max_live_delay_intervals (the worst live event's delay behind a round, in
// intervals, target <= 1), and busy.
func TenantCheckpoints(ctx context.Context, newDB harness.NewDatabase, opts TenantsOptions, out io.Writer) error {
	load := watchLoad(out)
	fmt.Fprintf(out, "tenant checkpoints benchmark: one origin, %d event types, one consumer of every tenant; %v tenants\n", opts.Types, opts.Tenants)
	flatness, maxDelay, err := tenantsCheckpoints(ctx, newDB, opts, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "RESULT tenant-checkpoints checkpoint_bytes_flatness=%.3f max_live_delay_intervals=%.3f busy=%d\n", flatness, maxDelay, load.End())
	return nil
}
