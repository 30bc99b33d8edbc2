package node_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/jobs"
	"github.com/streamseal/streamseal/controlplane/node"
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/relay"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const placed = "order.placed"

func TestNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		pool *pgxpool.Pool
		nats *natstest.Server
		nc   *nats.Conn
	}

	// setup builds (does not start) the node of service over a fresh database and an embedded
	// NATS server; prepare runs on the database first (names, grants, subscriptions).
	setup := func(t *testing.T, service string, cfg node.Config, prepare func(*pgxpool.Pool)) (*node.Node, *testBundle) {
		t.Helper()
		pool := dbtest.NewPool(t, service)
		if prepare != nil {
			prepare(pool)
		}
		srv := natstest.Start(t)
		nc, _ := srv.Connect(t, service)
		cfg.Service, cfg.Pool, cfg.NC, cfg.Logger = service, pool, nc, testrun.Logger(t)
		n, err := node.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return n, &testBundle{pool: pool, nats: srv, nc: nc}
	}

	// start runs the node until the test ends (stopped before its pool and connection close).
	start := func(t *testing.T, n *node.Node) {
		t.Helper()
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			n.Stop()
			if err := n.Err(); err != nil {
				t.Errorf("a loop of %s failed: %v", n.Name, err)
			}
		})
	}

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		// Zero Settings are config.Defaults(), handed to every component: the redelivery pump's
		// limits, the manifest chunk, the audit caps, the checkpoint interval, event retention.
		n, b := setup(t, "orders", node.Config{}, nil)
		if n.Redelivery.Limits != redelivery.DefaultLimits {
			t.Errorf("redelivery limits %+v, want %+v", n.Redelivery.Limits, redelivery.DefaultLimits)
		}
		if n.Repair.AnswerGrace != redelivery.AnswerGraceDefault {
			t.Errorf("repair answer grace %s, want %s", n.Repair.AnswerGrace, redelivery.AnswerGraceDefault)
		}
		if n.Manifest.MaxDigests != audit.MaxDigestsDefault {
			t.Errorf("manifest chunk %d, want %d", n.Manifest.MaxDigests, audit.MaxDigestsDefault)
		}
		if want := (audit.Limits{MaxDrillDownTypes: audit.MaxDrillDownTypesDefault, MaxDigests: audit.MaxDigestsDefault,
			MaxRequests: audit.MaxRequestsDefault}); n.Auditor.Limits != want {
			t.Errorf("audit limits %+v, want %+v", n.Auditor.Limits, want)
		}
		if n.Publisher.Interval != time.Minute || n.Verifier.Config != config.Defaults() || n.Auditor.Config != config.Defaults() {
			t.Errorf("checkpoint interval %s, verifier and auditor settings default: %v, %v", n.Publisher.Interval,
				n.Verifier.Config == config.Defaults(), n.Auditor.Config == config.Defaults())
		}
		start(t, n)
		stream, err := b.nats.JS.Stream(ctx, wire.EventsStream)
		if err != nil {
			t.Fatal(err)
		}
		if got := stream.CachedInfo().Config.MaxAge; got != 7*24*time.Hour {
			t.Fatalf("events stream kept for %s, want the default 7 days", got)
		}
	})

	// Settings are validated before anything starts, and the error names the option.
	t.Run("RefusesSettingsOutOfRange", func(t *testing.T) {
		t.Parallel()
		settings := config.Defaults()
		settings.CheckpointInterval = time.Nanosecond
		pool := dbtest.NewPool(t, "orders")
		srv := natstest.Start(t)
		nc, _ := srv.Connect(t, "orders")
		_, err := node.New(node.Config{Service: "orders", Pool: pool, NC: nc, Settings: settings})
		if err == nil || !strings.Contains(err.Error(), "--checkpoint-interval") {
			t.Fatalf("New = %v, want the out-of-range option named", err)
		}
	})

	// A payload limit the broker cannot carry with the envelope is refused at start, naming both
	// numbers, before any loop runs (13): otherwise the first event at the limit would be stored
	// and never published.
	t.Run("RefusesAPayloadLimitTheBrokerCannotCarry", func(t *testing.T) {
		t.Parallel()
		n, b := setup(t, "orders", node.Config{}, nil)
		if err := store.LimitsSet(ctx, b.pool, store.Limits{MaxPayloadBytes: wire.DefaultMaxMessageBytes}); err != nil {
			t.Fatal(err)
		}
		err := n.Start(ctx)
		if err == nil {
			n.Stop()
			t.Fatal("Start accepted a payload limit equal to the broker's max_payload")
		}
		if !strings.Contains(err.Error(), "max_payload_bytes 1048576") || !strings.Contains(err.Error(), "max_payload 1048576") {
			t.Fatalf("Start = %v, want the limit and the broker's max_payload named", err)
		}
	})

	// The origin side wired end to end in one process: an append is stamped and relayed (7), the
	// checkpoint job runs at start on River, and the control endpoint routes a redelivery
	// request to the server and a manifest request to the manifest server, each answering only
	// what the requester is granted (11).
	t.Run("RunsAnOriginsLoops", func(t *testing.T) {
		t.Parallel()
		n, b := setup(t, "orders", node.Config{}, func(pool *pgxpool.Pool) {
			if err := store.GrantsAdd(ctx, pool, "billing", []string{placed}, store.AllTenants()); err != nil {
				t.Fatal(err)
			}
		})
		events := b.nats.Record(t, wire.EventsStream, "streamseal.evt.orders.>")
		answers := b.nats.Record(t, wire.ControlStream, wire.ControlFilters("billing")[0])
		_, billing := b.nats.Connect(t, "billing")
		start(t, n)
		appended, err := store.EventsAppend(ctx, b.pool, []store.NewEvent{{Tenant: "acme", StreamID: "s", StreamVersion: 1, EventType: placed, Payload: []byte("{}")}})
		if err != nil {
			t.Fatal(err)
		}

		count := func(msgs []natstest.Msg) (relayed, checkpoints int) {
			for _, m := range msgs {
				if wire.IsCheckpoint(m.Header) {
					checkpoints++
				} else if e, err := wire.DecodeEvent(m.Header, m.Data); err == nil && e.EventID == appended[0] && e.OriginSeq == 1 {
					relayed++
				}
			}
			return relayed, checkpoints
		}
		events.Await(t, "the event relayed", func(msgs []natstest.Msg) bool {
			relayed, _ := count(msgs)
			return relayed == 1
		})
		// The start-up round ran on River; it may have run before the relay published the event
		// (then it checkpointed nothing and sent only its beat), so one more round is asked for,
		// through River as the schedule would, and it covers the event.
		testrun.WaitFor(t, "the start-up checkpoint job completed on River", func() bool {
			var done int
			_ = b.pool.QueryRow(ctx, "select count(*) from streamseal_river.river_job where kind = 'streamseal_checkpoint' and state = 'completed'").Scan(&done)
			return done >= 1
		})
		if _, err := n.River.Insert(ctx, jobs.CheckpointArgs{}, nil); err != nil {
			t.Fatal(err)
		}
		events.Await(t, "a checkpoint of the relayed event published", func(msgs []natstest.Msg) bool {
			relayed, checkpoints := count(msgs)
			return relayed == 1 && checkpoints >= 1
		})

		from, to := int64(1), int64(100)
		id, err := redelivery.Request(ctx, dbtest.NewPool(t, "billing"), billing, "billing", "orders", wire.RedeliveryRequest{Tenants: []string{"acme"},
			Types: []string{placed}, FromSeq: &from, ToSeq: &to, MaxEvents: 10})
		if err != nil {
			t.Fatal(err)
		}
		manifest, err := wire.NewEnvelope(wire.KindManifestRequest, "billing", "orders", wire.ManifestRequest{RequestID: "m",
			Level: wire.LevelTypes, From: 0, To: 1 << 62})
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Publish(ctx, billing, manifest, nil); err != nil {
			t.Fatal(err)
		}
		answers.Await(t, "the redelivery summary and the manifest answer", func(msgs []natstest.Msg) bool {
			var summary, answer bool
			envs, _ := natstest.Envelopes(t, msgs)
			for _, env := range envs {
				switch env.Kind {
				case wire.KindRedeliverySummary:
					var s wire.RedeliverySummary
					summary = summary || json.Unmarshal(env.Body, &s) == nil && s.RequestID == id && s.Shipped == 1
				case wire.KindManifestAnswer:
					var a wire.ManifestAnswer
					answer = answer || json.Unmarshal(env.Body, &a) == nil && a.RequestID == "m" && len(a.Digests) == 1 && a.Digests[0].N == 1
				}
			}
			return summary && answer
		})
	})

	// The consumer side wired: the inbox stores an event from another origin's subject, the repair
	// receiver stores a bundle addressed to this service, both with their identity (3).
	t.Run("RunsAConsumersLoops", func(t *testing.T) {
		t.Parallel()
		n, b := setup(t, "billing", node.Config{}, func(pool *pgxpool.Pool) {
			if err := store.SubscriptionsAdd(ctx, pool, "", []string{placed}, store.AllTenants()); err != nil {
				t.Fatal(err)
			}
		})
		live := store.EventCopy{EventID: uuid.New(), Origin: "orders", OriginSeq: 1, TypeSeq: 1, Tenant: "acme", StreamID: "s",
			StreamVersion: 1, EventType: placed, Payload: []byte(`{"live":1}`), OccurredAt: time.Now()}
		if _, err := b.nats.JS.PublishMsg(ctx, wire.EventMessage(live)); err != nil {
			t.Fatal(err)
		}
		// The bundle answers a request the node's service sent (invariant 12).
		requestID, err := redelivery.Request(ctx, b.pool, n.JS, "billing", "orders", wire.RedeliveryRequest{Tenants: []string{"acme"}, Types: []string{placed}})
		if err != nil {
			t.Fatal(err)
		}
		repaired := uuid.New()
		payload := []byte(`{"repaired":2}`)
		bundle, err := wire.NewEnvelope(wire.KindRedeliveryBundle, "orders", "billing", wire.Bundle{RequestID: requestID, Origin: "orders",
			StreamID: "s", Events: []wire.BundleEvent{{ID: repaired, OriginSeq: 2, TypeSeq: 2, Tenant: "acme", Type: placed, Version: 2,
				Len: len(payload), OccurredAt: time.Now()}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Publish(ctx, b.nats.JS, bundle, payload); err != nil {
			t.Fatal(err)
		}
		start(t, n)
		testrun.WaitFor(t, "the live event and the repaired one stored", func() bool {
			var n int
			err := b.pool.QueryRow(ctx, `select count(*) from streamseal.numbered_events
				where (event_id, origin_seq, payload) in (($1, 1, $2), ($3, 2, $4))`, live.EventID, live.Payload, repaired, payload).Scan(&n)
			return err == nil && n == 2
		})
	})

	// NoRelay leaves the relay to the caller: the node stamps but holds no relay leadership, so a
	// relay the caller runs on the same database leads at once and publishes.
	t.Run("LeavesTheRelayToTheCallerWithNoRelay", func(t *testing.T) {
		t.Parallel()
		n, b := setup(t, "orders", node.Config{NoRelay: true}, nil)
		start(t, n)
		if _, err := store.EventsAppend(ctx, b.pool, []store.NewEvent{{Tenant: "acme", StreamID: "s", StreamVersion: 1, EventType: placed, Payload: []byte("{}")}}); err != nil {
			t.Fatal(err)
		}
		testrun.WaitFor(t, "the node's stamper numbered the event", func() bool {
			var seq int64
			return b.pool.QueryRow(ctx, "select last_origin_seq from streamseal.stamp_state").Scan(&seq) == nil && seq == 1
		})
		published := make(chan int64, 1)
		own := &relay.Relay{Pool: b.pool, JS: n.JS, Logger: testrun.Logger(t), OnPublished: func(through int64) { published <- through }}
		testrun.Go(t, "the caller's relay", own.Run)
		if through := testrun.Receive(t, "the caller's relay publishing", published); through != 1 {
			t.Fatalf("the caller's relay published through %d, want 1", through)
		}
	})

	// Stop ends every loop it started and waits for them; the pool and the NATS connection stay
	// the caller's, open.
	t.Run("StopEndsEveryLoopAndLeavesTheConnectionsOpen", func(t *testing.T) {
		t.Parallel()
		n, b := setup(t, "orders", node.Config{}, nil)
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		n.Stop()
		waited := make(chan struct{})
		go func() { n.Wait(); close(waited) }()
		testrun.Receive(t, "Wait to return after Stop", waited)
		if err := n.Err(); err != nil {
			t.Fatalf("a loop failed: %v", err)
		}
		if err := b.pool.Ping(ctx); err != nil || !b.nc.IsConnected() {
			t.Fatalf("after Stop: pool ping %v, NATS connected %v; want both still open", err, b.nc.IsConnected())
		}
	})
}
