// Package demo is `streamseal demo`, the project's main job on an embedded default: three
// services in one process over the real wire (embedded NATS with JetStream, one PostgreSQL
// database each): "orders" emits, "billing" and "shipping" consume. A receive-side defect at
// billing silently drops some deliveries. The demo prints the timeline as it happens (checkpoint
// -> gap named -> repair requested -> events re-delivered -> converged), then runs the deep audit
// of each consumer over the wire (a type-level manifest the origin answers from sealed epochs; the
// consumer's seal advances when the window matches whole), checks the rows byte for byte, and
// ends with a VERDICT line. Every claim it prints is checked against the databases; it exits
// non-zero unless every consumer converged.
package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	auditpkg "github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/harness"
	"github.com/streamseal/streamseal/internal/scratchdb"
)

var (
	allTypes      = []string{"order.placed", "order.paid", "order.shipped"}
	shippingTypes = []string{"order.placed", "order.shipped"}
)

// Options adjust a demo run.
type Options struct {
	// Keep keeps the three services running after the verdict, with a trickle of new orders
	// (and billing's defect still dropping some), each serving /metrics, /healthz and /readyz
	// on MetricsAddr's port and the next two, until ctx ends (Ctrl-C).
	Keep        bool
	MetricsAddr string // default config.DemoMetricsAddrDefault; port 0 picks free ports
	// Secured runs the embedded NATS server with authorization on and TLS only, requiring client
	// certificates (throwaway ones): each service connects as its own user over TLS with the
	// permissions natsauth generates from Topology (what `streamseal demo` does).
	Secured bool
}

// Topology is the demo's bus: orders is the origin; billing consumes every order type and
// shipping two of them, from any origin, every tenant.
func Topology() natsauth.Topology {
	consumes := func(types []string) []natsauth.Consumption {
		return []natsauth.Consumption{{Origin: natsauth.AnyOrigin, Types: types, AllTenants: true}}
	}
	return natsauth.Topology{Services: []natsauth.Service{
		{Name: "orders"},
		{Name: "billing", Consumes: consumes(allTypes)},
		{Name: "shipping", Consumes: consumes(shippingTypes)},
	}}
}

