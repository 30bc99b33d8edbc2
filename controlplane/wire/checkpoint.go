package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// HdrKind marks a message on an event subject that is not an event. Checkpoints ride the origin's
// event subjects (one per (tenant, type) with events in the window) so a checkpoint proves the
// path the events take, and a consumer subscribed to some tenants receives only their
// checkpoints (invariant 11). The origin's beat (KindBeat, beat.go) rides its beat subject.
const (
	HdrKind        = "Streamseal-Kind"
	KindCheckpoint = "checkpoint"
)

// Checkpoint says what an origin emitted of one (tenant, event type) in the origin_seq window
// [From, To): Tenants holds exactly one tenant, the one its subject names.
type Checkpoint struct {
	V      int    `json:"v"`
	Origin string `json:"origin"`
	// Control is ignored: it once carried the origin's control address, which a forged
	// checkpoint could point anywhere (invariant 12). Requests go to ControlSubjectFrom(origin,
	// self), computed from the authenticated origin name. Kept so older publishers still decode.
	Control    string             `json:"control,omitempty"`
	IntervalS  int                `json:"interval_s"`
	Generation int64              `json:"generation"`
	At         time.Time          `json:"at"` // when the origin took the window: one round of checkpoints
	From       int64              `json:"from"`
	To         int64              `json:"to"`
	Type       string             `json:"type"`
	Tenants    []CheckpointTenant `json:"tenants"`
}

// CheckpointTenant is one tenant's part: N counted events (at-most-once excluded), the first and
// last type_seq in the window (nil for a quiet one) and the at-most-once type_seqs, [lo, hi).
type CheckpointTenant struct {
	Tenant     string     `json:"tenant"`
	N          int64      `json:"n"`
	First      *int64     `json:"first,omitempty"`
	Last       *int64     `json:"last,omitempty"`
	AtMostOnce [][2]int64 `json:"at_most_once,omitempty"`
}

// CheckpointMessage builds the message for cp on the event subject of its one (tenant, type).
func CheckpointMessage(cp Checkpoint) (*nats.Msg, error) {
	cp.V = Version
	if len(cp.Tenants) != 1 {
		return nil, fmt.Errorf("encode checkpoint: a checkpoint covers one tenant's subject, got %d tenants", len(cp.Tenants))
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint: %w", err)
	}
	m := nats.NewMsg(LiveSubject(cp.Origin, cp.Tenants[0].Tenant, cp.Type))
	m.Header.Set(HdrKind, KindCheckpoint)
	m.Data = data
	return m, nil
}

// IsCheckpoint reports whether an event-subject message is a checkpoint.
func IsCheckpoint(h nats.Header) bool { return h.Get(HdrKind) == KindCheckpoint }

// DecodeCheckpoint parses and validates a checkpoint message body.
func DecodeCheckpoint(data []byte) (Checkpoint, error) {
	var cp Checkpoint
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cp); err != nil {
		return Checkpoint{}, fmt.Errorf("malformed checkpoint: %w", err)
	}
	switch {
	case cp.V != Version:
		return Checkpoint{}, fmt.Errorf("checkpoint version %d: this binary speaks %d", cp.V, Version)
	case !ValidServiceName(cp.Origin) || cp.Type == "" || cp.IntervalS < 1:
		return Checkpoint{}, fmt.Errorf("checkpoint lacks origin, type or interval")
	case cp.From < 0 || cp.To < cp.From:
		return Checkpoint{}, fmt.Errorf("checkpoint window [%d, %d) is invalid", cp.From, cp.To)
	case len(cp.Tenants) != 1:
		return Checkpoint{}, fmt.Errorf("checkpoint names %d tenants: one checkpoint covers one (tenant, type) subject", len(cp.Tenants))
	}
	return cp, nil
}
