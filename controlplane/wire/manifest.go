package wire

import (
	"encoding/json"
	"fmt"
)

// Manifest kinds: a consumer asks an origin for digests of a window, the origin answers.
const (
	KindManifestRequest = "manifest_request"
	KindManifestAnswer  = "manifest_answer"
)

func init() {
	knownKinds[KindManifestRequest] = true
	knownKinds[KindManifestAnswer] = true
}

// Manifest levels.
const (
	LevelTypes   = "types"   // one digest per (tenant, type): O(types) on the wire
	LevelStreams = "streams" // one per (stream, tenant, type) of the named types, paged by stream
	// LevelFolds is the healthy audit's level: one digest per event type of the request's Scope,
	// folded over every tenant of it the requester is granted: O(types) whatever the tenant count.
	LevelFolds = "folds"
	// LevelTenants drills a mismatched type: one digest per (tenant, type) of the Scope (the
	// mismatched types), whole tenants after AfterTenant, paged like the stream level.
	LevelTenants = "tenants"
	// LevelRanges drills a mismatched type by bisecting the tenant key space: [KeyLo, KeyHi) split
	// into Parts sub-ranges, one fold per (sub-range, type of the Scope) in the answer's Ranges.
	LevelRanges = "ranges"
	// LevelRangeTenants lists the (tenant, type) digests of the Scope whose tenant key lies in
	// [KeyLo, KeyHi): the last step of a drill-down, asked for a range its folds found small.
	LevelRangeTenants = "range_tenants"
)

// TypeScope is one event type of a fold request's scope: every tenant of it (All) or exactly
// Tenants. Both sides fold the same named set: the consumer's subscriptions, intersected on the
// origin with what the requester is granted.
type TypeScope struct {
	Type    string   `json:"type"`
	All     bool     `json:"all,omitempty"`
	Tenants []string `json:"tenants,omitempty"`
}

// ManifestRequest asks for the digests of [From, To) at Level. A stream-level request names its
// types and resumes after AfterStream.
type ManifestRequest struct {
	RequestID   string   `json:"request_id"`
	Level       string   `json:"level"`
	From        int64    `json:"from"`
	To          int64    `json:"to"`
	Types       []string `json:"types,omitempty"`
	AfterStream string   `json:"after_stream,omitempty"`
	MaxDigests  int      `json:"max_digests"`
	// ChangesAfter is the requester's cursor in the origin's history changes (type level): the
	// answer carries the changes above it.
	ChangesAfter int64 `json:"changes_after,omitempty"`
	// Scope names the (tenant, type) pairs a folds- or tenants-level request folds.
	Scope []TypeScope `json:"scope,omitempty"`
	// AfterTenant resumes a tenants-level request after that tenant.
	AfterTenant string `json:"after_tenant,omitempty"`
	// KeyLo, KeyHi and Parts name a ranges-level request's range of the tenant key space and its
	// split (KeyLo, KeyHi also a range_tenants-level request's range).
	KeyLo int64 `json:"key_lo,omitempty"`
	KeyHi int64 `json:"key_hi,omitempty"`
	Parts int   `json:"parts,omitempty"`
	// Tenants narrows a stream-level request to those tenants (empty: every tenant).
	Tenants []string `json:"tenants,omitempty"`
	// Reply, when set, is the requester's reply token: the origin answers on
	// ReplySubject(requester, origin, Reply) instead of the requester's control inbox, so an
	// operator's audit beside a running service gets its answers and the service never sees
	// them. The requester stays the authenticated sender of the request; only it may read there.
	Reply string `json:"reply,omitempty"`
}

// ManifestDigest is one bucket's fold; Stream is empty at type level. On the wire it is a compact
// array, [tenant, type, x0, x1, n] or [tenant, type, x0, x1, n, stream]: a healthy audit's cost
// is these rows, and keys would be a third of it.
type ManifestDigest struct {
	Stream string
	Tenant string
	Type   string
	X0     int64
	X1     int64
	N      int64
}

// MarshalJSON writes the compact array form.
func (d ManifestDigest) MarshalJSON() ([]byte, error) {
	row := []any{d.Tenant, d.Type, d.X0, d.X1, d.N}
	if d.Stream != "" {
		row = append(row, d.Stream)
	}
	return json.Marshal(row)
}

