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
	// Copies (a backfill's requests) welcomes forwarded copies: a service that holds copies of
	// other origins' events of the types, and whose operator lets it serve them, answers with
	// those too after its own lane. State-only requests only.
	Copies bool `json:"copies,omitempty"`
	// AtMostOnceTypes (a backfill's per-type opt-in) are the types whose at-most-once
	// occurrences a state-only request asks for too; every other type's are never selected.
	AtMostOnceTypes []string `json:"at_most_once_types,omitempty"`
}

// Position is one event's place in a redelivery selection's order: the lane (empty: the
// answering origin's own lane, which comes first; else the origin of forwarded copies, in name
// order), then stream id, then version.
type Position struct {
	Lane    string `json:"lane,omitempty"`
	Stream  string `json:"stream"`
	Version int64  `json:"version"`
}

// Less orders positions as the selection does.
func (p Position) Less(q Position) bool {
	if p.Lane != q.Lane {
		return p.Lane < q.Lane
	}
	return p.Stream < q.Stream || (p.Stream == q.Stream && p.Version < q.Version)
}

// BundleEvent is one event of a bundle; its payload is the next Len bytes of the attachment.
type BundleEvent struct {
	ID uuid.UUID `json:"id"`
	// Stream is the event's stream when it is not the bundle's StreamID: a backfill's
	// (state-only) bundle packs consecutive streams, each stream's slice in version order.
	Stream     string    `json:"s,omitempty"`
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

// Bundle is one stream's ordered slice of a redelivery (a backfill's: consecutive streams'
// slices, BundleEvent.Stream naming each event's stream past the first), payloads in the
// attachment. Origin is the events' lane: the sender's own, or, in a backfill's answer from a
// service serving forwarded copies, their origin.
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
	ResumeAfter *Position `json:"resume_after,omitempty"`
	// Total, in the answer to a request that starts a selection (no After), is how many events
	// the whole answer (this request and the follow-ups of its truncation) is expected to ship:
	// progress is Shipped over it. An estimate from the origin's counters; 0: not stated.
	Total      int64        `json:"total,omitempty"`
	Unservable []Unservable `json:"unservable,omitempty"`
}
