package harness_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariant 1 through the operator surface: `streamseal repair` asks the origin, reports the
// summary, and returns only once the consumer's own control plane has stored the range.
func TestOperator_RepairsAWindowAndReportsProgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	orders := start(t, h, "orders", harness.Options{Grants: map[string][]string{"billing": eventTypes}}, nil)
	billing := start(t, h, "billing", harness.Options{Consumes: eventTypes, Suppress: func(e store.EventCopy) bool {
		return e.EventType == "order.paid" // every order.paid is lost
	}}, nil)
	services := []*harness.Service{orders, billing}
	appendOrders(t, orders, 200, 10)
	waitFor(t, "billing settled every delivery", services, func() bool { return settled(billing) == 200 })
	if n := countFrom(t, billing.Pool, "orders"); n != 160 {
		t.Fatalf("billing holds %d events, want 160 (all 40 order.paid lost)", n)
	}

	var out bytes.Buffer
	from, to := int64(1), int64(201)
	op := &redelivery.Operator{Pool: billing.Pool, NC: billing.NC, Service: "billing", Out: &out}
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	sum, err := op.Run(ctx, "orders", wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: []string{"acme"},
		Types: []string{"order.paid"}, FromSeq: &from, ToSeq: &to, MaxEvents: 1000})
	if err != nil {
		t.Fatalf("operator: %v\n%s", err, out.String())
	}
	if sum.Shipped != 40 {
		t.Fatalf("origin shipped %d order.paid events, want 40", sum.Shipped)
	}
	if n := countFrom(t, billing.Pool, "orders"); n != 200 {
		t.Fatalf("after the operator returned billing holds %d events, want 200", n)
	}
	if !strings.Contains(out.String(), "repair: 40/40 events (100%)") || !strings.Contains(out.String(), "repair: complete") {
		t.Fatalf("operator output lacks the progress and completion lines:\n%s", out.String())
	}
}