// Run plays the demo on databases of server.
func Run(ctx context.Context, server *scratchdb.Server, out io.Writer, opts Options) error {
	host, port, err := metricsPorts(opts.MetricsAddr)
	if opts.Keep && err != nil { // refused before anything starts
		return err
	}
	start := time.Now()
	tl := &timeline{out: out, start: start}
	logger := slog.New(tl)
	newDB := func(ctx context.Context, service string) (string, error) {
		return server.CreateDatabase(ctx, "streamseal_demo_"+service)
	}
	var h *harness.Harness
	if opts.Secured {
		h, err = harness.NewSecured(ctx, newDB, logger, Topology(), true)
	} else {
		h, err = harness.New(ctx, newDB, logger)
	}
	if err != nil {
		return err
	}
	defer h.Close()
	settings := config.Defaults()
	settings.CheckpointInterval = 500 * time.Millisecond
	settings.MaintenanceInterval = time.Hour
	// The demo audits seconds after the last repair: nothing may count as in flight by then.
	settings.SettleWindow = time.Millisecond

	bus := "embedded NATS JetStream"
	if opts.Secured {
		bus += " with authorization and TLS on (each service its own user and client certificate, least-privilege permissions)"
	}
	tl.say("starting orders (origin), billing and shipping (consumers): one PostgreSQL database each, %s", bus)
	orders, err := h.Start(ctx, "orders", harness.Options{Settings: settings,
		Grants: map[string][]string{"billing": allTypes, "shipping": shippingTypes}}, nil)
	if err != nil {
		return err
	}
	// The incident: billing's receive boundary silently loses every 23rd order.paid delivery.
	var lostMu sync.Mutex
	var paidSeen, lost int
	billing, err := h.Start(ctx, "billing", harness.Options{Settings: settings, Consumes: allTypes,
		Suppress: func(e store.EventCopy) bool {
			if e.EventType != "order.paid" {
				return false
			}
			lostMu.Lock()
			defer lostMu.Unlock()
			paidSeen++
			if paidSeen%23 == 0 {
				lost++
				return true
			}
			return false
		}}, nil)
	if err != nil {
		return err
	}
	shipping, err := h.Start(ctx, "shipping", harness.Options{Settings: settings, Consumes: shippingTypes}, nil)
	if err != nil {
		return err
	}

	const total = 900
	feed := &orderFeed{}
	if err := feed.append(ctx, orders.Pool, total); err != nil {
		return err
	}
	tl.say("orders appended %d events (%d streams, %s); the stamper numbers them in commit order, the relay publishes them",
		total, 30, strings.Join(allTypes, ", "))
	if err := waitFor(ctx, func() (bool, error) {
		var relayed int64
		err := orders.Pool.QueryRow(ctx, "select published_through from streamseal.relay_state").Scan(&relayed)
		return relayed == total, err
	}); err != nil {
		return err
	}
	tl.say("relay: all %d events acknowledged by JetStream", total)

	expect := map[*harness.Service]int{billing: total, shipping: total * 2 / 3}
	for s, want := range expect {
		s, want := s, want
		if err := waitFor(ctx, func() (bool, error) { return count(ctx, s.Pool) == want, nil }); err != nil {
			return fmt.Errorf("%s never converged: %w", s.Name, err)
		}
	}
	lostMu.Lock()
	dropped := lost
	lostMu.Unlock()
	tl.say("converged: billing holds %d of %d (it lost %d at its receive boundary and got them back), shipping holds %d",
		count(ctx, billing.Pool), total, dropped, count(ctx, shipping.Pool))

	var failures []string
	for _, s := range []*harness.Service{billing, shipping} {
		failures = append(failures, audit(ctx, tl, orders, s)...)
	}
	if dropped == 0 {
		failures = append(failures, "the injected defect dropped nothing: the demo proved nothing")
	}
	if gaps := countGaps(ctx, billing.Pool); gaps == 0 {
		failures = append(failures, "billing never named a gap")
	}
	tl.say("done in %s", time.Since(start).Round(10*time.Millisecond))
	verdict := error(nil)
	if len(failures) > 0 {
		fmt.Fprintf(out, "VERDICT diverged: %s\n", strings.Join(failures, "; "))
		verdict = errors.New("demo: a consumer diverged")
	} else {
		fmt.Fprintf(out, "VERDICT converged: billing and shipping hold every event they consume from orders, byte for byte; digests and seals agree\n")
	}
	if opts.Keep {
		if err := keep(ctx, tl, host, port, feed, []*harness.Service{orders, billing, shipping}); err != nil {
			return err
		}
	}
	return verdict
}

