package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Instruments are the histograms and labelled counters the components feed where they already
// do the work: a stopwatch around an existing handler, a count at an existing branch, an age the
// ledger's heal already returns. Every method is safe on a nil *Instruments and records nothing,
// so a component run without an exporter (a unit test, the audit command) needs no stand-in.
type Instruments struct {
	manifestAnswer  *prometheus.HistogramVec // level, windowed
	manifestCompare *prometheus.HistogramVec // level
	redeliveryBuild prometheus.Observer
	bucketHeal      prometheus.Observer
	stamperLag      prometheus.Observer
	relayLag        prometheus.Observer

	divergences        *prometheus.CounterVec // origin, event_type, reason
	repairsRequested   *prometheus.CounterVec // source, origin
	backfillsRequested *prometheus.CounterVec // (none)
	comparesDeclined   *prometheus.CounterVec // origin
	pagesFollowed      *prometheus.CounterVec // origin
	pagesCapped        *prometheus.CounterVec // origin
	manifestsRequested *prometheus.CounterVec // origin
	drillDowns         *prometheus.CounterVec // origin
	bucketsVerified    prometheus.Counter
	quarantined        *prometheus.CounterVec // stage
	deadMessages       *prometheus.CounterVec // consumer, reason
	cpSuperseded       *prometheus.CounterVec // origin
	driftHealed        *prometheus.CounterVec // kind
	coverageGaps       *prometheus.CounterVec // kind: "gap"
	rebuildsRequested  *prometheus.CounterVec // mode: rebuilt, would_rebuild
}

// Duration buckets from a millisecond (an epoch-served answer) to two minutes (a large
// redelivery build or a stuck compare).
var durationBuckets = prometheus.ExponentialBuckets(0.001, 2.5, 14)

// Heal and lag buckets: heals take checkpoint intervals to days; lags milliseconds to minutes.
var (
	healBuckets = prometheus.ExponentialBuckets(0.1, 3, 14)
	lagBuckets  = prometheus.ExponentialBuckets(0.001, 3, 12)
)

func newInstruments(reg prometheus.Registerer) *Instruments {
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(h)
		return h
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	return &Instruments{
		manifestAnswer: histogram("manifest_answer_duration_seconds",
			"Origin side: a manifest request received to its last answer chunk published. Epoch-served answers take milliseconds.",
			durationBuckets, "level", "windowed"),
		manifestCompare: histogram("manifest_compare_duration_seconds",
			"Consumer side: a complete manifest answer to its comparison finished (ledger included). Near the audit interval, chunks queue.",
			durationBuckets, "level"),
		redeliveryBuild: histogram("redelivery_build_duration_seconds",
			"Origin side: one redelivery request selected, bundled and published, end to end.", durationBuckets).WithLabelValues(),
		bucketHeal: histogram("bucket_heal_seconds",
			"First sighting of a divergent bucket to its proven heal (read from the ledger row the heal deletes).", healBuckets).WithLabelValues(),
		stamperLag: histogram("stamper_lag_seconds",
			"Age of the oldest event in each stamp batch when it was numbered (commit-order stamping delay).", lagBuckets).WithLabelValues(),
		relayLag: histogram("relay_lag_seconds",
			"Age of the newest event of each relayed batch when the broker acknowledged it.", lagBuckets).WithLabelValues(),

		divergences: counter("divergences_detected_total",
			"Divergent buckets found by audit comparisons, by reason (deficit repairs; identity_mismatch and local_extra alarm).",
			"origin", "event_type", "reason"),
		repairsRequested: counter("repairs_requested_total",
			"Repair requests sent (or recorded in report-only), by source (checkpoint, audit) and origin.", "source", "origin"),
		backfillsRequested: counter("backfills_requested_total",
			"Broadcast state-only backfill requests sent for expansions of what this service consumes (re-asks included)."),
		comparesDeclined: counter("compares_declined_total",
			"Manifest chunks no waiting request takes (unsolicited, or beyond what it holds), and audits asked for while one runs.", "origin"),
		pagesFollowed: counter("manifest_pages_followed_total",
			"Stream-level manifest pages walked by an audit's drill-down.", "origin"),
		pagesCapped: counter("manifest_pages_capped_total",
			"Drill-downs stopped at the per-audit page cap (the rest waits for the next audit).", "origin"),
		manifestsRequested: counter("manifests_requested_total",
			"Manifest requests this service sent as an auditor (every level).", "origin"),
		drillDowns: counter("drill_downs_requested_total",
			"Audits that drilled from type level into stream pages.", "origin"),
		quarantined: counter("events_quarantined_total",
			"Own events a pipeline stage could not process and set aside (streamseal quarantine list), by stage.", "stage"),
		deadMessages: counter("dead_messages_total",
			"Messages a durable consumer gave up on (a permanent error, or its delivery budget spent), by consumer and reason.",
			"consumer", "reason"),
		cpSuperseded: counter("checkpoints_superseded_total",
			"Received checkpoints dropped unverified because their origin reached the cap of checkpoints waiting for verification and a later checkpoint of the same lane carries what they did (a flooding or far-behind origin).",
			"origin"),
		bucketsVerified: counter("digest_buckets_verified_total",
			"Digest buckets and sealed epochs the sweep recomputed and checked.").WithLabelValues(),
		driftHealed: counter("digest_drift_healed_total",
			"Drift the sweep healed, by kind: an unaccounted write path touched the store; investigate.", "kind"),
		coverageGaps: counter("coverage_gaps_detected_total",
			"(projection, bucket) pairs the local coverage audit found short of the store: a projection born after its history, or one that skipped events."),
		rebuildsRequested: counter("rebuilds_requested_total",
			"Projection streams the coverage audit reset and replayed (mode rebuilt) or, in report-only, would have (mode would_rebuild).", "mode"),
	}
}

