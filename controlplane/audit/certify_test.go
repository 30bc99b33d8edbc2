package audit

import (
	"strings"
	"testing"

	"github.com/streamseal/streamseal/controlplane/wire"
)

// Invariant 14 (a window certifies when every part of it compared equal, however many chunks
// carried it): the chunks of one answer must cover one window of one generation; a chunk of
// another watermark or generation fails the request instead of being compared as a part of it.
func TestAnswerChunks_OfTwoWindowsAreNotOneAnswer_Invariant14(t *testing.T) {
	for _, c := range []struct {
		name                  string
		watermark, generation int64
	}{
		{"AnotherWatermark", 10, 1},
		{"AnotherGeneration", 9, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := pending("orders", MaxAnswerChunksDefault)
			if reason, detail := p.take(wire.ManifestAnswer{RequestID: "r", Chunk: 1, Chunks: 2, Watermark: 9, Generation: 1}); reason != "" {
				t.Fatalf("first chunk refused: %s %s", reason, detail)
			}
			reason, _ := p.take(wire.ManifestAnswer{RequestID: "r", Chunk: 2, Chunks: 2, Watermark: c.watermark, Generation: c.generation})
			if _, done := p.complete(); done || reason != wire.DropOutOfScope || p.err == nil || !strings.Contains(p.err.Error(), "not one answer") {
				t.Fatalf("second chunk: reason %q, err %v, complete %v; want it refused and the request failed", reason, p.err, done)
			}
		})
	}
}
