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
	// DropForgedSender: the envelope claims a sender other than the one its subject names, or
	// the subject names none (invariant 12). The subject is what the broker's permissions bind
	// to the authenticated connection; the envelope's from is only what the sender wrote.
	DropForgedSender = "forged_sender"
)

// Drop reasons of answers and facts refused after the seam (redelivery receiver, manifest
// answers, inbox), counted beside the seam's own (Seam.Count).
const (
	DropUnsolicited = "unsolicited"  // answers no request this service sent (or not to that origin)
	DropReplayed    = "replayed"     // answers a request already answered
	DropOutOfScope  = "out_of_scope" // holds what the request it answers did not ask for
)

// Seam is a service's receive boundary for control messages: everything a service must not act
// on stops here, before any handler runs, with a log line and a counter, and never a panic.
type Seam struct {
	Self string // this service; directed messages for anyone else are dropped
	// Reply is the reply token of the one process this seam guards (an operator's audit
	// listening on ReplyFilter): only reply subjects naming it are accepted, and nothing else.
	// Empty: a service's control endpoint, which refuses every reply subject (it is some other
	// process's private address).
	Reply    string
	MaxBytes int // 0: DefaultMaxMessageBytes
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
	recipient, sender, reply, ok := ControlAddress(subject)
	if !ok || env.From != sender {
		s.drop(DropForgedSender, subject, "the subject names sender "+sender, env)
		return Envelope{}, nil, false
	}
	switch {
	case env.To != "" && env.To != s.Self, recipient != BroadcastInbox && recipient != s.Self,
		(recipient == BroadcastInbox) != (env.To == ""):
		s.drop(DropForeignTarget, subject, "addressed to "+env.To+" on "+recipient+"'s subject", env)
		return Envelope{}, nil, false
	case reply != s.Reply:
		s.drop(DropForeignTarget, subject, "reply token "+reply+" is not this listener's ("+s.Reply+")", env)
		return Envelope{}, nil, false
	case env.From == s.Self:
		// A service ignores its own broadcasts (and anything that loops back to it).
		s.drop(DropOwnMessage, subject, "sent by this service", env)
		return Envelope{}, nil, false
	}
	return env, attachment, true
}

// Count counts (and logs) a message refused after the seam, by a handler that found it answers no
// request of this service, or more than its request asked; it shows in seam_dropped_total.
func (s *Seam) Count(reason string, env Envelope, detail string) {
	s.drop(reason, "", detail, env)
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