// CoverageAudited counts one coverage audit's gaps and the rebuilds it ran or would have run.
func (m *Instruments) CoverageAudited(gaps, rebuilt, wouldRebuild int64) {
	if m == nil {
		return
	}
	m.coverageGaps.WithLabelValues().Add(float64(gaps))
	m.rebuildsRequested.WithLabelValues("rebuilt").Add(float64(rebuilt))
	m.rebuildsRequested.WithLabelValues("would_rebuild").Add(float64(wouldRebuild))
}

// ManifestAnswered times one answer (origin side).
func (m *Instruments) ManifestAnswered(level string, windowed bool, took time.Duration) {
	if m != nil {
		m.manifestAnswer.WithLabelValues(level, strconv.FormatBool(windowed)).Observe(took.Seconds())
	}
}

// ManifestCompared times one comparison of a complete answer (consumer side).
func (m *Instruments) ManifestCompared(level string, took time.Duration) {
	if m != nil {
		m.manifestCompare.WithLabelValues(level).Observe(took.Seconds())
	}
}

// RedeliveryBuilt times one served redelivery request.
func (m *Instruments) RedeliveryBuilt(took time.Duration) {
	if m != nil {
		m.redeliveryBuild.Observe(took.Seconds())
	}
}

// BucketHealed records one heal's age.
func (m *Instruments) BucketHealed(seconds float64) {
	if m != nil {
		m.bucketHeal.Observe(seconds)
	}
}

// Stamped records one stamp batch's oldest wait.
func (m *Instruments) Stamped(oldestWait time.Duration) {
	if m != nil {
		m.stamperLag.Observe(oldestWait.Seconds())
	}
}

// Quarantined counts an event a stage set aside.
func (m *Instruments) Quarantined(stage string) {
	if m == nil {
		return
	}
	m.quarantined.WithLabelValues(stage).Inc()
}

// DeadMessage counts a message a durable consumer gave up on.
func (m *Instruments) DeadMessage(consumer, reason string) {
	if m == nil {
		return
	}
	m.deadMessages.WithLabelValues(consumer, reason).Inc()
}

// CheckpointsSuperseded counts received checkpoints of origin dropped for a later one of their lane.
func (m *Instruments) CheckpointsSuperseded(origin string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.cpSuperseded.WithLabelValues(origin).Add(float64(n))
}

// Relayed records the age of a relayed batch's newest event at acknowledgement.
func (m *Instruments) Relayed(age time.Duration) {
	if m != nil {
		m.relayLag.Observe(age.Seconds())
	}
}

// Divergence counts one divergent bucket.
func (m *Instruments) Divergence(origin, eventType, reason string) {
	if m != nil {
		m.divergences.WithLabelValues(origin, eventType, reason).Inc()
	}
}

// RepairRequested counts one repair request from source ("checkpoint" or "audit").
func (m *Instruments) RepairRequested(source, origin string) {
	if m != nil {
		m.repairsRequested.WithLabelValues(source, origin).Inc()
	}
}

// BackfillRequested counts one broadcast backfill request.
func (m *Instruments) BackfillRequested() {
	if m != nil {
		m.backfillsRequested.WithLabelValues().Inc()
	}
}

// CompareDeclined counts one manifest chunk no waiting request takes, or one audit asked for while one runs.
func (m *Instruments) CompareDeclined(origin string) {
	if m != nil {
		m.comparesDeclined.WithLabelValues(origin).Inc()
	}
}

// ManifestRequested counts one manifest request sent; stream-level pages count as pages followed.
func (m *Instruments) ManifestRequested(origin string, streamPage bool) {
	if m != nil {
		m.manifestsRequested.WithLabelValues(origin).Inc()
		if streamPage {
			m.pagesFollowed.WithLabelValues(origin).Inc()
		}
	}
}

// DrillDown counts one audit that drilled into stream pages.
func (m *Instruments) DrillDown(origin string) {
	if m != nil {
		m.drillDowns.WithLabelValues(origin).Inc()
	}
}

// PagesCapped counts one drill-down stopped at the page cap.
func (m *Instruments) PagesCapped(origin string) {
	if m != nil {
		m.pagesCapped.WithLabelValues(origin).Inc()
	}
}

// Verified counts buckets (or epochs) the sweep checked and the drift it healed, by kind.
func (m *Instruments) Verified(checked int64, driftByKind map[string]int64) {
	if m == nil {
		return
	}
	m.bucketsVerified.Add(float64(checked))
	for kind, n := range driftByKind {
		m.driftHealed.WithLabelValues(kind).Add(float64(n))
	}
}
