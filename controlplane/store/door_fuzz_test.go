package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// FuzzDoor throws arbitrary sizes, lengths and encodings at append and ingest through the SQL
// API (invariant 13): every input is either stored and then numbered by the stamper, or refused
// with a clear error (22023 naming the field and the limit; 22021 for bytes that are not UTF-8,
// which Postgres names itself; a duplicate stream version by its constraint). Nothing refused is
// stored, and the stamper never fails on what the door let in.
func FuzzDoor(f *testing.F) {
	ctx := context.Background()
	pool := dbtest.NewPool(f, "fuzz-door")
	// Small limits, so refusals and inputs just under the limits are both common.
	if err := store.LimitsSet(ctx, pool, store.Limits{MaxPayloadBytes: 64, MaxIDBytes: 16, MaxMetadataBytes: 32}); err != nil {
		f.Fatal(err)
	}
	f.Add("acme", "order-1", int64(1), "order.placed", []byte("{}"), "", true)
	f.Add(strings.Repeat("t", 17), "s", int64(1), "x", []byte{}, "", false)
	f.Add("t", "s", int64(-5), "x", []byte(strings.Repeat("p", 65)), `{"a":1}`, true)
	f.Add("é\x00", "s\xff", int64(0), strings.Repeat("ü", 9), []byte("\x00"), `{"k":"`+strings.Repeat("v", 40)+`"}`, false)
	f.Add("t", "s", int64(1)<<62, "x.y", []byte(nil), "not json", true)

	origin := 0
	f.Fuzz(func(t *testing.T, tenant, stream string, version int64, eventType string, payload []byte, metadata string, own bool) {
		ctx, cancel := context.WithTimeout(ctx, testrun.Failsafe)
		defer cancel()
		var meta []byte
		if metadata != "" {
			meta = []byte(metadata)
		}
		var before int64
		if err := pool.QueryRow(ctx, "select count(*) from streamseal.events").Scan(&before); err != nil {
			t.Fatal(err)
		}
		var err error
		if own {
			_, err = store.EventsAppend(ctx, pool, []store.NewEvent{{Tenant: tenant, StreamID: stream, StreamVersion: version,
				EventType: eventType, Payload: payload, Metadata: meta}})
		} else {
			origin++
			_, err = store.EventsIngest(ctx, pool, []store.EventCopy{{EventID: uuid.New(), Origin: "other", OriginSeq: int64(origin),
				TypeSeq: int64(origin), Tenant: tenant, StreamID: stream, StreamVersion: version, EventType: eventType,
				Payload: payload, Metadata: meta}})
		}
		if err != nil {
			var pgErr *pgconn.PgError
			switch {
			case errors.Is(err, store.ErrInvalidInput) && (strings.Contains(err.Error(), " is required") ||
				strings.Contains(err.Error(), "the limit is") || strings.Contains(err.Error(), "expected >= 1")):
			case errors.Is(err, store.ErrConstraint) && strings.Contains(err.Error(), "events_stream_version"):
			case errors.As(err, &pgErr) && (pgErr.Code == "22021" || pgErr.Code == "22P02" || pgErr.Code == "22P05"):
				// Not UTF-8, a NUL byte, or metadata that is not JSON: Postgres names the bad input.
			default:
				t.Fatalf("refusal is not clear: %v", err)
			}
			var after int64
			if err := pool.QueryRow(ctx, "select count(*) from streamseal.events").Scan(&after); err != nil {
				t.Fatal(err)
			}
			if after != before {
				t.Fatalf("a refused event was stored: %d rows before, %d after", before, after)
			}
		}
		// The stamper numbers whatever the door let in.
		if _, err := store.EventsStamp(ctx, pool, 1000); err != nil {
			t.Fatalf("the stamper failed behind the door: %v", err)
		}
	})
}
