package redelivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Request is how a consumer asks: a directed request on the origin's control subject, named by an
// id the answers will carry.
func TestRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("AddressesTheOriginAndNamesTheRequest", func(t *testing.T) {
		t.Parallel()
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "billing")
		db := dbtest.NewPool(t, "billing")
		requests := srv.Record(t, wire.ControlStream, wire.ControlFilters("orders")[0])
		from, to := seqRange(1, 100)
		req := wire.RedeliveryRequest{Tenants: []string{"acme"}, Types: eventTypes[:1], FromSeq: from, ToSeq: to, MaxEvents: 7}
		id, err := redelivery.Request(ctx, db, js, "billing", "orders", req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := uuid.Parse(id); err != nil {
			t.Fatalf("request id %q is not a generated id: %v", id, err)
		}
		chosen := uuid.NewString()
		req.RequestID = chosen
		if id, err := redelivery.Request(ctx, db, js, "billing", "orders", req); err != nil || id != chosen {
			t.Fatalf("Request with an id = %q, %v; want the id kept", id, err)
		}

		envs, _ := natstest.Envelopes(t, requests.AwaitCount(t, "both requests", 2))
		for i, wantID := range []string{id, chosen} {
			env := envs[i]
			var got wire.RedeliveryRequest
			if err := json.Unmarshal(env.Body, &got); err != nil {
				t.Fatal(err)
			}
			if env.Kind != wire.KindRedeliveryRequest || env.From != "billing" || env.To != "orders" || got.RequestID != wantID ||
				got.MaxEvents != 7 || *got.FromSeq != 1 || *got.ToSeq != 100 {
				t.Fatalf("request %d on the wire: %+v %+v", i, env, got)
			}
		}
	})

	// Invariant 12: a request goes only to a service's own control address; a name that would
	// widen the subject is refused before anything is published.
	t.Run("RefusesAnOriginThatIsNotAControlAddress", func(t *testing.T) {
		t.Parallel()
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "billing")
		db := dbtest.NewPool(t, "billing")
		for _, origin := range []string{"orders.>", "*", "orders billing"} {
			if _, err := redelivery.Request(ctx, db, js, "billing", origin, wire.RedeliveryRequest{Tenants: []string{"acme"}, Types: eventTypes[:1]}); err == nil {
				t.Fatalf("request to %q was sent", origin)
			}
		}
		if n := srv.Count(t, wire.ControlStream, ">"); n != 0 {
			t.Fatalf("%d control messages were published", n)
		}
	})
}

// Operator is `streamseal repair`: one request, the origin's summary reported, then progress until
// the consumer's own control plane has stored what was shipped.
func TestOperator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		orders  *redelivery.Server // the origin's server, running
		billing *pgxpool.Pool      // the operator's service's database, its receiver running
		out     *syncBuffer
	}

	setup := func(t *testing.T) (*redelivery.Operator, *testBundle) {
		t.Helper()
		srv := natstest.Start(t)

		ordersPool := dbtest.NewPool(t, "orders")
		if err := store.GrantsAdd(ctx, ordersPool, "billing", eventTypes[:2], store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		streamOf(t, ordersPool, "s", eventTypes[0], 5, 16)
		_, ordersJS := srv.Connect(t, "orders")
		server := &redelivery.Server{Pool: ordersPool, JS: ordersJS, Service: "orders", Logger: testrun.Logger(t)}
		ordersControl := natstest.Control(t, ordersJS, "orders")
		server.Register(ordersControl)
		testrun.Go(t, "orders control endpoint", ordersControl.Run)
		testrun.Go(t, "orders redelivery server", server.Run)

		billingPool := dbtest.NewPool(t, "billing")
		billingNC, billingJS := srv.Connect(t, "billing")
		receiver := &redelivery.Receiver{Pool: billingPool, Service: "billing", Logger: testrun.Logger(t)}
		billingControl := natstest.Control(t, billingJS, "billing")
		receiver.Register(billingControl)
		testrun.Go(t, "billing control endpoint", billingControl.Run)

		out := &syncBuffer{}
		return &redelivery.Operator{Pool: billingPool, NC: billingNC, Service: "billing", Out: out},
			&testBundle{orders: server, billing: billingPool, out: out}
	}

	// Invariants 1 and 14 at the operator's surface: the summary is reported, what cannot be
	// re-delivered is named with its reason, and the command returns only once the service's
	// store holds everything shipped.
	t.Run("ReportsTheSummaryAndReturnsOnceTheStoreHoldsIt", func(t *testing.T) {
		t.Parallel()
		op, b := setup(t)
		ctx, cancel := context.WithTimeout(ctx, testrun.Failsafe)
		defer cancel()
		sum, err := op.Run(ctx, "orders", wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: []string{"acme"},
			Types: eventTypes[:1], TypeSeqRanges: [][2]int64{{1, 4}, {7, 9}}, MaxEvents: 100})
		if err != nil {
			t.Fatalf("operator: %v\n%s", err, b.out)
		}
		if sum.Shipped != 3 || len(sum.Unservable) != 1 || sum.Unservable[0].Reason != "never_existed" {
			t.Fatalf("summary %+v; want 3 shipped and [7, 9) named as never existed", sum)
		}
		if n := len(lane(t, b.billing, "orders")); n != 3 {
			t.Fatalf("the operator returned while billing held %d of the 3 events", n)
		}
		for _, line := range []string{
			"repair: asked orders for tenants [acme], types [order.placed]",
			"repair: orders shipped 3 events in 1 bundles",
			"repair: cannot be re-delivered (never_existed): tenant \"acme\" type \"order.placed\" type_seqs [[7 9]]",
			"repair: 3/3 events (100%)",
			"repair: complete",
		} {
			if !strings.Contains(b.out.String(), line) {
				t.Fatalf("output lacks %q:\n%s", line, b.out)
			}
		}
	})

	// Invariant 14 (a request reaches an answer, or a loud failure): an origin that never sends a
	// summary (here it refuses an ungranted type) leaves the operator with an error naming the
	// likely causes when its deadline passes, not a hang or a false success.
	t.Run("NamesTheLikelyCauseWhenNoSummaryComes", func(t *testing.T) {
		t.Parallel()
		op, b := setup(t)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { // the deadline passes once the origin has refused: the witness, not a timer
			deadline := time.Now().Add(testrun.Failsafe)
			for time.Now().Before(deadline) {
				if _, refused, _ := b.orders.Counts(); refused == 1 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
		}()
		_, err := op.Run(ctx, "orders", wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: []string{"acme"},
			Types: eventTypes[2:], MaxEvents: 100})
		if _, refused, _ := b.orders.Counts(); refused != 1 {
			t.Fatalf("the origin refused %d requests, want 1", refused)
		}
		if err == nil || !strings.Contains(err.Error(), "no summary from orders") || !strings.Contains(err.Error(), "granted billing these types") {
			t.Fatalf("operator returned %v; want an error naming the missing summary and the grant to check", err)
		}
	})
}

// syncBuffer is an io.Writer the operator writes and the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
