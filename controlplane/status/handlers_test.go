package status_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/streamseal/streamseal/controlplane/status"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
)

// Invariant 13 (no wedge, and what cannot be processed is named): a projection whose handler
// raises on one event shows in status with its failing stream and the error, in the table and
// in JSON, while it keeps applying the other streams.
func TestReport_ShowsAFailingHandlerAndItsStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t, "ledger-view")
	if _, err := pool.Exec(ctx, `create schema app;
		create table app.rows (stream_id text);
		create function app.fold(e streamseal.handler_event) returns void language plpgsql as $$
		begin
		    if e.stream_id = 'bad' then raise exception 'no account for stream %', e.stream_id; end if;
		    insert into app.rows values (e.stream_id);
		end $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ProjectionRegister(ctx, pool, "accounts", []string{placed}, "app.fold", nil, "", true); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsAppend(ctx, pool, []store.NewEvent{
		{Tenant: "t1", StreamID: "bad", StreamVersion: 1, EventType: placed, Payload: []byte("{}")},
		{Tenant: "t1", StreamID: "good", StreamVersion: 1, EventType: placed, Payload: []byte("{}")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EventsStamp(ctx, pool, 100); err != nil {
		t.Fatal(err)
	}
	step, err := store.HandlerRun(ctx, pool, "accounts", 100)
	if err != nil {
		t.Fatal(err)
	}
	if step.Applied != 1 || step.Failed != 1 {
		t.Fatalf("run: %+v, want the good stream applied and the bad one failed", step)
	}
	r, err := status.ReadReport(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var table, js bytes.Buffer
	if err := status.PrintReport(&table, r, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "handler accounts: 1 streams wait on a failing event since") ||
		!strings.Contains(table.String(), "no account for stream bad") {
		t.Fatalf("status does not name the failing stream and its error:\n%s", table.String())
	}
	if err := status.PrintReport(&js, r, true); err != nil {
		t.Fatal(err)
	}
	var back status.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Handlers) != 1 || back.Handlers[0].FailingStreams != 1 || back.Handlers[0].Applied != 1 {
		t.Fatalf("JSON handlers = %+v", back.Handlers)
	}
}
