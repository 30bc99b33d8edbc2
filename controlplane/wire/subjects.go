package wire

import (
	"fmt"
	"strings"
)

// Subjects. Events ride one JetStream stream; control messages another.
const (
	EventsStream   = "STREAMSEAL_EVENTS"
	ControlStream  = "STREAMSEAL_CONTROL"
	eventsPrefix   = "streamseal.evt."
	controlPrefix  = "streamseal.ctl."
	BroadcastInbox = "_all"
)

// TypeToken turns an event type into one NATS subject token: letters, digits, '-' and '_' stay;
// every other byte (dots, spaces, wildcards, '~' itself) becomes ~XX. Injective, so two types
// never share a subject.
func TypeToken(eventType string) string {
	var b strings.Builder
	for i := 0; i < len(eventType); i++ {
		c := eventType[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "~%02X", c)
	}
	return b.String()
}