// UnmarshalJSON reads the compact array form, refusing anything else.
func (d *ManifestDigest) UnmarshalJSON(data []byte) error {
	var row []json.RawMessage
	if err := json.Unmarshal(data, &row); err != nil || (len(row) != 5 && len(row) != 6) {
		return fmt.Errorf("manifest digest %s: expected [tenant, type, x0, x1, n(, stream)]", data)
	}
	fields := []any{&d.Tenant, &d.Type, &d.X0, &d.X1, &d.N, &d.Stream}
	for i, raw := range row {
		if err := json.Unmarshal(raw, fields[i]); err != nil {
			return fmt.Errorf("manifest digest field %d: %w", i, err)
		}
	}
	return nil
}

// RangeFold is the fold of one event type over the tenants of sub-range Part of a ranges-level
// request, and the number of (tenant, type) pairs it folds. On the wire a compact array,
// [part, type, x0, x1, n, pairs].
type RangeFold struct {
	Part  int
	Type  string
	X0    int64
	X1    int64
	N     int64
	Pairs int64
}

// MarshalJSON writes the compact array form.
func (f RangeFold) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{f.Part, f.Type, f.X0, f.X1, f.N, f.Pairs})
}

// UnmarshalJSON reads the compact array form, refusing anything else.
func (f *RangeFold) UnmarshalJSON(data []byte) error {
	var row []json.RawMessage
	if err := json.Unmarshal(data, &row); err != nil || len(row) != 6 {
		return fmt.Errorf("range fold %s: expected [part, type, x0, x1, n, pairs]", data)
	}
	fields := []any{&f.Part, &f.Type, &f.X0, &f.X1, &f.N, &f.Pairs}
	for i, raw := range row {
		if err := json.Unmarshal(raw, fields[i]); err != nil {
			return fmt.Errorf("range fold field %d: %w", i, err)
		}
	}
	return nil
}

// ManifestAnswer is one chunk of an origin's answer. Every chunk carries the watermark (the
// exclusive end actually covered) and the generation; a non-empty ResumeAfter means the
// stream-level (or tenant-level: a tenant) window is incomplete (ask again after it).
type ManifestAnswer struct {
	RequestID   string           `json:"request_id"`
	Origin      string           `json:"origin"`
	Level       string           `json:"level"`
	From        int64            `json:"from"`
	Watermark   int64            `json:"watermark"`
	Generation  int64            `json:"generation"`
	Chunk       int              `json:"chunk"`
	Chunks      int              `json:"chunks"`
	Digests     []ManifestDigest `json:"digests"`
	ResumeAfter string           `json:"resume_after,omitempty"`
	// Ranges are a ranges-level answer's folds, one per (sub-range, type) holding anything.
	Ranges []RangeFold `json:"ranges,omitempty"`
	// Closes are the origin's close-the-books floors (type-level answers, first chunk): history
	// below them is gone on purpose, and the consumer applies them to its copies before comparing.
	Closes []StreamClose `json:"closes,omitempty"`
	// Changes are the origin's announced history changes above the request's ChangesAfter, of the
	// requester's granted types (type-level answers, first chunk): events removed or reclassified
	// on purpose, which the consumer applies to its copies before comparing. ChangesThrough is the
	// requester's next cursor (the highest change the origin scanned, listed or not);
	// ChangesMore says more remain above it.
	Changes        []HistoryChange `json:"changes,omitempty"`
	ChangesThrough int64           `json:"changes_through,omitempty"`
	ChangesMore    bool            `json:"changes_more,omitempty"`
}

// HistoryChange is one announced change of an origin's sealed history: the event EventID was
// removed ("removed") or now carries Flags ("reclassified").
type HistoryChange struct {
	ChangeID int64  `json:"change_id"`
	Kind     string `json:"kind"`
	EventID  string `json:"event_id"`
	Flags    int    `json:"flags"`
}

// StreamClose is one stream's close floor: versions below BelowVersion are closed.
type StreamClose struct {
	Tenant       string `json:"tenant"`
	StreamID     string `json:"stream_id"`
	BelowVersion int64  `json:"below_version"`
}
