// Package checkpointtest gives a consumer's database what hearing an origin's checkpoints gives
// it (the origin in known_origins with its control address; lanes with their floors and holes),
// through the product's own path: checkpoint.Verifier in report-only mode, so nothing is sent.
// Component tests of what reads that state (the repair receiver, the auditor, status) start
// from it.
//
// Tooling only: test files import it, product packages never do (internal/layout checks).
package checkpointtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/checkpoint"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Verify has service's database verify cp as its checkpoint verifier would, in report-only
// mode: a confirmed hole is recorded as the request it would send, and nothing is sent.
func Verify(t testing.TB, pool *pgxpool.Pool, service string, cp wire.Checkpoint) {
	t.Helper()
	verify(t, pool, nil, service, config.ReportOnly, cp)
}

// VerifyAndRequest is Verify in the default auto-repair mode: a confirmed hole is requested from
// the origin over js, at the control address the checkpoint announced, as the running verifier
// does (the request is also recorded in gap_reports).
func VerifyAndRequest(t testing.TB, pool *pgxpool.Pool, js jetstream.JetStream, service string, cp wire.Checkpoint) {
	t.Helper()
	verify(t, pool, js, service, config.AutoRepairCapped, cp)
}

func verify(t testing.TB, pool *pgxpool.Pool, js jetstream.JetStream, service, mode string, cp wire.Checkpoint) {
	t.Helper()
	settings := config.Defaults()
	settings.RepairMode = mode
	v := &checkpoint.Verifier{Pool: pool, JS: js, Service: service, Config: settings, Logger: testrun.Logger(t)}
	if err := v.Handle(context.Background(), cp); err != nil {
		t.Fatalf("verify checkpoint of %s/%s [%d, %d): %v", cp.Origin, cp.Type, cp.From, cp.To, err)
	}
}

// Announcing is origin's checkpoint of eventType for the window [from, to) announcing that
// tenant's type_seqs first..last were emitted in it.
func Announcing(origin, eventType string, from, to int64, tenant string, first, last int64) wire.Checkpoint {
	cp := Heartbeat(origin, eventType, tenant, from, to)
	cp.Tenants[0] = wire.CheckpointTenant{Tenant: tenant, N: last - first + 1, First: &first, Last: &last}
	return cp
}

// Heartbeat is origin's checkpoint of eventType for [from, to) in which tenant emitted nothing:
// it announces the origin, creates no lane, and re-evaluates the
// tenant's lane if one was announced before (as the publisher's quiet-window rows do).
func Heartbeat(origin, eventType, tenant string, from, to int64) wire.Checkpoint {
	return wire.Checkpoint{Origin: origin, IntervalS: 60, At: time.Now().UTC(),
		From: from, To: to, Type: eventType, Tenants: []wire.CheckpointTenant{{Tenant: tenant}}}
}