// keep serves each service's metrics and health on consecutive ports and trickles new orders
// (30 a second) until ctx ends; the backlog gauges are refreshed every few seconds, as the
// maintenance cycle would.
func keep(ctx context.Context, tl *timeline, host string, port int, feed *orderFeed, services []*harness.Service) error {
	for i, s := range services {
		p := port
		if port != 0 {
			p = port + i
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return fmt.Errorf("serve %s's metrics: %w", s.Name, err)
		}
		srv := &http.Server{Handler: s.Metrics.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		tl.say("metrics: %s on http://%s/metrics (also /healthz, /readyz)", s.Name, ln.Addr())
	}
	tl.say("kept running: orders trickles 30 events a second, billing still drops every 23rd order.paid; Ctrl-C to stop")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; ; n++ {
		if n%5 == 0 {
			for _, s := range services {
				if err := s.Metrics.Refresh(ctx); err != nil && ctx.Err() == nil {
					tl.say("metrics refresh of %s: %v", s.Name, err)
				}
			}
		}
		select {
		case <-ctx.Done():
			tl.say("stopping")
			return nil
		case <-tick.C:
		}
		if err := feed.append(ctx, services[0].Pool, 30); err != nil && ctx.Err() == nil {
			return err
		}
	}
}

// audit compares a consumer with the origin the way the deep audit does, with the SQL
// primitives: close settled epochs on both sides, answer the whole lane from sealed epochs at
// the origin, fold the same window at the consumer, compare per (tenant, type), and certify the
// window with advance_seal when everything matches.
func audit(ctx context.Context, tl *timeline, origin, consumer *harness.Service) []string {
	var failures []string
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		tl.say("audit %s: FAIL %s", consumer.Name, msg)
		failures = append(failures, consumer.Name+": "+msg)
	}
	// What the maintenance cycle does (hourly in the demo): close the settled epochs, so the
	// origin answers from sealed epochs.
	for _, s := range []*harness.Service{origin, consumer} {
		if _, err := store.EpochsClose(ctx, s.Pool, store.EpochOptions{MaxEpochs: 1000, Width: 100, Settle: time.Nanosecond}); err != nil {
			fail("close epochs at %s: %v", s.Name, err)
			return failures
		}
	}
	// The deep audit, as the River job runs it: a type-level manifest over the wire, compared,
	// drilled into only if something differs, and the seal advanced when the window matched whole.
	findings, err := consumer.Auditor.Run(ctx, auditpkg.Scope{Origin: origin.Name})
	if err != nil || len(findings) != 1 {
		fail("deep audit: %d findings, %v", len(findings), err)
		return failures
	}
	f := findings[0]
	switch {
	case f.Skipped != "":
		fail("the audit round was skipped: %s", f.Skipped)
	case len(f.Divergent) > 0:
		for _, b := range f.Divergent {
			fail("%s %s/%s stream %s: local n=%d, origin n=%d", b.Reason, b.Tenant, b.Type, b.Stream, b.LocalN, b.OriginN)
		}
	case !f.Sealed:
		fail("the window [%d, %d) matched but was not certified", f.From, f.To)
	}
	if len(failures) > 0 {
		return failures
	}
	var types []string
	rows, err := consumer.Pool.Query(ctx, "select event_type from streamseal.subscriptions")
	if err == nil {
		types, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		fail("subscriptions: %v", err)
		return failures
	}
	if a, b := fingerprint(ctx, origin.Pool, types), fingerprint(ctx, consumer.Pool, types); a == "" || a != b {
		fail("stored rows differ from the origin's (ids, sequences, payload bytes): %s vs %s", a, b)
		return failures
	}
	tl.say("audit %s: rows byte-equal; the deep audit's type-level manifest over [%d, %d) from sealed epochs matches; seal of %s advanced to %d",
		consumer.Name, f.From, f.To, origin.Name, f.SealedThrough)
	return failures
}

// fingerprint hashes every stored row of the orders lane of the given types, in origin_seq order:
// identity, sequences, stream position and payload bytes. Equal fingerprints: byte-equal copies.
func fingerprint(ctx context.Context, pool *pgxpool.Pool, types []string) string {
	var f string
	_ = pool.QueryRow(ctx, `
		select md5(string_agg(event_id::text || ':' || origin_seq || ':' || type_seq || ':' || stream_id || ':' ||
		                      stream_version || ':' || encode(payload, 'hex'), ',' order by origin_seq))
		from streamseal.numbered_events where origin = 'orders' and event_type = any($1)`, types).Scan(&f)
	return f
}

// metricsPorts reads the kept demo's metrics address: orders serves on its port, billing and
// shipping on the next two (port 0: each on a free port).
func metricsPorts(addr string) (string, int, error) {
	addr = cmp.Or(addr, config.DemoMetricsAddrDefault)
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("demo: metrics address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65533 {
		return "", 0, fmt.Errorf("demo: metrics address %q: the port must be a number from 0 to 65533 (three consecutive ports are used)", addr)
	}
	return host, port, nil
}

