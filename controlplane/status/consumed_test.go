package status_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/status"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
)

// Issue 18 (a new consumer comes up complete without an operator, and status shows when): the
// report says consumption is complete only while every consumed type is baseline or complete,
// names what is not, and shows each origin's backfill progress (done of total, rate) in the table
// and in JSON that reads back.
func TestReport_ShowsWhenConsumptionIsCompleteAndEachOriginsProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t, "billing")
	if err := store.SubscriptionsAdd(ctx, pool, "", []string{placed}, store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ConsumedTypesReconcile(ctx, pool, true); err != nil {
		t.Fatal(err)
	}
	report := func() (status.Report, string, status.Report) {
		t.Helper()
		r, err := status.ReadReport(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		var table, js bytes.Buffer
		if err := status.PrintReport(&table, r, false); err != nil {
			t.Fatal(err)
		}
		if err := status.PrintReport(&js, r, true); err != nil {
			t.Fatal(err)
		}
		var back status.Report
		if err := json.Unmarshal(js.Bytes(), &back); err != nil {
			t.Fatalf("status JSON does not read back: %v\n%s", err, js.String())
		}
		return r, table.String(), back
	}

	r, table, back := report()
	if !r.ConsumptionComplete || !back.ConsumptionComplete || !strings.Contains(table, "consumption: complete") {
		t.Fatalf("a baseline-only service reads as %+v:\n%s", r, table)
	}

	const paid = "order.paid"
	if err := store.SubscriptionsAdd(ctx, pool, "", []string{paid}, store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ConsumedTypesReconcile(ctx, pool, false); err != nil {
		t.Fatal(err)
	}
	r, table, back = report()
	if r.ConsumptionComplete || back.ConsumptionComplete || !strings.Contains(table, "consumption: incomplete: order.paid pending") {
		t.Fatalf("with an expansion pending the report reads as %+v:\n%s", r, table)
	}

	id := uuid.New()
	if err := store.SentRequestRecord(ctx, pool, store.SentRequest{RequestID: id, Origin: store.BroadcastOrigin,
		Source: store.SourceBackfill, Request: []byte(`{"types":["order.paid"]}`)}); err != nil {
		t.Fatal(err)
	}
	if err := store.BackfillRequested(ctx, pool, []string{paid}, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.BackfillAnswered(ctx, pool, id, "orders", 400, true, 1000); err != nil {
		t.Fatal(err)
	}
	r, table, back = report()
	if r.ConsumptionComplete || !strings.Contains(table, "orders: 400 of 1000 events (40%, more to come") ||
		!strings.Contains(table, "consumption: incomplete: order.paid requested") {
		t.Fatalf("mid-backfill the report reads as:\n%s", table)
	}
	var progress *status.OriginProgress
	for _, c := range back.Consumed {
		if c.EventType == paid && len(c.Origins) == 1 {
			progress = &c.Origins[0]
		}
	}
	if progress == nil || progress.Origin != "orders" || progress.Shipped != 400 || progress.Total == nil || *progress.Total != 1000 || progress.Done {
		t.Fatalf("the JSON's progress of order.paid is %+v", back.Consumed)
	}

	if _, _, err := store.BackfillAnswered(ctx, pool, id, "orders", 600, false, 0); err != nil {
		t.Fatal(err)
	}
	r, table, back = report()
	if !r.ConsumptionComplete || !back.ConsumptionComplete || !strings.Contains(table, "orders: 1000 of 1000 events (100%, done") ||
		!strings.Contains(table, "consumption: complete") {
		t.Fatalf("after the backfill the report reads as %+v:\n%s", r, table)
	}
}
