package wire

import (
	"time"

	"github.com/google/uuid"
)

// Redelivery bodies. Ranges are half-open [lo, hi) pairs.

// RedeliveryRequest asks an origin to re-deliver part of its own lane to the sender. Filters are
// conjunctive; Types must be named; Tenants are named (every named (tenant, type) pair must be
// granted, or nothing is shipped) or omitted, which asks for the tenants the requester is
// granted, never every tenant (invariant 11).
type RedeliveryRequest struct {
	RequestID     string     `json:"request_id"`
	Tenants       []string   `json:"tenants"`
	Types         []string   `json:"types"`
	Streams       []string   `json:"streams,omitempty"`
	FromSeq       *int64     `json:"from_seq,omitempty"`
	ToSeq         *int64     `json:"to_seq,omitempty"`
	TypeSeqRanges [][2]int64 `json:"type_seq_ranges,omitempty"`
	MaxEvents     int        `json:"max_events"`
	StateOnly     bool       `json:"state_only,omitempty"`
	// After continues a selection strictly after this (stream, version): the rest of a truncated
	// answer, asked for with the answer's ResumeAfter.
	After *Position `json:"after,omitempty"`
}

// Position is one event's place in a redelivery selection's order (stream id, then version).
type Position struct {
	Stream  string `json:"stream"`
	Version int64  `json:"version"`
}

// Less orders positions as the selection does.
func (p Position) Less(q Position) bool {
	return p.Stream < q.Stream || (p.Stream == q.Stream && p.Version < q.Version)
}

// BundleEvent is one event of a bundle; its payload is the next Len bytes of the attachment.
type BundleEvent struct {
	ID         uuid.UUID `json:"id"`
	OriginSeq  int64     `json:"os"`
	TypeSeq    int64     `json:"ts"`
	Tenant     string    `json:"tn"`
	Type       string    `json:"ty"`
	Version    int64     `json:"v"`
	Flags      int32     `json:"f,omitempty"`
	Len        int       `json:"len"`
	Metadata   string    `json:"md,omitempty"`
	OccurredAt time.Time `json:"at"`
}

// Bundle is one stream's ordered slice of a redelivery, payloads in the attachment.
type Bundle struct {
	RequestID string        `json:"request_id"`
	Origin    string        `json:"origin"`
	StreamID  string        `json:"stream_id"`
	StateOnly bool          `json:"state_only,omitempty"`
	Events    []BundleEvent `json:"events"`
}

// Unservable names requested sequences an origin cannot re-deliver, and why (absent: reaped or
// closed or never existed; at_most_once; never_existed: above the origin's counter).
type Unservable struct {
	Tenant     string     `json:"tenant,omitempty"`
	Type       string     `json:"type,omitempty"`
	Reason     string     `json:"reason"`
	TypeSeqs   [][2]int64 `json:"type_seqs,omitempty"`
	OriginSeqs [][2]int64 `json:"origin_seqs,omitempty"`
}

// RedeliverySummary ends a redelivery: what was shipped and what cannot be.
type RedeliverySummary struct {
	RequestID string `json:"request_id"`
	Origin    string `json:"origin"`
	Shipped   int    `json:"shipped"`
	Bundles   int    `json:"bundles"`
	Truncated bool   `json:"truncated,omitempty"` // the origin's cap stopped it; ask again for the rest
	// ResumeAfter is the last event shipped when Truncated: the rest starts strictly after it.
	ResumeAfter *Position    `json:"resume_after,omitempty"`
	Unservable  []Unservable `json:"unservable,omitempty"`
}
