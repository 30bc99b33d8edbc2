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
type Beat struct {
	V          int       `json:"v"`
	Origin     string    `json:"origin"`
	IntervalS  int       `json:"interval_s"`
	Generation int64     `json:"generation"`
	At         time.Time `json:"at"` // when the origin took the window: names the round
	From       int64     `json:"from"`
	To         int64     `json:"to"`
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
	}
	return b, nil
}
