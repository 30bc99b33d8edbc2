// Package metrics exposes one service's control plane to Prometheus (namespace streamseal_) and
// serves /healthz and /readyz. Three kinds of instrument: plain counters read the components'
// own counters at scrape time (Sources); histograms and labelled counters are fed by the
// components where the work happens (Instruments, instruments.go); the backlog gauges (unhealed,
// exhausted, oldest unhealed age, sealed_through and origin_silent per origin, and the accepted
// loss counters) are read once per
// maintenance cycle (Refresh) and swapped in whole, and /readyz judges that same reading. Nothing queries the database for the sake of a metric, and no
// scrape sees a half-updated reading.
package metrics

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/streamseal/streamseal/controlplane/store"
)

const namespace = "streamseal"

// Sources are the in-process counters the metrics read at scrape time.
type Sources struct {
	InboxStored, InboxSuppressed, InboxRejected   func() int64
	CheckpointsPublished                          func() int64
	CheckpointsReceived, GapsDetected             func() int64
	RedeliveryRequestsReceived, RedeliveryRefused func() int64
	RedeliveryEventsShipped                       func() int64
	ManifestsAnswered, ManifestChunksSent         func() int64
	SeamDropped                                   func() map[string]int64
}

// Backlog is one maintenance cycle's reading of the ledger and seals.
type Backlog struct {
	Unhealed, Exhausted int64
	OldestUnhealed      time.Duration
	SealedThrough       map[string]int64
	ConfirmedGapLanes   int64
	Quarantined         int64 // own events set aside (streamseal.quarantine)

	// What readiness reads beyond the gauges above. Deficits and confirmed gaps count only once
	// older than the exporter's Grace; identity mismatches and local extras at once.
	AgedDeficits          int64 // deficit buckets unhealed longer than the grace
	AgedConfirmedGapLanes int64 // lanes holding a confirmed gap longer than the grace
	IdentityMismatches    int64
	LocalExtras           int64
	Silent                map[string]bool // per known origin: the liveness alarm stands

	// Losses sums the accepted losses (events) per origin and reason (streamseal.loss_reports):
	// at-most-once occurrences that never arrived, reaped ephemeral events, what an origin could
	// not serve. Exported as counters: the reports are never pruned.
	Losses map[store.LossKey]int64
}

// Exporter owns the registry, the instruments the components feed, and the latest backlog
// reading.
type Exporter struct {
	Registry    *prometheus.Registry
	Instruments *Instruments
	pool        *pgxpool.Pool
	nc          *nats.Conn

	// Grace is how long a deficit bucket stays unhealed, or a lane holds a confirmed gap, before
	// readiness counts it (0: at once). Set before the first Refresh.
	Grace time.Duration
	// Now is the clock Refresh measures the grace with (nil: time.Now).
	Now func() time.Time

	mu      sync.RWMutex
	backlog Backlog
}

