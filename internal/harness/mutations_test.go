package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/harness"
)

// Invariants 4 and 10 with the mutations that are not closes: the origin reclassifies a type
// ephemeral and an application deletes events with a plain DELETE, inside a window the consumer
// already sealed. Both travel as announced history changes in the manifest answer; the consumer
// applies them once to its copies, the next audit matches and certifies, and no round ever
// reports a local_extra for them. A second mutation is seen by the guard from the answer's own
// generation (not a checkpoint's) on the very next audit.
func TestAudit_ReclassifyAndDeleteTravelAndCertifyWithoutLocalExtras(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	settings := auditSettings()
	settings.MaxDigestsPerManifest = 500
	settings.EpochWidth = 5
	orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes}}, nil)
	billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes}, nil)
	services := []*harness.Service{orders, billing}
	ctx := context.Background()
	appendStreams(t, orders, 20, 4, "mut")
	waitFor(t, "billing caught up and knows orders", services, func() bool {
		var known int
		_ = billing.Pool.QueryRow(ctx, "select count(*) from streamseal.known_origins").Scan(&known)
		return known == 1 && countFrom(t, billing.Pool, "orders") == 20
	})
	if _, err := store.EpochsClose(ctx, orders.Pool, store.EpochOptions{MaxEpochs: 100, Width: 5, Settle: time.Hour}); err != nil {
		t.Fatal(err)
	}
	first, err := billing.Auditor.RunOnce(ctx)
	if err != nil || !first[0].Sealed || first[0].SealedThrough != 21 {
		t.Fatalf("first audit = %+v, %v; want the window [0, 21) certified", first, err)
	}

	var findings []audit.Finding
	audit := func() audit.Finding {
		t.Helper()
		f, err := billing.Auditor.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		findings = append(findings, f...)
		return f[0]
	}

	// The origin reclassifies order.paid (events 1, 6, 11, 16) and an application deletes the
	// first three versions of mut-03 (events 3, 7, 11) with a plain DELETE.
	if _, err := orders.Pool.Exec(ctx, "select streamseal.reclassify_ephemeral('order.paid')"); err != nil {
		t.Fatal(err)
	}
	if _, err := orders.Pool.Exec(ctx, "delete from streamseal.events where origin = 'orders' and stream_id = 'mut-03' and stream_version <= 3"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "billing learned a new generation from a checkpoint", services, func() bool {
		var g int64
		_ = billing.Pool.QueryRow(ctx, "select coalesce(generation, -1) from streamseal.known_origins where origin = 'orders'").Scan(&g)
		return g > 0
	})
	if f := audit(); f.Skipped == "" {
		t.Fatalf("round after the mutations = %+v; want skipped with the seal reset", f)
	}
	if f := audit(); f.Skipped != "" || len(f.Divergent) != 0 || !f.Sealed || f.SealedThrough != 21 {
		t.Fatalf("re-verification = %+v; want no divergence and [0, 21) certified again", f)
	}

	// A second deletion, audited at once: the guard reads the generation from the answer it
	// compares, so this round skips whatever the checkpoints have said so far.
	if _, err := orders.Pool.Exec(ctx, "delete from streamseal.events where origin = 'orders' and stream_id = 'mut-00' and stream_version = 1"); err != nil {
		t.Fatal(err)
	}
	if f := audit(); f.Skipped == "" {
		t.Fatalf("round right after a second deletion = %+v; want skipped from the answer's generation", f)
	}
	if f := audit(); f.Skipped != "" || len(f.Divergent) != 0 || !f.Sealed || f.SealedThrough != 21 {
		t.Fatalf("re-verification after the second deletion = %+v; want [0, 21) certified", f)
	}

	for _, f := range findings {
		for _, b := range f.Divergent {
			t.Errorf("audit reported %s for %s/%s (local n=%d, origin n=%d): announced history must never read as divergence",
				b.Reason, b.Stream, b.Type, b.LocalN, b.OriginN)
		}
	}
	// Every event the origin holds is copied with the same flags; the one copy beyond them is
	// event 11, reclassified ephemeral before its deletion: a removal of an event already outside
	// every fold is retention (like reaping), not announced, and the copy stays ephemeral.
	own := eventMarks(t, orders, "orders")
	copies := eventMarks(t, billing, "orders")
	if len(own) != 16 || len(copies) != 17 {
		t.Fatalf("origin holds %d events, billing %d copies; want 16 and 17", len(own), len(copies))
	}
	for id, flags := range own {
		if c, ok := copies[id]; !ok || c != flags {
			t.Errorf("event %s: origin flags %d, billing copy flags %d (present %v)", id, flags, c, ok)
		}
	}
	for id, flags := range copies {
		if _, ok := own[id]; !ok && flags&1 == 0 {
			t.Errorf("billing keeps a counted copy %s (flags %d) the origin removed", id, flags)
		}
	}
	var ledger int
	if err := billing.Pool.QueryRow(ctx, "select count(*) from streamseal.repair_ledger").Scan(&ledger); err != nil || ledger != 0 {
		t.Fatalf("ledger rows %d, %v: announced mutations must raise no alarm", ledger, err)
	}
}

// eventMarks maps the event ids of origin's lane in s's store to their flags.
func eventMarks(t *testing.T, s *harness.Service, origin string) map[string]int {
	t.Helper()
	rows, err := s.Pool.Query(context.Background(), "select event_id::text, flags from streamseal.events where origin = $1", origin)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var flags int
		if err := rows.Scan(&id, &flags); err != nil {
			t.Fatal(err)
		}
		out[id] = flags
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
