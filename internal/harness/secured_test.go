package harness_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariant 12 (authenticity) at no extra cost: two services on the authorized bus start, carry
// events live and answer a redelivery request with nothing refused by the generated permissions.
// A JetStream request the broker refuses is never answered: the caller waits out its API timeout
// (5 s), so every refusal on the work's path is a stall as well as a gap in the permissions. The
// control endpoint's start-up cleanup was one, and cost every secured start 5 s.
func TestSecured_ServicesWorkWithNothingRefused_Invariant12(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	topo := natsauth.Topology{Services: []natsauth.Service{{Name: "orders"},
		{Name: "billing", Consumes: []natsauth.Consumption{{Origin: natsauth.AnyOrigin, Types: eventTypes, AllTenants: true}}}}}
	refusals := &refusalLog{}
	h, err := harness.NewSecured(ctx, func(ctx context.Context, service string) (string, error) { return dbtest.New(t), nil },
		slog.New(refusals), topo, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	orders := start(t, h, "orders", harness.Options{Grants: map[string][]string{"billing": eventTypes}}, nil)
	var got summaries
	billing := start(t, h, "billing", harness.Options{Consumes: eventTypes}, func(s *harness.Service) { s.Repair.OnSummary = got.record })
	services := []*harness.Service{orders, billing}
	appendOrders(t, orders, 40, 4)
	waitFor(t, "billing received orders' events live", services, func() bool { return countFrom(t, billing.Pool, "orders") == 40 })
	id := requestAll(t, billing, "orders", eventTypes)
	waitFor(t, "the redelivery request's summary", services, func() bool { _, ok := got.get(id); return ok })
	for _, s := range services {
		if err := s.NC.Flush(); err != nil { // the server answers in order: any refusal came before this PONG
			t.Fatal(err)
		}
	}
	if refused := refusals.all(); len(refused) > 0 {
		t.Fatalf("the generated permissions refused the services' work: %v", refused)
	}
}

// refusalLog is a log handler keeping the services' "NATS refused an operation" records.
type refusalLog struct {
	mu      sync.Mutex
	refused []string
}

func (r *refusalLog) Enabled(context.Context, slog.Level) bool { return true }

func (r *refusalLog) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "wire: NATS refused an operation" {
		return nil
	}
	line := rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	r.mu.Lock()
	r.refused = append(r.refused, line)
	r.mu.Unlock()
	return nil
}

func (r *refusalLog) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *refusalLog) WithGroup(string) slog.Handler      { return r }

func (r *refusalLog) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refused...)
}
