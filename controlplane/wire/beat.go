package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// KindBeat marks an origin's liveness beat on its beat subject (BeatSubject).
const KindBeat = "beat"

// Beat says an origin took a checkpoint round: the window [From, To) it checkpointed, when, and
// at which interval. It carries no counts: the pairs with events in the window had their own
// checkpoints on their own subjects, and the quiet ones have nothing to say. A consumer records
// the origin alive (liveness) and re-evaluates its lanes of the origin that hold holes, so
// two-cycle confirmation and re-asks go on while a pair is quiet.
//
// Lanes (issue 17) lists the pairs the round checkpointed, each with the last type_seq it
// reached, so a consumer knows which lanes the round announced before their checkpoints are
// verified (they ride other subjects, at the inbox's pace): the feed certifies an origin only as
// far as every listed lane is announced (streamseal.record_lane_round). A long list is split
// over Parts messages of one round (same At, From and To; Part 1 to Parts; BeatLanesPerPart
// each); only part 1 is the round's liveness beat. Parts 0 (the fields absent): a sender older
// than the list, whose rounds a consumer cannot account for (the feed certifies that origin by
// its lanes alone, as before). A receiver older than the list refuses a beat carrying it as
// malformed (unknown fields): upgrade consumers before origins.
type Beat struct {
	V          int        `json:"v"`
	Origin     string     `json:"origin"`
	IntervalS  int        `json:"interval_s"`
	Generation int64      `json:"generation"`
	At         time.Time  `json:"at"` // when the origin took the window: names the round
	From       int64      `json:"from"`
	To         int64      `json:"to"`
	Part       int        `json:"part,omitempty"`
	Parts      int        `json:"parts,omitempty"`
	Lanes      []BeatLane `json:"lanes,omitempty"`
}

// BeatLane is one pair a round checkpointed and the last type_seq it reached in the window. On
// the wire it is an array, ["tenant", "type", last]: a list names every active pair of a round
// again, and keys would cost as much as the names.
type BeatLane struct {
	Tenant string
	Type   string
	Last   int64
}

// MarshalJSON writes l as ["tenant", "type", last].
func (l BeatLane) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{l.Tenant, l.Type, l.Last})
}

// UnmarshalJSON reads ["tenant", "type", last], refusing any other shape.
func (l *BeatLane) UnmarshalJSON(data []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(data, &parts); err != nil {
		return fmt.Errorf("beat lane: %w", err)
	}
	if len(parts) != 3 {
		return fmt.Errorf("beat lane has %d fields: expected [tenant, type, last]", len(parts))
	}
	if err := json.Unmarshal(parts[0], &l.Tenant); err != nil {
		return fmt.Errorf("beat lane tenant: %w", err)
	}
	if err := json.Unmarshal(parts[1], &l.Type); err != nil {
		return fmt.Errorf("beat lane type: %w", err)
	}
	if err := json.Unmarshal(parts[2], &l.Last); err != nil {
		return fmt.Errorf("beat lane last: %w", err)
	}
	return nil
}

// BeatLanesPerPart bounds the pairs one beat message lists (a pair costs its names and ~15
// bytes, so a part stays far below the broker's max payload): a round over more pairs is split.
const BeatLanesPerPart = 2000

// beatPartsMax bounds the parts a beat may claim (a round of 10 million active pairs).
const beatPartsMax = 5000

// BeatParts splits a round's beat b over as many parts as its lanes need (at least one).
func BeatParts(b Beat, lanes []BeatLane) []Beat {
	parts := max(1, (len(lanes)+BeatLanesPerPart-1)/BeatLanesPerPart)
	out := make([]Beat, parts)
	for i := range out {
		p := b
		p.Part, p.Parts = i+1, parts
		p.Lanes = lanes[min(i*BeatLanesPerPart, len(lanes)):min((i+1)*BeatLanesPerPart, len(lanes))]
		out[i] = p
	}
	return out
}

// BeatMessage builds the message for b on its origin's beat subject.
func BeatMessage(b Beat) (*nats.Msg, error) {
	b.V = Version
	data, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode beat: %w", err)
	}
	m := nats.NewMsg(BeatSubject(b.Origin))
	m.Header.Set(HdrKind, KindBeat)
	m.Data = data
	return m, nil
}

// IsBeat reports whether an event-subject message is a beat.
func IsBeat(h nats.Header) bool { return h.Get(HdrKind) == KindBeat }

// DecodeBeat parses and validates a beat message body.
func DecodeBeat(data []byte) (Beat, error) {
	var b Beat
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return Beat{}, fmt.Errorf("malformed beat: %w", err)
	}
	switch {
	case b.V != Version:
		return Beat{}, fmt.Errorf("beat version %d: this binary speaks %d", b.V, Version)
	case !ValidServiceName(b.Origin) || b.IntervalS < 1:
		return Beat{}, fmt.Errorf("beat lacks origin or interval")
	case b.From < 0 || b.To < b.From:
		return Beat{}, fmt.Errorf("beat window [%d, %d) is invalid", b.From, b.To)
	case b.Parts == 0 && (b.Part != 0 || len(b.Lanes) > 0):
		return Beat{}, fmt.Errorf("beat lists lanes or names part %d without its parts", b.Part)
	case b.Parts < 0 || b.Parts > beatPartsMax || (b.Parts > 0 && (b.Part < 1 || b.Part > b.Parts)):
		return Beat{}, fmt.Errorf("beat part %d of %d is invalid: expected 1 <= part <= parts <= %d", b.Part, b.Parts, beatPartsMax)
	case len(b.Lanes) > BeatLanesPerPart:
		return Beat{}, fmt.Errorf("beat lists %d lanes: at most %d a part", len(b.Lanes), BeatLanesPerPart)
	}
	for _, l := range b.Lanes {
		if l.Type == "" || l.Last < 1 {
			return Beat{}, fmt.Errorf("beat lane (tenant %q, type %q, last %d) is invalid: expected a type and a last type_seq >= 1", l.Tenant, l.Type, l.Last)
		}
	}
	return b, nil
}
