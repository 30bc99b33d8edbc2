package harness_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/harness"
)

// collationStreams are stream ids whose byte order (C) and en-US order differ: case, hyphens,
// underscores and dots sort apart in one and together in the other (C: "A-2" < "Ab" < "B" < "a"
// < "a-1"; en-US: "a" < "a_2" < "a-1" < "A-2" < "a.3" < "a1" < "ab" < "Ab" < "b" < "B").
var collationStreams = []string{"a", "a-1", "A-2", "a_2", "a.3", "a1", "ab", "Ab", "AB", "b", "B", "b-2", "B-3", "c", "C-1", "Ca"}

// Invariants 9 and 10 (the audit names every divergence and only real ones, and a repair
// converges) across two databases that sort text differently: one service's database has an ICU
// en-US default collation, the other's the cluster's C. The stream-level manifest pages cross
// between them with text boundaries (after_stream, resume_after); each side must read a page's
// range (covered_after, covered_through] in the same order, or the consumer refuses a page
// ("stream_id … lies outside the covered stream range") or reads streams into the wrong page
// (phantom deficits and extras). The consumer lost one event after receipt; with pages of two
// buckets over 16 streams, the audit must name exactly that bucket as a deficit, repair it, and
// find nothing divergent on the next round. Both ways round.
func TestAudit_PagesAgreeAcrossDatabaseCollations_Invariants9And10(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		icu  string // the service whose database sorts by en-US
	}{
		{"ICUOriginCConsumer", "orders"},
		{"COriginICUConsumer", "billing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
			h, err := harness.New(ctx, func(ctx context.Context, service string) (string, error) {
				if service == tc.icu {
					return dbtest.NewICU(t, "en-US"), nil
				}
				return dbtest.New(t), nil
			}, logger)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(h.Close)
			settings := auditSettings()
			settings.MaxDigestsPerManifest = 2 // 8 pages over 16 streams: boundaries fall between them
			orders := start(t, h, "orders", harness.Options{Settings: settings, Grants: map[string][]string{"billing": eventTypes[:1]}}, nil)
			billing := start(t, h, "billing", harness.Options{Settings: settings, Consumes: eventTypes[:1]}, nil)
			services := []*harness.Service{orders, billing}
			// The witness that the two databases really sort apart.
			var icuOrder, cOrder []string
			for _, svc := range services {
				var got []string
				if err := svc.Pool.QueryRow(ctx, "select array_agg(s order by s) from unnest($1::text[]) s", collationStreams).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if svc.Name == tc.icu {
					icuOrder = got
				} else {
					cOrder = got
				}
			}
			if slices.Equal(icuOrder, cOrder) {
				t.Fatalf("both databases sort the streams alike (%v): the test needs two orders", cOrder)
			}

			var events []store.NewEvent
			for _, stream := range collationStreams {
				events = append(events, store.NewEvent{EventID: uuid.New(), Tenant: "acme", StreamID: stream, StreamVersion: 1,
					EventType: eventTypes[0], Payload: []byte("{}")})
			}
			if _, err := store.EventsAppend(ctx, orders.Pool, events); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "billing stored every stream and knows orders", services, func() bool {
				var known int
				_ = billing.Pool.QueryRow(ctx, "select count(*) from streamseal.known_origins").Scan(&known)
				return known == 1 && countFrom(t, billing.Pool, "orders") == len(collationStreams) &&
					laneFloor(t, billing, "orders", "acme", eventTypes[0]) == int64(len(collationStreams))
			})
			// One real loss after receipt, in a stream both orders place mid-lane.
			if _, err := billing.Pool.Exec(ctx, "delete from streamseal.events where origin = 'orders' and stream_id = 'B-3'"); err != nil {
				t.Fatal(err)
			}

			findings, err := billing.Auditor.RunOnce(ctx)
			if err != nil {
				t.Fatalf("the audit across collations: %v", err)
			}
			if len(findings) != 1 || len(findings[0].Divergent) != 1 || findings[0].Requests != 1 || findings[0].Sealed {
				t.Fatalf("first round = %+v; want exactly the lost bucket B-3, one request", findings)
			}
			if b := findings[0].Divergent[0]; b.Stream != "B-3" || b.Reason != "deficit" || b.LocalN != 0 || b.OriginN != 1 {
				t.Fatalf("divergent bucket %+v; want B-3 a deficit of 1", b)
			}
			waitFor(t, "billing repaired B-3", services, func() bool { return countFrom(t, billing.Pool, "orders") == len(collationStreams) })

			again, err := billing.Auditor.RunOnce(ctx)
			if err != nil {
				t.Fatalf("the audit after the repair: %v", err)
			}
			if len(again[0].Divergent) != 0 || again[0].Requests != 0 || !again[0].Sealed {
				t.Fatalf("second round = %+v; want nothing divergent and the seal advanced", again)
			}
			var ledger int
			if err := billing.Pool.QueryRow(ctx, "select count(*) from streamseal.repair_ledger").Scan(&ledger); err != nil || ledger != 0 {
				t.Fatalf("%d ledger rows (%v) after the repair; want none: the heal must cover the page holding B-3", ledger, err)
			}
		})
	}
}
