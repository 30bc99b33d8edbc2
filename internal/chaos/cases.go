// cases.go: the fault cases. Each starts its own world, injects its fault from outside, and
// returns its figures; it fails (returns an error) when the copy does not converge, when a
// duplicate appears, or when one range is asked for more often than the repair budget allows.

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Size scales a case: the short form (make test) or the long one (make chaos).
type Size struct {
	Long bool
}

func (s Size) pick(short, long int) int {
	if s.Long {
		return long
	}
	return short
}

// Figures are what a case prints.
type Figures struct {
	Case       string
	Events     int64   // appended to the origin
	Damage     int     // deliveries dropped at the receive seam, or copies deleted
	Converged  bool    // event ids, identity and payload bytes, digests equal
	Seconds    float64 // from the end of the fault to convergence
	Lost       int     // still missing at the end
	Duplicated int     // extra or mismatching copies at the end
	Requests   Requests
	Audits     int    // audits run (case c)
	Exits      int    // run processes that exited on their own (restarted by the supervisor)
	Note       string // what the fault caught in flight
}

// Case is one fault case.
type Case struct {
	Name  string
	Short bool // in the short form too
	Run   func(ctx context.Context, w *World, size Size, f *Figures) error
}

// Cases are the suite, in order.
var Cases = []Case{
	{Name: "a-origin-killed-with-accepted-requests", Short: true, Run: originKilledWithAcceptedRequests},
	{Name: "b-truncated-answers", Short: true, Run: truncatedAnswers},
	{Name: "c-scattered-damage-below-floors", Short: true, Run: scatteredDamage},
	{Name: "d-origin-killed-mid-build", Run: originKilledMidBuild},
	{Name: "e-consumer-killed-mid-repair", Run: consumerKilledMidRepair},
	{Name: "f-nats-killed-under-load", Run: natsKilledUnderLoad},
	{Name: "g-postgres-immediate-restarts", Run: postgresRestarts},
	{Name: "h-duplicate-and-reordered-deliveries", Short: true, Run: duplicatesAndReorder},
	{Name: "i-replicas-killed-in-turn", Run: replicasKilledInTurn},
}

// The services of every case, and the settings that make a case converge in seconds.
const (
	originName   = "orders"
	consumerName = "billing"
)

var (
	types   = []string{"order.placed", "order.paid", "order.shipped", "order.closed"}
	tenants = []string{"acme", "globex"}
	// fast are run's settings for every service: short intervals, a 1 s repair backoff base, the
	// periodic audit out of the way (case c runs `streamseal audit` itself).
	fast = []string{"--checkpoint-interval", "200ms", "--maintenance-interval", "1s", "--repair-retry-after", "1s",
		"--settle-window", "1s", "--audit-interval", "720h"}
)

// MaxRequestsPerRange bounds how often one selection may be asked for in a case: the repair
// budget. More is a storm.
const MaxRequestsPerRange = config.MaxRepairAttemptsPerBucketDefault

// pair starts the origin and the consumer (dropping the first delivery of drop of the events).
func pair(ctx context.Context, w *World, drop float64, originArgs ...string) (origin, consumer *Service, err error) {
	return replicatedPair(ctx, w, 1, drop, originArgs...)
}

// replicatedPair is pair with replicas `streamseal run` processes per service.
func replicatedPair(ctx context.Context, w *World, replicas int, drop float64, originArgs ...string) (origin, consumer *Service, err error) {
	origin, err = w.StartService(ctx, ServiceSpec{Name: originName, Grants: map[string][]string{consumerName: types},
		Args: append(append([]string{}, fast...), originArgs...), Replicas: replicas})
	if err != nil {
		return nil, nil, err
	}
	args := append([]string{}, fast...)
	if drop > 0 {
		args = append(args, "--fault-drop-first-delivery", fmt.Sprint(drop))
	}
	consumer, err = w.StartService(ctx, ServiceSpec{Name: consumerName, Consumes: types, Args: args, Replicas: replicas})
	return origin, consumer, err
}

func workload(streams int) *Workload {
	return &Workload{Streams: streams, Types: types, Tenants: tenants}
}

