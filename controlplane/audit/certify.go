// certify.go: when the chunks of one answer make the whole answer (invariant 14: an audit never
// certifies over a part it did not compare). A window certifies when every part of it compared
// equal, however many chunks carried it, so the whole answer must be exactly chunks 1..Chunks,
// each once, all of one watermark and generation.

package audit

import (
	"sort"

	"github.com/streamseal/streamseal/controlplane/wire"
)

// wholeAnswer returns the chunks received so far in chunk order, without duplicates, and true
// when they are the whole answer: every chunk 1..Chunks present once, all agreeing on Chunks,
// watermark and generation. A duplicate chunk (a redelivered message) counts once, so it can
// never stand in for a missing one.
func wholeAnswer(received []wire.ManifestAnswer) ([]wire.ManifestAnswer, bool) {
	if len(received) == 0 {
		return nil, false
	}
	first := received[0]
	byChunk := map[int]wire.ManifestAnswer{}
	for _, ans := range received {
		if ans.Chunks != first.Chunks || ans.Watermark != first.Watermark || ans.Generation != first.Generation {
			return nil, false
		}
		if ans.Chunk >= 1 && ans.Chunk <= ans.Chunks {
			byChunk[ans.Chunk] = ans
		}
	}
	if first.Chunks < 1 || len(byChunk) != first.Chunks {
		return nil, false
	}
	out := make([]wire.ManifestAnswer, 0, len(byChunk))
	for _, ans := range byChunk {
		out = append(out, ans)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Chunk < out[j].Chunk })
	return out, true
}
