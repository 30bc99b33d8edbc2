package feedhttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"

	"github.com/streamseal/streamseal/controlplane/feedhttp"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
	"github.com/streamseal/streamseal/internal/testrun"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func ingest(t *testing.T, db *pgxpool.Pool, seqs ...int64) {
	t.Helper()
	var copies []store.EventCopy
	for _, s := range seqs {
		copies = append(copies, store.EventCopy{EventID: uuid.MustParse(fmt.Sprintf("00000000-0000-0000-0000-%012d", s)),
			Origin: "orders", OriginSeq: s, TypeSeq: s, Tenant: "acme", StreamID: fmt.Sprint("s", s), StreamVersion: 1,
			EventType: "order.placed", Payload: []byte(`{"n":1}`)})
	}
	if _, err := store.EventsIngest(context.Background(), db, copies); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.SubscriptionsAdd(ctx, db, "orders", []string{"order.placed"}, store.AllTenants()); err != nil {
		t.Fatal(err)
	}
	last := seqs[len(seqs)-1]
	if _, err := db.Exec(ctx, `select streamseal.verify_checkpoint('orders', 0, $1::bigint + 1, 'order.placed', array['acme'],
		array[$1::bigint], array[1::bigint], array[$1::bigint], array['{}'::int8multirange])`, last); err != nil {
		t.Fatal(err)
	}
}

// sse reads events from an open stream: each event's data and the last id seen.
type sse struct {
	resp   *http.Response
	lines  *bufio.Scanner
	lastID string
}

func open(t *testing.T, url, lastEventID string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// next returns the next event's origin_seq (blocking on the stream: the failsafe is the test's).
func (s *sse) next(t *testing.T) int64 {
	t.Helper()
	for s.lines.Scan() {
		line := s.lines.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			s.lastID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			var e feedhttp.Event
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e); err != nil {
				t.Fatalf("event data %q: %v", line, err)
			}
			return e.OriginSeq
		}
	}
	t.Fatalf("the stream ended: %v", s.lines.Err())
	return 0
}

// Invariant 15 over HTTP: a real client reads the SSE feed, disconnects, reconnects with the
// Last-Event-ID it last saw and gets exactly what came after (the late repair included); each
// refusal is its status with a JSON body.
func TestFeedHTTP_ResumesWithLastEventIDAndRefusesWithStatuses(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "billing")
	ingest(t, pool, 1, 3)
	metrics := feedhttp.NewMetrics(nil)
	srv := httptest.NewServer((&feedhttp.Server{Pool: pool, Metrics: metrics}).Handler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/feed?types=order.placed"

	first := &sse{resp: open(t, url, "")}
	if first.resp.StatusCode != http.StatusOK || first.resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /feed: %s %s", first.resp.Status, first.resp.Header.Get("Content-Type"))
	}
	first.lines = bufio.NewScanner(first.resp.Body)
	done := make(chan [2]int64, 1)
	go func() { a := first.next(t); b := first.next(t); done <- [2]int64{a, b} }()
	got := testrun.Receive(t, "two events over SSE", done)
	if got != [2]int64{1, 3} || first.lastID == "" {
		t.Fatalf("read %v with id %q, want [1 3] and a token", got, first.lastID)
	}
	first.resp.Body.Close()
	testrun.WaitFor(t, "the reader disconnected", func() bool { return testutilGauge(metrics) == 0 })

	ingest(t, pool, 2, 4) // the repair of 2 below the reader's position, and 4
	again := &sse{resp: open(t, url, first.lastID)}
	if again.resp.StatusCode != http.StatusOK {
		t.Fatalf("reconnect with Last-Event-ID: %s", again.resp.Status)
	}
	again.lines = bufio.NewScanner(again.resp.Body)
	go func() { a := again.next(t); b := again.next(t); done <- [2]int64{a, b} }()
	if got := testrun.Receive(t, "the events after the id", done); got != [2]int64{2, 4} {
		t.Fatalf("after reconnecting read %v, want [2 4] (the repair below the old position, then 4)", got)
	}

	other := dbtest.NewPool(t, "audit")
	otherSrv := httptest.NewServer((&feedhttp.Server{Pool: other, Metrics: feedhttp.NewMetrics(nil)}).Handler())
	t.Cleanup(otherSrv.Close)
	for _, c := range []struct {
		name, url, id string
		status        int
		code          string
	}{
		{"a malformed token", url, "not a token", http.StatusBadRequest, "bad_request"},
		{"another scope", srv.URL + "/feed?types=other", first.lastID, http.StatusBadRequest, "bad_request"},
		{"an origin this store does not hold", otherSrv.URL + "/feed?types=order.placed", first.lastID, http.StatusGone, "gone"},
	} {
		resp := open(t, c.url, c.id)
		var body feedhttp.Refusal
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s: %s: %v", c.name, resp.Status, err)
		}
		if resp.StatusCode != c.status || body.Error != c.code || body.Message == "" {
			t.Fatalf("%s: %s %+v, want %d %s with a message", c.name, resp.Status, body, c.status, c.code)
		}
	}
	if _, err := pool.Exec(context.Background(), `insert into streamseal.known_origins (origin, control_subject, interval_seconds,
		generation, last_checkpoint_at, last_window_to) values ('orders', 'streamseal.ctl.orders', 60, 1, now(), 5)`); err != nil {
		t.Fatal(err)
	}
	// A token from elsewhere (no local part here): this store's orders is at generation 1.
	foreign := foreignToken(t, pool, first.lastID)
	resp := open(t, url, foreign)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("a token at another generation: %s, want 409", resp.Status)
	}
}

func testutilGauge(m *feedhttp.Metrics) float64 {
	var out dto.Metric
	if err := m.Readers.Write(&out); err != nil {
		return -1
	}
	return out.GetGauge().GetValue()
}

// foreignToken is token without its local part, as another database would see it.
func foreignToken(t *testing.T, db *pgxpool.Pool, token string) string {
	t.Helper()
	var out string
	if err := db.QueryRow(context.Background(), `select streamseal._feed_token_encode(t.scope_digest, t.members, t.generations,
		t.boundaries, null, 0, 0, 0, 0, '{}', '{}') from streamseal.feed_token($1) t`, token).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}