// finish waits for convergence (timed from since) and fills the figures; it fails on a copy that
// does not converge, a duplicate, or a storm.
func finish(ctx context.Context, w *World, origin, consumer *Service, wl *Workload, since time.Time, f *Figures) error {
	c, took, err := WaitConverged(ctx, origin, consumer, types, since)
	f.Events = wl.Appended()
	f.Converged, f.Seconds = err == nil, took.Seconds()
	f.Lost, f.Duplicated = c.Lost, c.Extra+c.Mismatched
	if r, rerr := RequestsSent(ctx, consumer, origin.Name); rerr == nil {
		f.Requests = r
	}
	for _, s := range []*Service{origin, consumer} {
		f.Exits += s.Exits()
	}
	switch {
	case err != nil:
		return err
	case f.Duplicated > 0:
		return fmt.Errorf("duplicated copies: %s", c)
	case f.Requests.MaxPerRange > MaxRequestsPerRange:
		return fmt.Errorf("request storm: one range was asked %d times (budget %d)", f.Requests.MaxPerRange, MaxRequestsPerRange)
	}
	return nil
}

func dropped(ctx context.Context, origin *Service, share float64) int {
	ids, err := OriginIDs(ctx, origin, types)
	if err != nil {
		return -1
	}
	return DroppedShare(ids, share)
}