// New registers every instrument for one service.
func New(pool *pgxpool.Pool, nc *nats.Conn, src Sources) *Exporter {
	e := &Exporter{Registry: prometheus.NewRegistry(), pool: pool, nc: nc}
	e.Instruments = newInstruments(e.Registry)
	counter := func(name, help string, f func() int64) {
		if f == nil {
			return
		}
		e.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help},
			func() float64 { return float64(f()) }))
	}
	counter("inbox_events_stored_total", "Events the inbox stored (after commit).", src.InboxStored)
	counter("inbox_events_suppressed_total", "Deliveries dropped by fault injection at the receive seam.", src.InboxSuppressed)
	counter("inbox_rejects_total", "Messages the inbox could not store (recorded in inbox_rejects).", src.InboxRejected)
	counter("checkpoints_published_total", "Checkpoint messages this origin published.", src.CheckpointsPublished)
	counter("checkpoints_received_total", "Other origins' checkpoints this service verified.", src.CheckpointsReceived)
	counter("gaps_detected_total", "Lanes with a newly confirmed gap.", src.GapsDetected)
	counter("redelivery_requests_received_total", "Redelivery requests this origin received.", src.RedeliveryRequestsReceived)
	counter("redelivery_requests_refused_total", "Redelivery requests refused (ungranted types, unnamed tenants).", src.RedeliveryRefused)
	counter("redelivery_events_shipped_total", "Events shipped in redelivery bundles.", src.RedeliveryEventsShipped)
	counter("manifests_answered_total", "Manifest requests this origin answered.", src.ManifestsAnswered)
	counter("manifest_chunks_sent_total", "Manifest answer chunks sent.", src.ManifestChunksSent)
	if src.SeamDropped != nil {
		e.Registry.MustRegister(&seamCollector{desc: prometheus.NewDesc(namespace+"_seam_dropped_total",
			"Control messages dropped at the receive seam, by reason.", []string{"reason"}, nil), read: src.SeamDropped})
	}
	gauge := func(name, help string, f func(Backlog) float64) {
		e.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help},
			func() float64 { e.mu.RLock(); defer e.mu.RUnlock(); return f(e.backlog) }))
	}
	gauge("unhealed_buckets", "Divergent buckets the repair ledger tracks (falls as heals delete rows).", func(b Backlog) float64 { return float64(b.Unhealed) })
	gauge("repair_exhausted_buckets", "Unhealed buckets that spent their repair budget: the number worth an alert.", func(b Backlog) float64 { return float64(b.Exhausted) })
	gauge("oldest_unhealed_age_seconds", "Age of the longest-standing unhealed divergence.", func(b Backlog) float64 { return b.OldestUnhealed.Seconds() })
	gauge("quarantined_events", "Own events set aside because a stage could not process them; each is alarmed in the log and listed by streamseal quarantine list.", func(b Backlog) float64 { return float64(b.Quarantined) })
	gauge("lanes_with_confirmed_gaps", "Lanes holding a confirmed, not yet repaired gap.", func(b Backlog) float64 { return float64(b.ConfirmedGapLanes) })
	e.Registry.MustRegister(&sealCollector{e: e, desc: prometheus.NewDesc(namespace+"_sealed_through",
		"Per origin, the exclusive end of the highest window audited complete.", []string{"origin_service_id"}, nil)})
	e.Registry.MustRegister(&lossCollector{e: e,
		accepted: prometheus.NewDesc(namespace+"_accepted_losses_total",
			"Per origin and reason, events a lane accepted as lost instead of repairing (at_most_once, reaped_ephemeral, absent, never_existed; streamseal status lists them).",
			[]string{"origin", "reason"}, nil),
		atMostOnce: prometheus.NewDesc(namespace+"_at_most_once_missed_total",
			"Per origin, at-most-once occurrences a checkpoint announced that never arrived: reported, never requested.",
			[]string{"origin"}, nil)})
	e.Registry.MustRegister(&silentCollector{e: e, desc: prometheus.NewDesc(namespace+"_origin_silent",
		"Per known origin, 1 while its checkpoints stopped for the liveness intervals (the liveness alarm), 0 once heard.", []string{"origin"}, nil)})
	return e
}

// Refresh reads the backlog once (the maintenance cycle calls it) and swaps it in. The grace is
// measured on the exporter's clock against the times the database recorded (a deficit's first
// sighting, a lane's first confirmed gap).
func (e *Exporter) Refresh(ctx context.Context) error {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	before := now().Add(-e.Grace)
	totals, err := store.LedgerBacklogTotal(ctx, e.pool)
	if err != nil {
		return err
	}
	b := Backlog{Unhealed: totals.Unhealed, Exhausted: totals.Exhausted, OldestUnhealed: totals.OldestUnhealed}
	alarms, err := store.LedgerAlarmsCount(ctx, e.pool, before)
	if err != nil {
		return err
	}
	b.AgedDeficits, b.IdentityMismatches, b.LocalExtras = alarms.AgedDeficits, alarms.IdentityMismatches, alarms.LocalExtras
	if b.ConfirmedGapLanes, b.AgedConfirmedGapLanes, err = store.LanesWithConfirmedGapsCount(ctx, e.pool, before); err != nil {
		return err
	}
	if b.Silent, err = store.OriginsLiveness(ctx, e.pool); err != nil {
		return err
	}
	if b.Quarantined, err = store.QuarantineCount(ctx, e.pool); err != nil {
		return err
	}
	if b.SealedThrough, err = store.Seals(ctx, e.pool); err != nil {
		return err
	}
	if b.Losses, err = store.LossTotals(ctx, e.pool); err != nil {
		return err
	}
	e.SetBacklog(b)
	return nil
}

// SetBacklog swaps in a backlog reading whole (Refresh reads one; a scrape never sees half).
func (e *Exporter) SetBacklog(b Backlog) {
	e.mu.Lock()
	e.backlog = b
	e.mu.Unlock()
}

