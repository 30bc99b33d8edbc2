package audit

import (
	"context"
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

// The compare gate (invariant 9): answer chunks nobody is waiting for, and chunks beyond what the
// waiting comparison holds, are declined and counted, never queued in memory.
func TestCompareGate_DeclinesWhatNoComparisonHolds(t *testing.T) {
	a := &Auditor{}
	if err := a.onAnswer(context.Background(), answerEnvelope(t, "nobody-asked", 1), nil); err != nil {
		t.Fatal(err)
	}
	if a.Declined() != 1 {
		t.Fatalf("declined %d, want 1 for an unsolicited chunk", a.Declined())
	}
	ch := make(chan wire.ManifestAnswer, 4)
	a.waiting = map[string]waitingAnswer{"asked": {origin: "orders", ch: ch}}
	for i := 1; i <= 9; i++ {
		if err := a.onAnswer(context.Background(), answerEnvelope(t, "asked", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(ch) != 4 || a.Declined() != 1+5 {
		t.Fatalf("held %d chunks and declined %d; want the 4 the comparison holds and 5 more declined", len(ch), a.Declined()-1)
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
	ch := make(chan wire.ManifestAnswer, 4)
	a.waiting = map[string]waitingAnswer{"asked": {origin: "orders", ch: ch}}
	env, err := wire.NewEnvelope(wire.KindManifestAnswer, "shipping", "billing",
		wire.ManifestAnswer{RequestID: "asked", Origin: "shipping", Level: wire.LevelTypes, Chunk: 1, Chunks: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.onAnswer(context.Background(), env, nil); err != nil {
		t.Fatal(err)
	}
	if len(ch) != 0 || seam.Dropped()[wire.DropUnsolicited] != 1 {
		t.Fatalf("held %d chunks, drops %v; want none held and one unsolicited", len(ch), seam.Dropped())
	}
}