func count(ctx context.Context, s *Service, sql string, args ...any) (int, error) {
	var n int
	err := s.Pool.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// a. The origin dies (kill -9) while repair requests it accepted wait unserved; after its
// restart the copy converges without an operator.
func originKilledWithAcceptedRequests(ctx context.Context, w *World, size Size, f *Figures) error {
	const drop = 0.3
	origin, consumer, err := pair(ctx, w, drop)
	if err != nil {
		return err
	}
	wl := workload(size.pick(400, 2000))
	if err := wl.AppendAll(ctx, origin, size.pick(4000, 20000), 1000); err != nil {
		return err
	}
	if err := Until(ctx, "two accepted repair requests waiting on the origin", func() (bool, error) {
		n, err := count(ctx, origin, "select count(*) from streamseal.redelivery_queue")
		return n >= 2, err
	}); err != nil {
		return err
	}
	origin.Run.Kill9()
	var atKill []string // the requests the crash left unserved
	if err := origin.Pool.QueryRow(ctx, "select coalesce(array_agg(request_id::text), '{}') from streamseal.redelivery_queue").Scan(&atKill); err != nil {
		return err
	}
	queued := len(atKill)
	if queued == 0 {
		return fmt.Errorf("the witness saw accepted requests waiting but none was left at the kill: the case proved nothing, run it again")
	}
	f.Note = fmt.Sprintf("%d accepted requests unserved at kill", queued)
	f.Damage = dropped(ctx, origin, drop)
	time.Sleep(time.Second) // the origin stays down a second
	if err := origin.Run.Start(); err != nil {
		return err
	}
	if err := finish(ctx, w, origin, consumer, wl, time.Now(), f); err != nil {
		return err
	}
	// Every request the crash left unserved is served from the durable queue (invariant 14).
	// Requests accepted since (re-asks racing the convergence) may still wait their turn: what
	// the case proves is that none of those at the kill is lost, so it waits on them alone.
	return Until(ctx, "the requests unserved at the kill served after the restart", func() (bool, error) {
		left, err := count(ctx, origin, "select count(*) from streamseal.redelivery_queue where request_id::text = any ($1)", atKill)
		return left == 0, err
	})
}

// b. Answers truncated by a small per-request cap, with thousands of events to repair: each
// truncated answer is followed by a request for the rest, and the copy converges. The origin's
// checkpoints come every 2 s here, so one window holds every append and each lane's request asks
// for far more than the cap.
func truncatedAnswers(ctx context.Context, w *World, size Size, f *Figures) error {
	const drop = 0.3
	origin, consumer, err := pair(ctx, w, drop, "--max-events-per-request", "100", "--checkpoint-interval", "2s")
	if err != nil {
		return err
	}
	wl := workload(size.pick(300, 2000))
	start := time.Now()
	if err := wl.AppendAll(ctx, origin, size.pick(5000, 20000), 20000); err != nil {
		return err
	}
	f.Damage = dropped(ctx, origin, drop)
	if err := finish(ctx, w, origin, consumer, wl, start, f); err != nil {
		return err
	}
	if f.Requests.BySource[store.SourceFollowUp] == 0 {
		return fmt.Errorf("converged without a single follow-up request: the answers were not truncated, the case proved nothing")
	}
	f.Note = fmt.Sprintf("%d follow-ups of truncated answers", f.Requests.BySource[store.SourceFollowUp])
	return nil
}

// auditEmpty is an audit's all-clear line for an origin: no divergent bucket.
var auditEmpty = regexp.MustCompile(`(?m)^audit \S+: window \[\d+, \d+\): 0 divergent buckets`)

// c. Copies deleted directly in the consumer's database, scattered over many streams and below
// every lane floor (only the audit sees them): `streamseal audit` run again and again converges
// within a bounded number of audits, and every audit before convergence says UNRESOLVED (never
// all-clear while digests differ).
func scatteredDamage(ctx context.Context, w *World, size Size, f *Figures) error {
	streams := size.pick(3000, 50000)
	digestsPerManifest := size.pick(100, config.MaxDigestsPerManifestDefault)
	origin, consumer, err := pair(ctx, w, 0)
	if err != nil {
		return err
	}
	wl := workload(streams)
	if err := wl.AppendAll(ctx, origin, streams, 5000); err != nil {
		return err
	}
	if _, _, err := WaitConverged(ctx, origin, consumer, types, time.Now()); err != nil {
		return fmt.Errorf("before the damage: %w", err)
	}
	// An audit asks the origins this service learned from verified checkpoints; the inbox
	// verifies them at its own pace (checkpoint_inbox), so converged copies do not imply it yet.
	if err := Until(ctx, "the consumer knows the origin from a verified checkpoint", func() (bool, error) {
		n, err := count(ctx, consumer, "select count(*) from streamseal.known_origins where origin = $1", origin.Name)
		return n == 1, err
	}); err != nil {
		return err
	}
	// Delete copies below every lane floor: none of the newest 5% of each type.
	deleted, err := count(ctx, consumer, `
		with below as (
		    select event_id from streamseal.events e
		    where origin = $1 and type_seq < (select 0.95 * max(type_seq) from streamseal.events m
		                                      where m.origin = e.origin and m.tenant = e.tenant and m.event_type = e.event_type)
		    order by md5(event_id::text) limit $2),
		gone as (delete from streamseal.events where event_id in (select event_id from below) returning 1)
		select count(*) from gone`, origin.Name, size.pick(60, 500))
	if err != nil {
		return err
	}
	f.Damage = deleted
	start := time.Now()
	// One audit pages 10 x digestsPerManifest streams of an origin; the damage is everywhere.
	bound := (streams+10*digestsPerManifest-1)/(10*digestsPerManifest) + 4
	args := []string{"audit", "--database-url", consumer.URL, "--nats-url", w.NATSURL(), "--full", "--settle-window", "0s",
		"--max-digests-per-manifest", fmt.Sprint(digestsPerManifest)}
	var summary []string
	for {
		c, err := Compare(ctx, origin, consumer, types)
		if err != nil {
			return err
		}
		if c.Converged() {
			break
		}
		if f.Audits >= bound {
			f.Note = strings.Join(summary, " ")
			return fmt.Errorf("not converged after %d audits (bound %d): %s", f.Audits, bound, c)
		}
		f.Audits++
		out, err := consumer.Exec(ctx, args...)
		_ = os.WriteFile(filepath.Join(w.Dir, fmt.Sprintf("audit-%02d.log", f.Audits)), []byte(out), 0o644)
		if err != nil {
			return fmt.Errorf("audit %d: %w\n%s", f.Audits, err, out)
		}
		unresolved := strings.Contains(out, "UNRESOLVED")
		summary = append(summary, fmt.Sprintf("#%d:lost=%d,unresolved=%v", f.Audits, c.Lost, unresolved))
		if auditEmpty.MatchString(out) && !unresolved {
			return fmt.Errorf("audit %d reported all-clear (0 divergent buckets, nothing unresolved) while %d copies were missing:\n%s", f.Audits, c.Lost, out)
		}
		if !unresolved {
			return fmt.Errorf("audit %d did not report UNRESOLVED while %d copies were missing (digests differed when it started):\n%s", f.Audits, c.Lost, out)
		}
		// The audit's repairs (and their follow-ups) are answered before the next audit.
		_ = Until(ctx, "every request sent answered", func() (bool, error) {
			n, err := count(ctx, consumer, "select count(*) from streamseal.sent_requests where answered_at is null")
			return n == 0, err
		})
	}
	f.Note = fmt.Sprintf("%d streams; %d audits (bound %d)", streams, f.Audits, bound)
	return finish(ctx, w, origin, consumer, wl, start, f)
}

// d. The origin is killed -9 while it builds an answer (a queued request's build started: its
// attempts counted, its bundles partly shipped); after its restart the copy converges.
func originKilledMidBuild(ctx context.Context, w *World, size Size, f *Figures) error {
	const drop = 0.5
	origin, consumer, err := pair(ctx, w, drop)
	if err != nil {
		return err
	}
	wl := workload(size.pick(100, 200))
	if err := wl.AppendAll(ctx, origin, size.pick(6000, 30000), 2000); err != nil {
		return err
	}
	if err := Until(ctx, "a build in progress on the origin", func() (bool, error) {
		n, err := count(ctx, origin, "select count(*) from streamseal.redelivery_queue where attempts > 0")
		return n >= 1, err
	}); err != nil {
		return err
	}
	origin.Run.Kill9()
	building, _ := count(ctx, origin, "select count(*) from streamseal.redelivery_queue where attempts > 0")
	queued, _ := count(ctx, origin, "select count(*) from streamseal.redelivery_queue")
	f.Note = fmt.Sprintf("killed with %d builds started, %d requests queued", building, queued)
	f.Damage = dropped(ctx, origin, drop)
	time.Sleep(time.Second)
	if err := origin.Run.Start(); err != nil {
		return err
	}
	return finish(ctx, w, origin, consumer, wl, time.Now(), f)
}

// e. The consumer is killed -9 while repairs are in flight (a sent request not answered yet);
// after its restart the copy converges.
func consumerKilledMidRepair(ctx context.Context, w *World, size Size, f *Figures) error {
	const drop = 0.4
	origin, consumer, err := pair(ctx, w, drop)
	if err != nil {
		return err
	}
	wl := workload(size.pick(200, 1000))
	if err := wl.AppendAll(ctx, origin, size.pick(6000, 30000), 2000); err != nil {
		return err
	}
	if err := Until(ctx, "a repair request in flight", func() (bool, error) {
		n, err := count(ctx, consumer, "select count(*) from streamseal.sent_requests where answered_at is null")
		return n >= 1, err
	}); err != nil {
		return err
	}
	consumer.Run.Kill9()
	inFlight, _ := count(ctx, consumer, "select count(*) from streamseal.sent_requests where answered_at is null")
	f.Note = fmt.Sprintf("killed with %d requests unanswered", inFlight)
	f.Damage = dropped(ctx, origin, drop)
	time.Sleep(time.Second)
	if err := consumer.Run.Start(); err != nil {
		return err
	}
	return finish(ctx, w, origin, consumer, wl, time.Now(), f)
}

// load appends at rate events a second in the background until the returned stop, which lets
// the append in flight finish (so wl.Appended is exact) and returns how many batches failed.
func load(ctx context.Context, wl *Workload, origin *Service, rate int) (stop func() int) {
	quit := make(chan struct{})
	done := make(chan int, 1)
	go func() { done <- wl.Steady(ctx, origin, rate, quit) }()
	return func() int { close(quit); return <-done }
}

// f. The NATS server is killed -9 while the origin appends at a steady rate, and restarted two
// seconds later on the same store: the copy converges.
func natsKilledUnderLoad(ctx context.Context, w *World, size Size, f *Figures) error {
	const drop = 0.1
	origin, consumer, err := pair(ctx, w, drop)
	if err != nil {
		return err
	}
	wl := workload(size.pick(200, 1000))
	rate := size.pick(300, 1000)
	stop := load(ctx, wl, origin, rate)
	time.Sleep(2 * time.Second)
	w.NATS.Kill9()
	time.Sleep(2 * time.Second)
	if err := w.RestartNATS(ctx); err != nil {
		stop()
		return err
	}
	time.Sleep(2 * time.Second)
	failed := stop()
	f.Note = fmt.Sprintf("%d events/s; %d batches failed", rate, failed)
	f.Damage = dropped(ctx, origin, drop)
	return finish(ctx, w, origin, consumer, wl, time.Now(), f)
}

// g. Each side's PostgreSQL is restarted with an immediate shutdown while the origin appends at
// a steady rate: the copy converges.
func postgresRestarts(ctx context.Context, w *World, size Size, f *Figures) error {
	const drop = 0.1
	origin, consumer, err := pair(ctx, w, drop)
	if err != nil {
		return err
	}
	wl := workload(size.pick(200, 1000))
	rate := size.pick(300, 500)
	stop := load(ctx, wl, origin, rate)
	time.Sleep(2 * time.Second)
	if err := consumer.RestartPostgres(ctx); err != nil {
		stop()
		return err
	}
	time.Sleep(2 * time.Second)
	if err := origin.RestartPostgres(ctx); err != nil {
		stop()
		return err
	}
	time.Sleep(2 * time.Second)
	failed := stop()
	f.Note = fmt.Sprintf("%d events/s; %d batches failed while a database restarted", rate, failed)
	f.Damage = dropped(ctx, origin, drop)
	return finish(ctx, w, origin, consumer, wl, time.Now(), f)
}

// h. Every event delivered again, twice, in shuffled order, on the events' own subjects (fresh
// message ids, so JetStream does not deduplicate them), while the consumer drops the first
// delivery of some: the copy converges with no extra row and equal digests (idempotence, order
// independence).
func duplicatesAndReorder(ctx context.Context, w *World, size Size, f *Figures) error {
	const drop = 0.3
	origin, consumer, err := pair(ctx, w, drop)
	if err != nil {
		return err
	}
	wl := workload(size.pick(200, 1000))
	start := time.Now()
	if err := wl.AppendAll(ctx, origin, size.pick(3000, 20000), 1000); err != nil {
		return err
	}
	if err := Until(ctx, "every event stamped", func() (bool, error) {
		n, err := count(ctx, origin, "select count(*) from streamseal.unstamped")
		return n == 0, err
	}); err != nil {
		return err
	}
	nc, err := nats.Connect(w.NATSURL(), nats.Name("chaos-replay"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	rows, err := origin.Pool.Query(ctx, `
		select event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags, payload,
		       metadata::text::bytea, occurred_at
		from streamseal.numbered_events where origin = $1`, origin.Name)
	if err != nil {
		return err
	}
	var events []store.EventCopy
	var e store.EventCopy
	var flags int32
	if _, err := pgx.ForEachRow(rows, []any{&e.EventID, &e.Origin, &e.OriginSeq, &e.TypeSeq, &e.Tenant, &e.StreamID,
		&e.StreamVersion, &e.EventType, &flags, &e.Payload, &e.Metadata, &e.OccurredAt}, func() error {
		e.Flags = store.Flags(flags)
		events = append(events, e)
		return nil
	}); err != nil {
		return err
	}
	published := 0
	for round := range 2 {
		rand.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
		for i, e := range events {
			m := wire.EventMessage(e)
			m.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s:%d:chaos-replay-%d", e.Origin, e.OriginSeq, round))
			if _, err := js.PublishMsgAsync(m); err != nil {
				return fmt.Errorf("re-publish: %w", err)
			}
			published++
			if i%500 == 499 || i == len(events)-1 {
				select {
				case <-js.PublishAsyncComplete():
				case <-time.After(Failsafe):
					return fmt.Errorf("re-published events not acknowledged by JetStream")
				}
			}
		}
	}
	// The consumer subscribes every tenant of each type from any origin: one durable per type.
	var consumers []jetstream.Consumer
	for _, eventType := range wl.Types {
		cons, err := js.Consumer(ctx, wire.EventsStream, wire.InboxDurable(consumerName, wire.LiveFilter("*", "*", eventType)))
		if err != nil {
			return err
		}
		consumers = append(consumers, cons)
	}
	if err := Until(ctx, "the consumer's inbox took every re-published delivery", func() (bool, error) {
		for _, cons := range consumers {
			info, err := cons.Info(ctx)
			if err != nil {
				return false, err
			}
			if info.NumPending != 0 || info.NumAckPending != 0 {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	f.Damage = dropped(ctx, origin, drop)
	f.Note = fmt.Sprintf("%d duplicate deliveries re-published in shuffled order", published)
	return finish(ctx, w, origin, consumer, wl, start, f)
}

// i. Two `streamseal run` replicas per service, as production runs them, while the origin
// appends at a steady rate and the consumer drops the first delivery of some events: the relay
// leader of each service (the replica whose session holds the relay's leader lock) is killed -9
// in turn, the other replica takes the lock (the witness: the lock's holder changes) and the
// service makes progress under it (the origin's relay cursor, the consumer's copies), then the
// killed replica is restarted and the next kill takes the other one. Repair runs across replicas
// meanwhile (requests sent by one, answers fetched by either). The copy converges with nothing
// lost or duplicated, every append counted exactly, and the origin's numbering dense (origin_seq
// per service, type_seq per tenant and type) though two replicas' stampers and relays took turns.
func replicasKilledInTurn(ctx context.Context, w *World, size Size, f *Figures) error {
	const (
		drop     = 0.2
		replicas = 2
	)
	rounds := size.pick(2, 4)
	origin, consumer, err := replicatedPair(ctx, w, replicas, drop)
	if err != nil {
		return err
	}
	wl := workload(size.pick(200, 1000))
	rate := size.pick(300, 500)
	stop := load(ctx, wl, origin, rate)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	// What shows a service working under its new leader: the origin's relay publishes past
	// its cursor at the kill; the consumer (whose relay has nothing of its own to publish)
	// stores copies past its count at the kill.
	progress := map[*Service]string{
		origin:   "select published_through from streamseal.relay_state",
		consumer: fmt.Sprintf("select count(*) from streamseal.events where origin = '%s'", origin.Name),
	}
	// What repair had in flight at each kill (a figure: the kills are not timed to it): requests
	// the origin accepted and has not answered, requests the consumer sent and has not seen
	// answered.
	inFlight := map[*Service]string{
		origin:   "select count(*) from streamseal.redelivery_queue",
		consumer: "select count(*) from streamseal.sent_requests where answered_at is null",
	}
	// Each kill lands while repair is in flight: a request the consumer sent since the last
	// kill's and not yet answered (the origin may hold it queued, or be building its answer).
	var asked []string
	repairInFlight := func() error {
		return Until(ctx, "a repair request sent since the last kill and not answered yet", func() (bool, error) {
			var fresh []string
			err := consumer.Pool.QueryRow(ctx, `select coalesce(array_agg(request_id::text), '{}') from streamseal.sent_requests
				where answered_at is null and origin = $1`, origin.Name).Scan(&fresh)
			for _, id := range fresh {
				if !slices.Contains(asked, id) {
					asked = append(asked, fresh...)
					return true, err
				}
			}
			return false, err
		})
	}
	var takeovers []string
	pending := map[*Service]int{}
	for round := range rounds {
		for _, s := range []*Service{origin, consumer} {
			if err := repairInFlight(); err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, s.Name, err)
			}
			took, n, err := killRelayLeader(ctx, s, progress[s], inFlight[s])
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, s.Name, err)
			}
			takeovers = append(takeovers, took)
			pending[s] += n
		}
	}
	failed := stop()
	stopped = true
	f.Damage = dropped(ctx, origin, drop)
	if err := finish(ctx, w, origin, consumer, wl, time.Now(), f); err != nil {
		return err
	}
	stored, err := count(ctx, origin, "select count(*) from streamseal.numbered_events where origin = $1", origin.Name)
	if err != nil {
		return err
	}
	if int64(stored) != f.Events {
		return fmt.Errorf("the origin stored %d events; the workload counted %d appended", stored, f.Events)
	}
	if holes, err := NumberingHoles(ctx, origin); err != nil || holes != "" {
		return fmt.Errorf("the origin's numbering is not dense after its relays and stampers took turns: %s (%v)", holes, err)
	}
	bundles, events := replayedBundles(consumer.Runs...)
	f.Note = fmt.Sprintf("%d events/s; %d batches failed; at the kills %d requests queued on the origin, %d unanswered on the consumer; "+
		"%d bundles (%d events) dropped as replayed; leader kills %s",
		rate, failed, pending[origin], pending[consumer], bundles, events, strings.Join(takeovers, " "))
	return nil
}

// killRelayLeader kills -9 the replica of s whose relay leads, waits for another replica to take
// the leader lock and for s to make progress under it (progressSQL, a number that grows), and
// restarts the killed replica, waiting for its control plane to start. It returns the kill, for
// the note (the replica killed, the one that took over, and the seconds between: a figure only),
// and what inFlightSQL counted right after the kill.
func killRelayLeader(ctx context.Context, s *Service, progressSQL, inFlightSQL string) (string, int, error) {
	var killed int
	if err := Until(ctx, "a replica of "+s.Name+" leading its relay", func() (bool, error) {
		i, ok, err := s.RelayLeader(ctx)
		killed = i
		return ok, err
	}); err != nil {
		return "", 0, err
	}
	p := s.Runs[killed]
	started := linesWith(runStarted, p)
	p.Kill9()
	at := time.Now()
	var before, inFlight int
	if err := s.Pool.QueryRow(ctx, progressSQL).Scan(&before); err != nil {
		return "", 0, err
	}
	if err := s.Pool.QueryRow(ctx, inFlightSQL).Scan(&inFlight); err != nil {
		return "", 0, err
	}
	var leader int
	if err := Until(ctx, "another replica of "+s.Name+" taking the relay's leader lock", func() (bool, error) {
		i, ok, err := s.RelayLeader(ctx)
		leader = i
		return ok && i != killed, err
	}); err != nil {
		return "", 0, err
	}
	took := time.Since(at)
	if err := Until(ctx, s.Name+" making progress under its new relay leader", func() (bool, error) {
		n, err := count(ctx, s, progressSQL)
		return n > before, err
	}); err != nil {
		return "", 0, err
	}
	if err := p.Start(); err != nil {
		return "", 0, err
	}
	if err := Until(ctx, p.Name+" started again", func() (bool, error) {
		return linesWith(runStarted, p) > started, nil
	}); err != nil {
		return "", 0, err
	}
	return fmt.Sprintf("%s→r%d:%.1fs", p.Name, leader, took.Seconds()), inFlight, nil
}

// runStarted is the log line of a run process whose control plane is up.
const runStarted = "streamseal run: control plane started"

// replayedBundle is the log line of an answer's bundle dropped at the consumer's seam as a replay,
// with how many events it carried: the known defect of replicas sharing the control durable (a
// bundle handled after its answer's summary, on another replica). Re-asks cover what it drops.
var replayedBundle = regexp.MustCompile(`reason=replayed .*kind=redelivery_bundle .*detail="bundle of (\d+) events`)

// replayedBundles counts the answers' bundles the processes dropped as replayed, and their events.
func replayedBundles(processes ...*Process) (bundles, events int) {
	for _, p := range processes {
		b, err := os.ReadFile(p.LogPath)
		if err != nil {
			continue
		}
		for _, m := range replayedBundle.FindAllSubmatch(b, -1) {
			n, _ := strconv.Atoi(string(m[1]))
			bundles, events = bundles+1, events+n
		}
	}
	return bundles, events
}

// linesWith counts the lines of the processes' logs that hold substr.
func linesWith(substr string, processes ...*Process) int {
	n := 0
	for _, p := range processes {
		b, err := os.ReadFile(p.LogPath)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, substr) {
				n++
			}
		}
	}
	return n
}
