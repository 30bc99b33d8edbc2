package audit_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestManifestServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		pool    *pgxpool.Pool // the origin's ("orders") database; billing is granted eventTypes[:2]
		nats    *natstest.Server
		control *wire.Control       // the origin's control endpoint
		billing jetstream.JetStream // the requester's connection
		answers *natstest.Recorder  // billing's control subject
	}

	setup := func(t *testing.T) (*audit.ManifestServer, *testBundle) {
		t.Helper()
		pool := dbtest.NewPool(t, "orders")
		if err := store.GrantsAdd(ctx, pool, "billing", eventTypes[:2], store.AllTenants()); err != nil {
			t.Fatal(err)
		}
		srv := natstest.Start(t)
		_, js := srv.Connect(t, "orders")
		_, billing := srv.Connect(t, "billing")
		return &audit.ManifestServer{Pool: pool, JS: js, Service: "orders", Logger: testrun.Logger(t)},
			&testBundle{pool: pool, nats: srv, control: natstest.Control(t, js, "orders"), billing: billing,
				answers: srv.Record(t, wire.ControlStream, wire.ControlFilters("billing")[0])}
	}

	start := func(t *testing.T, s *audit.ManifestServer, b *testBundle) {
		t.Helper()
		s.Register(b.control)
		testrun.Go(t, "control endpoint", b.control.Run)
	}

	// send publishes a manifest request from requester over js and returns its id.
	send := func(t *testing.T, js jetstream.JetStream, requester string, req wire.ManifestRequest) string {
		t.Helper()
		if req.RequestID == "" {
			req.RequestID = uuid.NewString()
		}
		env, err := wire.NewEnvelope(wire.KindManifestRequest, requester, "orders", req)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Publish(ctx, js, env, nil); err != nil {
			t.Fatal(err)
		}
		return req.RequestID
	}
	ask := func(t *testing.T, b *testBundle, req wire.ManifestRequest) []wire.ManifestAnswer {
		t.Helper()
		return awaitManifest(t, b.answers, send(t, b.billing, "billing", req))
	}

	// typeDigests is the origin's own type-level answer for the granted types, from store.
	typeDigests := func(t *testing.T, pool *pgxpool.Pool, types ...string) (string, int64) {
		t.Helper()
		answer, err := store.TypeDigests(ctx, pool, "orders", 0, 1<<62, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []wire.ManifestDigest
		for _, d := range answer.Digests {
			for _, ty := range types {
				if d.EventType == ty {
					out = append(out, wire.ManifestDigest{Tenant: d.Tenant, Type: d.EventType, X0: d.X0, X1: d.X1, N: d.N})
				}
			}
		}
		return sorted(out), answer.Watermark
	}

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		// The README's --max-digests-per-manifest default, and the configuration's.
		if audit.MaxDigestsDefault != 500 || config.Defaults().MaxDigestsPerManifest != audit.MaxDigestsDefault {
			t.Fatalf("MaxDigestsDefault = %d and the configured default %d, want both 500",
				audit.MaxDigestsDefault, config.Defaults().MaxDigestsPerManifest)
		}

		// A zero-valued server chunks at 500 digests: 501 (tenant, type) buckets are two chunks.
		s, b := setup(t)
		var events []store.NewEvent
		for i := range 501 {
			events = append(events, ownEvent(fmt.Sprintf("t%03d", i), fmt.Sprintf("s%03d", i), 1, eventTypes[0]))
		}
		appendStamped(t, b.pool, events...)
		start(t, s, b)
		want, watermark := typeDigests(t, b.pool, eventTypes[0])
		for _, c := range []struct {
			asked int
			sizes string
		}{
			{0, "[500 1]"},         // the requester names no limit: the server's default
			{200, "[200 200 101]"}, // the requester's smaller limit wins
			{900, "[500 1]"},       // a larger one does not
		} {
			chunks := ask(t, b, wire.ManifestRequest{Level: wire.LevelTypes, From: 0, To: 1 << 62, MaxDigests: c.asked})
			var sizes []int
			for i, chunk := range chunks {
				sizes = append(sizes, len(chunk.Digests))
				// Invariant 14: every chunk says what it covers, so a partial answer is never read as whole.
				if chunk.Chunk != i+1 || chunk.Chunks != len(chunks) || chunk.Watermark != watermark || chunk.From != 0 ||
					chunk.Origin != "orders" || chunk.Level != wire.LevelTypes {
					t.Fatalf("chunk %d of %d: %+v (want watermark %d)", i+1, len(chunks), chunk, watermark)
				}
			}
			if fmt.Sprint(sizes) != c.sizes {
				t.Fatalf("asked for %d digests a chunk: chunks of %v, want %s", c.asked, sizes, c.sizes)
			}
			if got := sorted(digestsOf(chunks)); got != want {
				t.Fatalf("the chunks' digests differ from the origin's type digests")
			}
		}
	})

	// Invariant 11 (isolation): digests are answered only for the types the requester is granted,
	// at type level and at stream level; a requester granted nothing learns only the watermark.
	t.Run("AnswersOnlyGrantedTypes", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		for v := int64(1); v <= 3; v++ {
			for i, ty := range eventTypes {
				appendStamped(t, b.pool, ownEvent("acme", fmt.Sprintf("s%d", i), v, ty), ownEvent("globex", fmt.Sprintf("g%d", i), v, ty))
			}
		}
		_, shipping := b.nats.Connect(t, "shipping")
		shippingAnswers := b.nats.Record(t, wire.ControlStream, wire.ControlFilters("shipping")[0])
		start(t, s, b)

		want, watermark := typeDigests(t, b.pool, eventTypes[:2]...)
		chunks := ask(t, b, wire.ManifestRequest{Level: wire.LevelTypes, From: 0, To: 1 << 62})
		if got := sorted(digestsOf(chunks)); got != want || chunks[0].Watermark != watermark {
			t.Fatalf("type level answered %s (watermark %d), want the granted types' %s (watermark %d)", got, chunks[0].Watermark, want, watermark)
		}

		chunks = ask(t, b, wire.ManifestRequest{Level: wire.LevelStreams, From: 0, To: 1 << 62, Types: []string{eventTypes[0], eventTypes[2]}})
		all, err := store.StreamDigests(ctx, b.pool)
		if err != nil {
			t.Fatal(err)
		}
		var wantStreams []wire.ManifestDigest
		for _, d := range all {
			if d.EventType == eventTypes[0] {
				wantStreams = append(wantStreams, wire.ManifestDigest{Stream: d.StreamID, Tenant: d.Tenant, Type: d.EventType, X0: d.X0, X1: d.X1, N: d.N})
			}
		}
		if got := sorted(digestsOf(chunks)); got != sorted(wantStreams) || chunks[len(chunks)-1].ResumeAfter != "" {
			t.Fatalf("stream level answered %s (resume %q), want only the granted type's buckets %s", got, chunks[len(chunks)-1].ResumeAfter, sorted(wantStreams))
		}

		ungranted := awaitManifest(t, shippingAnswers, send(t, shipping, "shipping", wire.ManifestRequest{Level: wire.LevelTypes, From: 0, To: 1 << 62}))
		if d := digestsOf(ungranted); len(d) != 0 || ungranted[0].Watermark != watermark {
			t.Fatalf("a requester granted nothing got %d digests (watermark %d)", len(d), ungranted[0].Watermark)
		}
	})

	// Invariant 8 (bounded cost): a stream-level answer is paged by stream id, whole streams per
	// page, and a request after a page's resume cursor continues exactly there until the window
	// is complete.
	t.Run("PagesStreamLevelAnswersAfterTheCursor", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		s.MaxDigests = 2
		for i := 1; i <= 5; i++ {
			appendStamped(t, b.pool, ownEvent("acme", fmt.Sprintf("s%d", i), 1, eventTypes[0]), ownEvent("acme", fmt.Sprintf("s%d", i), 2, eventTypes[0]))
		}
		start(t, s, b)
		var pages []string
		after := ""
		for range 5 {
			chunks := ask(t, b, wire.ManifestRequest{Level: wire.LevelStreams, From: 0, To: 1 << 62, Types: eventTypes[:1], AfterStream: after})
			var streams []string
			for _, d := range digestsOf(chunks) {
				streams = append(streams, d.Stream)
			}
			after = chunks[len(chunks)-1].ResumeAfter
			pages = append(pages, fmt.Sprintf("%v→%q", streams, after))
			if after == "" {
				break
			}
		}
		if want := `[[s1 s2]→"s2" [s3 s4]→"s4" [s5]→""]`; fmt.Sprint(pages) != want {
			t.Fatalf("pages %v, want %s", pages, want)
		}
	})

	// Invariants 11 and 13: a range-fold request over a bad tenant key range (lo > hi, outside the
	// key space) or an oversized split is refused with nothing sent back; a good one folds only
	// the types the requester is granted, each fold naming a part of the split it asked.
	t.Run("RefusesBadTenantRangesAndFoldsOnlyGrantedTypes", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		appendStamped(t, b.pool, ownEvent("acme", "s1", 1, eventTypes[0]), ownEvent("zeta", "s2", 1, eventTypes[2]))
		start(t, s, b)
		scope := []wire.TypeScope{{Type: eventTypes[0], All: true}, {Type: eventTypes[2], All: true}}
		send(t, b.billing, "billing", wire.ManifestRequest{Level: wire.LevelRanges, From: 0, To: 1 << 62, Scope: scope, KeyLo: 10, KeyHi: 5, Parts: 4})
		send(t, b.billing, "billing", wire.ManifestRequest{Level: wire.LevelRanges, From: 0, To: 1 << 62, Scope: scope, KeyHi: store.TenantKeyEnd, Parts: 65})
		send(t, b.billing, "billing", wire.ManifestRequest{Level: wire.LevelRangeTenants, From: 0, To: 1 << 62, Scope: scope, KeyLo: -1, KeyHi: 5})
		testrun.WaitFor(t, "the three requests handled", func() bool { return b.control.Finished() == 3 })
		if answered, chunks := s.Counts(); answered != 0 || chunks != 0 {
			t.Fatalf("answered %d bad range requests in %d chunks, want none", answered, chunks)
		}
		chunks := ask(t, b, wire.ManifestRequest{Level: wire.LevelRanges, From: 0, To: 1 << 62, Scope: scope, KeyHi: store.TenantKeyEnd, Parts: 16})
		if len(chunks) != 1 || len(chunks[0].Ranges) != 1 {
			t.Fatalf("the good range request got %+v; want one chunk of one fold", chunks)
		}
		if f := chunks[0].Ranges[0]; f.Type != eventTypes[0] || f.N != 1 || f.Pairs != 1 || f.Part < 0 || f.Part >= 16 {
			t.Fatalf("range fold %+v; want the granted type's one pair, in a part of the 16 asked", f)
		}
	})

	// Invariant 13: a request that does not decode or names an impossible window is refused at
	// once, with nothing sent back, and the next good request is answered.
	t.Run("RefusesAMalformedRequestAndAnswersNothing", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		appendStamped(t, b.pool, ownEvent("acme", "s", 1, eventTypes[0]))
		start(t, s, b)
		send(t, b.billing, "billing", wire.ManifestRequest{Level: wire.LevelTypes, From: 9, To: 3})
		send(t, b.billing, "billing", wire.ManifestRequest{Level: "everything", From: 0, To: 9})
		send(t, b.billing, "billing", wire.ManifestRequest{Level: wire.LevelFolds, From: 0, To: 9, Scope: []wire.TypeScope{{Type: "", All: true}}})
		bad, err := wire.NewEnvelope(wire.KindManifestRequest, "billing", "orders", map[string]any{"level": "types", "from": 0, "to": 9, "more": true})
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Publish(ctx, b.billing, bad, nil); err != nil {
			t.Fatal(err)
		}
		testrun.WaitFor(t, "the four requests handled", func() bool { return b.control.Finished() == 4 })
		if answered, chunks := s.Counts(); answered != 0 || chunks != 0 {
			t.Fatalf("answered %d requests in %d chunks, want none", answered, chunks)
		}
		if n := b.nats.Count(t, wire.ControlStream, wire.ControlFilters("billing")[0]); n != 0 {
			t.Fatalf("%d messages sent to billing for malformed requests", n)
		}
		if chunks := ask(t, b, wire.ManifestRequest{Level: wire.LevelTypes, From: 0, To: 1 << 62}); len(digestsOf(chunks)) != 1 {
			t.Fatalf("the good request after the refusals got %+v", chunks)
		}
	})
}

// sorted renders digests in a canonical order for comparison.
func sorted(ds []wire.ManifestDigest) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%s/%s/%s:%d,%d,%d", d.Stream, d.Tenant, d.Type, d.X0, d.X1, d.N)
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}
