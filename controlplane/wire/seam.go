package wire

import (
	"context"
	"errors"
	"log/slog"
	"sync"
)

// Drop reasons the seam counts.
const (
	DropOversized      = "oversized"
	DropMalformed      = "malformed"
	DropUnknownVersion = "unknown_version"
	DropUnknownKind    = "unknown_kind"
	DropForeignTarget  = "foreign_target"
	DropOwnMessage     = "own_message"
)

// Seam is a service's receive boundary for control messages: everything a service must not act
// on stops here, before any handler runs, with a log line and a counter, and never a panic.
type Seam struct {
	Self     string // this service; directed messages for anyone else are dropped
	MaxBytes int    // 0: DefaultMaxMessageBytes
	Logger   *slog.Logger

	mu      sync.Mutex
	dropped map[string]int64
}

// Accept decodes data and reports whether this service should act on it.
func (s *Seam) Accept(subject string, data []byte) (Envelope, []byte, bool) {
	maxBytes := s.MaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultMaxMessageBytes
	}
	env, attachment, err := Decode(data, maxBytes)
	if err != nil {
		s.drop(reasonOf(err), subject, err.Error(), Envelope{})
		return Envelope{}, nil, false
	}
	switch {
	case env.To != "" && env.To != s.Self:
		s.drop(DropForeignTarget, subject, "addressed to "+env.To, env)
		return Envelope{}, nil, false
	case env.From == s.Self:
		// A service ignores its own broadcasts (and anything that loops back to it).
		s.drop(DropOwnMessage, subject, "sent by this service", env)
		return Envelope{}, nil, false
	}
	return env, attachment, true
}

// Dropped returns how many messages the seam dropped, by reason.
func (s *Seam) Dropped() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.dropped))
	for k, v := range s.dropped {
		out[k] = v
	}
	return out
}

func (s *Seam) drop(reason, subject, detail string, env Envelope) {
	s.mu.Lock()
	if s.dropped == nil {
		s.dropped = map[string]int64{}
	}
	s.dropped[reason]++
	s.mu.Unlock()
	logger := s.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// Own broadcasts are routine, not news.
	level := slog.LevelWarn
	if reason == DropOwnMessage {
		level = slog.LevelDebug
	}
	logger.Log(context.Background(), level, "wire: dropped message at the receive seam", "reason", reason, "subject", subject,
		"kind", env.Kind, "from", env.From, "to", env.To, "detail", detail)
}

func reasonOf(err error) string {
	switch {
	case errors.Is(err, ErrOversized):
		return DropOversized
	case errors.Is(err, ErrUnknownVersion):
		return DropUnknownVersion
	case errors.Is(err, ErrUnknownKind):
		return DropUnknownKind
	}
	return DropMalformed
}
