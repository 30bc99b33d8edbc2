package harness_test

import (
	"testing"

	"github.com/streamseal/streamseal/internal/harness"
)

// Invariant 1 across a broker restart: every client loses its connection mid-stream; the
// relay, inbox and control endpoint reconnect on their own, nothing acknowledged is lost, and
// the consumer ends byte-equal with the origin.
func TestNATSRestart_MidStreamLosesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	orders := start(t, h, "orders", harness.Options{Grants: map[string][]string{"billing": eventTypes}}, nil)
	billing := start(t, h, "billing", harness.Options{Consumes: eventTypes}, nil)
	services := []*harness.Service{orders, billing}

	appendOrders(t, orders, 400, 20)
	waitFor(t, "billing stored some of the stream", services, func() bool { return countFrom(t, billing.Pool, "orders") >= 100 })
	if err := h.RestartNATS(); err != nil {
		t.Fatal(err)
	}
	appendStreams(t, orders, 400, 20, "after") // more while everyone reconnects
	waitFor(t, "billing stored all 800", services, func() bool { return countFrom(t, billing.Pool, "orders") == 800 })
	requireSameRows(t, rowsOf(t, orders.Pool, "orders"), rowsOf(t, billing.Pool, "orders"))

	// The control path works again too: a redelivery round trip after the restart.
	var got summaries
	billing.Repair.OnSummary = got.record
	id := requestAll(t, billing, "orders", eventTypes)
	waitFor(t, "a redelivery summary after the restart", services, func() bool { _, ok := got.get(id); return ok })
}
