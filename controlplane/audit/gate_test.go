package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/streamseal/streamseal/controlplane/wire"
)

func answerEnvelope(t *testing.T, requestID string, chunk int) wire.Envelope {
	t.Helper()
	env, err := wire.NewEnvelope(wire.KindManifestAnswer, "orders", "billing",
		wire.ManifestAnswer{RequestID: requestID, Origin: "orders", Level: wire.LevelTypes, Chunk: chunk, Chunks: 9})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func pending(origin string, maxChunks int) *pendingAnswer {
	return &pendingAnswer{origin: origin, maxDigests: 1, maxChunks: maxChunks, chunks: map[int]wire.ManifestAnswer{},
		arrived: make(chan struct{}, 1)}
}

// Invariants 14 and 12: every chunk of a waited-for answer is held, however many arrive before the
// waiter looks (nothing is handed through a lossy slot); a chunk nobody waits for is declined and
// counted; a chunk held already is counted as replayed, not declined.
func TestAnswerChunks_EveryChunkOfAWaitedForAnswerIsHeld_Invariant14(t *testing.T) {
	seam := &wire.Seam{Self: "billing"}
	a := &Auditor{seam: seam}
	if err := a.onAnswer(context.Background(), answerEnvelope(t, "nobody-asked", 1), nil); err != nil {
		t.Fatal(err)
	}
	if a.Declined() != 1 || seam.Dropped()[wire.DropUnsolicited] != 1 {
		t.Fatalf("declined %d, drops %v; want 1 unsolicited chunk declined", a.Declined(), seam.Dropped())
	}
	p := pending("orders", MaxAnswerChunksDefault)
	a.waiting = map[string]*pendingAnswer{"asked": p}
	for _, i := range []int{9, 1, 2, 3, 4, 5, 6, 7, 8, 3} {
		if err := a.onAnswer(context.Background(), answerEnvelope(t, "asked", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, done := p.complete()
	if !done || len(out) != 9 || out[0].Chunk != 1 || out[8].Chunk != 9 || p.err != nil {
		t.Fatalf("held %d chunks (complete %v, err %v); want all 9 in order", len(out), done, p.err)
	}
	if a.Declined() != 1 || seam.Dropped()[wire.DropReplayed] != 1 {
		t.Fatalf("declined %d, drops %v; want no chunk of the waited-for answer declined, the repeat counted replayed", a.Declined(), seam.Dropped())
	}
}

// Invariant 9 (bounded memory): a request holds at most its MaxAnswerChunks; an answer declaring
// more is declined and fails the request at once with an error naming the bound, never held.
func TestAnswerChunks_AnAnswerBeyondWhatTheRequestHoldsFailsIt_Invariant9(t *testing.T) {
	seam := &wire.Seam{Self: "billing"}
	a := &Auditor{seam: seam}
	p := pending("orders", 4)
	a.waiting = map[string]*pendingAnswer{"asked": p}
	if err := a.onAnswer(context.Background(), answerEnvelope(t, "asked", 1), nil); err != nil {
		t.Fatal(err)
	}
	if len(p.chunks) != 0 || p.err == nil || !strings.Contains(p.err.Error(), "9 chunks, more than the 4 a request holds") {
		t.Fatalf("held %d chunks, err %v; want none held and the request failed naming the bound", len(p.chunks), p.err)
	}
	if a.Declined() != 1 || seam.Dropped()[wire.DropOutOfScope] != 1 {
		t.Fatalf("declined %d, drops %v; want the chunk declined out of scope", a.Declined(), seam.Dropped())
	}
	select {
	case <-p.arrived:
	default:
		t.Fatal("the waiter was not woken to fail the request")
	}
}

// One comparison at a time: an audit asked for while one runs is declined, not queued.
func TestCompareGate_DeclinesASecondAudit(t *testing.T) {
	a := &Auditor{}
	a.running.Lock()
	if _, err := a.Run(context.Background(), Scope{}); err != ErrAuditRunning {
		t.Fatalf("second audit: %v, want ErrAuditRunning", err)
	}
	a.running.Unlock()
	if a.Declined() != 1 {
		t.Fatalf("declined %d, want 1", a.Declined())
	}
}

// Invariant 12: a manifest answer counts only for a request the auditor is waiting for, from the
// origin it asked: shipping answering a request sent to orders is dropped as unsolicited.
func TestManifestAnswer_FromAnotherOriginIsUnsolicited(t *testing.T) {
	seam := &wire.Seam{Self: "billing"}
	a := &Auditor{seam: seam}
	p := pending("orders", MaxAnswerChunksDefault)
	a.waiting = map[string]*pendingAnswer{"asked": p}
	env, err := wire.NewEnvelope(wire.KindManifestAnswer, "shipping", "billing",
		wire.ManifestAnswer{RequestID: "asked", Origin: "shipping", Level: wire.LevelTypes, Chunk: 1, Chunks: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.onAnswer(context.Background(), env, nil); err != nil {
		t.Fatal(err)
	}
	if len(p.chunks) != 0 || seam.Dropped()[wire.DropUnsolicited] != 1 {
		t.Fatalf("held %d chunks, drops %v; want none held and one unsolicited", len(p.chunks), seam.Dropped())
	}
}
