// Package wire owns everything that crosses NATS: the versioned JSON envelope of control
// messages, the subjects, the event message headers, the receive seam that drops what a service
// must not act on, and the embedded server. It holds no integrity rule: those live in SQL.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Version is the envelope version this binary speaks. A message with another "v" is dropped.
const Version = 1

// Kinds of control message.
const (
	KindRedeliveryRequest = "redelivery_request"
	KindRedeliveryBundle  = "redelivery_bundle"
	KindRedeliverySummary = "redelivery_summary"
)

var knownKinds = map[string]bool{
	KindRedeliveryRequest: true,
	KindRedeliveryBundle:  true,
	KindRedeliverySummary: true,
}

// DefaultMaxMessageBytes bounds what the seam accepts (NATS' own default max_payload is 1 MiB).
const DefaultMaxMessageBytes = 1 << 20

// Envelope is a control message. To empty means broadcast. Body is the kind's JSON body.
// A message may carry an attachment: raw bytes after the JSON envelope and one newline
// (redelivery bundles carry their events' payloads there, byte for byte, never re-encoded).
type Envelope struct {
	V      int             `json:"v"`
	Kind   string          `json:"kind"`
	ID     string          `json:"id"`
	From   string          `json:"from"`
	To     string          `json:"to,omitempty"`
	SentAt time.Time       `json:"sent_at"`
	Body   json.RawMessage `json:"body"`
}

// Errors Decode returns; the seam counts drops by them.
var (
	ErrMalformed      = errors.New("malformed envelope")
	ErrUnknownVersion = errors.New("unknown envelope version")
	ErrUnknownKind    = errors.New("unknown message kind")
	ErrOversized      = errors.New("message too large")
)

// Encode renders env (with its attachment, if any) as message data.
func Encode(env Envelope, attachment []byte) ([]byte, error) {
	head, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encode %s envelope: %w", env.Kind, err)
	}
	if attachment == nil {
		return head, nil
	}
	out := make([]byte, 0, len(head)+1+len(attachment))
	out = append(out, head...)
	out = append(out, '\n')
	return append(out, attachment...), nil
}

// Decode parses message data into an envelope and its attachment, refusing anything that is not
// a complete, known, current-version envelope within maxBytes. It never panics on any input.
func Decode(data []byte, maxBytes int) (Envelope, []byte, error) {
	if maxBytes > 0 && len(data) > maxBytes {
		return Envelope{}, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrOversized, len(data), maxBytes)
	}
	head, attachment := data, []byte(nil)
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		head, attachment = data[:i], data[i+1:]
	}
	var env Envelope
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return Envelope{}, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return Envelope{}, nil, fmt.Errorf("%w: trailing data after the envelope", ErrMalformed)
	}
	if env.V != Version {
		return Envelope{}, nil, fmt.Errorf("%w: %d (this binary speaks %d)", ErrUnknownVersion, env.V, Version)
	}
	if !knownKinds[env.Kind] {
		return Envelope{}, nil, fmt.Errorf("%w: %q", ErrUnknownKind, env.Kind)
	}
	if env.ID == "" || !ValidServiceName(env.From) || (env.To != "" && !ValidServiceName(env.To)) {
		return Envelope{}, nil, fmt.Errorf("%w: id, from and to must be set and name services", ErrMalformed)
	}
	if len(env.Body) == 0 || env.Body[0] != '{' {
		return Envelope{}, nil, fmt.Errorf("%w: body must be a JSON object", ErrMalformed)
	}
	return env, attachment, nil
}

// ValidServiceName reports whether s is a service name: [a-z][a-z0-9-]{0,62}.
func ValidServiceName(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