// Handler serves /metrics, /healthz (the process is up) and /readyz (database and wire reachable;
// 503 with the reason when they are not; 200 "degraded: " with every reason, see Degraded, while
// the last backlog reading holds one; 200 "ready" otherwise). Degraded stays 200: the service
// still serves, and an orchestrator should not restart it for trouble a restart cannot mend.
func (e *Exporter) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(e.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if reasons := e.unreachable(r.Context()); len(reasons) > 0 {
			http.Error(w, "not ready: "+strings.Join(reasons, "; "), http.StatusServiceUnavailable)
			return
		}
		e.mu.RLock()
		b := e.backlog
		e.mu.RUnlock()
		if reasons := b.Degraded(e.Grace); len(reasons) > 0 {
			fmt.Fprintf(w, "degraded: %s\n", strings.Join(reasons, "; "))
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// Degraded names every reason the reading gives to call the service degraded, in a fixed order
// (none: ready): quarantined own events, buckets that spent their repair budget, deficits and
// confirmed gaps standing longer than grace, identity mismatches, local extras, and silent
// origins by name.
func (b Backlog) Degraded(grace time.Duration) []string {
	var reasons []string
	if b.Quarantined > 0 {
		reasons = append(reasons, fmt.Sprintf("%d own events quarantined (streamseal quarantine list)", b.Quarantined))
	}
	if b.Exhausted > 0 {
		reasons = append(reasons, fmt.Sprintf("%d buckets spent their repair budget", b.Exhausted))
	}
	if b.AgedDeficits > 0 {
		reasons = append(reasons, fmt.Sprintf("%d buckets unhealed past the readiness grace (%s)", b.AgedDeficits, grace))
	}
	if b.AgedConfirmedGapLanes > 0 {
		reasons = append(reasons, fmt.Sprintf("%d lanes hold confirmed, unrepaired gaps past the readiness grace (%s)", b.AgedConfirmedGapLanes, grace))
	}
	if b.IdentityMismatches > 0 {
		reasons = append(reasons, fmt.Sprintf("%d buckets hold an identity mismatch (same event ids, different content)", b.IdentityMismatches))
	}
	if b.LocalExtras > 0 {
		reasons = append(reasons, fmt.Sprintf("%d buckets hold local extras (events the origin does not have)", b.LocalExtras))
	}
	var silent []string
	for origin, s := range b.Silent {
		if s {
			silent = append(silent, origin)
		}
	}
	if len(silent) > 0 {
		sort.Strings(silent)
		reasons = append(reasons, "origins silent: "+strings.Join(silent, ", "))
	}
	return reasons
}

// unreachable names each dependency the service cannot reach now (both are checked, so the
// body says everything that is down).
func (e *Exporter) unreachable(ctx context.Context) []string {
	var reasons []string
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := e.pool.Ping(ctx); err != nil {
		reasons = append(reasons, "database unreachable: "+err.Error())
	}
	if e.nc != nil && !e.nc.IsConnected() {
		reasons = append(reasons, "NATS disconnected")
	}
	return reasons
}

type seamCollector struct {
	desc *prometheus.Desc
	read func() map[string]int64
}

func (c *seamCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *seamCollector) Collect(ch chan<- prometheus.Metric) {
	for reason, n := range c.read() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), reason)
	}
}

type sealCollector struct {
	e    *Exporter
	desc *prometheus.Desc
}

func (c *sealCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *sealCollector) Collect(ch chan<- prometheus.Metric) {
	c.e.mu.RLock()
	defer c.e.mu.RUnlock()
	for origin, sealed := range c.e.backlog.SealedThrough {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(sealed), origin)
	}
}

type silentCollector struct {
	e    *Exporter
	desc *prometheus.Desc
}

func (c *silentCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *silentCollector) Collect(ch chan<- prometheus.Metric) {
	c.e.mu.RLock()
	defer c.e.mu.RUnlock()
	for origin, silent := range c.e.backlog.Silent {
		v := 0.0
		if silent {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, origin)
	}
}

// lossCollector exports the backlog's loss totals as counters.
type lossCollector struct {
	e                    *Exporter
	accepted, atMostOnce *prometheus.Desc
}

func (c *lossCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.accepted; ch <- c.atMostOnce }
func (c *lossCollector) Collect(ch chan<- prometheus.Metric) {
	c.e.mu.RLock()
	defer c.e.mu.RUnlock()
	for k, n := range c.e.backlog.Losses {
		ch <- prometheus.MustNewConstMetric(c.accepted, prometheus.CounterValue, float64(n), k.Origin, k.Reason)
		if k.Reason == "at_most_once" {
			ch <- prometheus.MustNewConstMetric(c.atMostOnce, prometheus.CounterValue, float64(n), k.Origin)
		}
	}
}