// orderFeed appends orders over 30 streams, continuing where its last call stopped.
type orderFeed struct {
	next     int
	versions map[string]int64
}

func (f *orderFeed) append(ctx context.Context, pool *pgxpool.Pool, n int) error {
	if f.versions == nil {
		f.versions = map[string]int64{}
	}
	var batch []store.NewEvent
	for range n {
		i := f.next
		f.next++
		stream := fmt.Sprintf("order-%02d", i%30)
		f.versions[stream]++
		batch = append(batch, store.NewEvent{EventID: uuid.New(), Tenant: []string{"acme", "globex"}[i%2], StreamID: stream,
			StreamVersion: f.versions[stream], EventType: allTypes[i%3],
			Payload: []byte(fmt.Sprintf(`{"order":%d,"amount":%d}`, i%30, 10+i))})
		if len(batch) == 30 {
			if _, err := store.EventsAppend(ctx, pool, batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	return nil
}

func count(ctx context.Context, pool *pgxpool.Pool) int {
	var n int
	_ = pool.QueryRow(ctx, "select count(*) from streamseal.events where origin = 'orders'").Scan(&n)
	return n
}

func countGaps(ctx context.Context, pool *pgxpool.Pool) int {
	var n int
	_ = pool.QueryRow(ctx, "select count(*) from streamseal.gap_reports").Scan(&n)
	return n
}

func waitFor(ctx context.Context, done func() (bool, error)) error {
	deadline := time.Now().Add(45 * time.Second)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("not within 45s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// timeline prints the demo's story: its own lines, and the control plane's log records that
// mark a step (checkpoints, gaps, repair requests, redeliveries), with the time since start.
type timeline struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
	attrs []slog.Attr
}

func (t *timeline) say(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.out, "%6.2fs  %s\n", time.Since(t.start).Seconds(), fmt.Sprintf(format, args...))
}

// Enabled implements slog.Handler.
func (t *timeline) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelInfo }

// Handle implements slog.Handler: a few records are steps of the story; the rest stay quiet.
func (t *timeline) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{}
	for _, a := range t.attrs {
		attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	switch r.Message {
	case "checkpoint: gap confirmed":
		t.say("%s: checkpoint (window [%s, %s)) from orders: GAP CONFIRMED %s/%s type_seqs %s (floor held at %s)",
			attrs["service"], attrs["window_from"], attrs["window_to"], attrs["tenant"], attrs["type"], attrs["type_seqs"], attrs["floor"])
	case "checkpoint: repair requested":
		t.say("%s: repair requested from %s: %s/%s type_seqs %s", attrs["service"], attrs["origin"], attrs["tenant"], attrs["type"], attrs["type_seqs"])
	case "redelivery: served":
		t.say("%s: re-delivered %s events in %s bundles to %s", attrs["service"], attrs["shipped"], attrs["bundles"], attrs["requester"])
	default:
		if r.Level >= slog.LevelError && !strings.Contains(r.Message, "River") {
			t.say("%s: ERROR %s %v", attrs["service"], r.Message, attrs)
		}
	}
	return nil
}

// WithAttrs implements slog.Handler.
func (t *timeline) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &timelineView{t: t, attrs: attrs}
}

// WithGroup implements slog.Handler.
func (t *timeline) WithGroup(string) slog.Handler { return t }

// timelineView is the timeline with attributes bound (the service name).
type timelineView struct {
	t     *timeline
	attrs []slog.Attr
}

func (v *timelineView) Enabled(ctx context.Context, l slog.Level) bool { return v.t.Enabled(ctx, l) }
func (v *timelineView) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(v.attrs...)
	return v.t.Handle(ctx, r)
}
func (v *timelineView) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &timelineView{t: v.t, attrs: append(append([]slog.Attr{}, v.attrs...), attrs...)}
}
func (v *timelineView) WithGroup(string) slog.Handler { return v }
