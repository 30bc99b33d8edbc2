package audit

import (
	"testing"

	"github.com/streamseal/streamseal/controlplane/wire"
)

// Invariant 14: an answer is whole only when every chunk 1..Chunks arrived, each counted once,
// all of one watermark and generation; a redelivered duplicate never stands in for a missing
// chunk (before: "len(received) == Chunks" took chunks 1, 1 of 2 as the whole answer).
func TestWholeAnswer(t *testing.T) {
	t.Parallel()
	chunk := func(n, of int, watermark int64) wire.ManifestAnswer {
		return wire.ManifestAnswer{Chunk: n, Chunks: of, Watermark: watermark,
			Digests: []wire.ManifestDigest{{Type: "t", N: int64(n)}}}
	}
	for _, c := range []struct {
		name     string
		received []wire.ManifestAnswer
		whole    bool
	}{
		{"OneChunk", []wire.ManifestAnswer{chunk(1, 1, 9)}, true},
		{"EveryChunkOutOfOrder", []wire.ManifestAnswer{chunk(3, 3, 9), chunk(1, 3, 9), chunk(2, 3, 9)}, true},
		{"ADuplicateIsNotTheMissingChunk", []wire.ManifestAnswer{chunk(1, 2, 9), chunk(1, 2, 9)}, false},
		{"ADuplicateOfAWholeAnswerCountsOnce", []wire.ManifestAnswer{chunk(1, 2, 9), chunk(1, 2, 9), chunk(2, 2, 9)}, true},
		{"ChunksOfTwoWatermarksAreNotOneAnswer", []wire.ManifestAnswer{chunk(1, 2, 9), chunk(2, 2, 10)}, false},
		{"AChunkNumberOutOfRangeIsNotAPart", []wire.ManifestAnswer{chunk(1, 2, 9), chunk(3, 2, 9)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, whole := wholeAnswer(c.received)
			if whole != c.whole {
				t.Fatalf("wholeAnswer(%+v) whole = %v, want %v", c.received, whole, c.whole)
			}
			for i, a := range got {
				if a.Chunk != i+1 {
					t.Fatalf("whole answer %+v not in chunk order, each once", got)
				}
			}
		})
	}
}
