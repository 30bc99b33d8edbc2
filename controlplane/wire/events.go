package wire

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/streamseal/streamseal/controlplane/store"
)

// Event message headers. Text values are URL-query-escaped: header values cannot carry CR/LF,
// and tenants or stream ids may. The payload is the message data, untouched.
const (
	hdrEventID    = "Streamseal-Event-Id"
	hdrOrigin     = "Streamseal-Origin"
	hdrOriginSeq  = "Streamseal-Origin-Seq"
	hdrTypeSeq    = "Streamseal-Type-Seq"
	hdrTenant     = "Streamseal-Tenant"
	hdrStream     = "Streamseal-Stream"
	hdrVersion    = "Streamseal-Version"
	hdrType       = "Streamseal-Type"
	hdrFlags      = "Streamseal-Flags"
	hdrOccurredAt = "Streamseal-Occurred-At"
	hdrMetadata   = "Streamseal-Metadata"
)

// EventMessage builds the JetStream message for one stamped own event. Its Nats-Msg-Id is
// origin:origin_seq, so a relay re-publishing after a crash is deduplicated by JetStream.
func EventMessage(e store.EventCopy) *nats.Msg {
	m := nats.NewMsg(EventSubject(e.Origin, e.EventType))
	m.Data = e.Payload
	h := m.Header
	h.Set(nats.MsgIdHdr, e.Origin+":"+strconv.FormatInt(e.OriginSeq, 10))
	h.Set(hdrEventID, e.EventID.String())
	h.Set(hdrOrigin, e.Origin)
	h.Set(hdrOriginSeq, strconv.FormatInt(e.OriginSeq, 10))
	h.Set(hdrTypeSeq, strconv.FormatInt(e.TypeSeq, 10))
	h.Set(hdrTenant, url.QueryEscape(e.Tenant))
	h.Set(hdrStream, url.QueryEscape(e.StreamID))
	h.Set(hdrVersion, strconv.FormatInt(e.StreamVersion, 10))
	h.Set(hdrType, url.QueryEscape(e.EventType))
	h.Set(hdrFlags, strconv.FormatInt(int64(e.Flags), 10))
	h.Set(hdrOccurredAt, e.OccurredAt.UTC().Format(time.RFC3339Nano))
	if e.Metadata != nil {
		h.Set(hdrMetadata, url.QueryEscape(string(e.Metadata)))
	}
	return m
}

// DecodeEvent reads an event message back into a copy with its identity; a message missing any
// identity header, or carrying an unparsable one, is refused with the reason.
func DecodeEvent(header nats.Header, data []byte) (store.EventCopy, error) {
	var e store.EventCopy
	var err error
	text := func(key string) string {
		if err != nil {
			return ""
		}
		raw := header.Get(key)
		if raw == "" && key != hdrTenant {
			err = fmt.Errorf("event header %s is missing", key)
			return ""
		}
		v, unescapeErr := url.QueryUnescape(raw)
		if unescapeErr != nil {
			err = fmt.Errorf("event header %s: %w", key, unescapeErr)
		}
		return v
	}
	number := func(key string) int64 {
		s := text(key)
		if err != nil {
			return 0
		}
		n, parseErr := strconv.ParseInt(s, 10, 64)
		if parseErr != nil {
			err = fmt.Errorf("event header %s: %w", key, parseErr)
		}
		return n
	}
	if e.EventID, err = uuid.Parse(header.Get(hdrEventID)); err != nil {
		return store.EventCopy{}, fmt.Errorf("event header %s: %w", hdrEventID, err)
	}
	e.Origin = text(hdrOrigin)
	e.OriginSeq = number(hdrOriginSeq)
	e.TypeSeq = number(hdrTypeSeq)
	e.Tenant = text(hdrTenant)
	e.StreamID = text(hdrStream)
	e.StreamVersion = number(hdrVersion)
	e.EventType = text(hdrType)
	e.Flags = store.Flags(number(hdrFlags))
	occurred := text(hdrOccurredAt)
	if err != nil {
		return store.EventCopy{}, err
	}
	if e.OccurredAt, err = time.Parse(time.RFC3339Nano, occurred); err != nil {
		return store.EventCopy{}, fmt.Errorf("event header %s: %w", hdrOccurredAt, err)
	}
	if raw := header.Get(hdrMetadata); raw != "" {
		md, unescapeErr := url.QueryUnescape(raw)
		if unescapeErr != nil {
			return store.EventCopy{}, fmt.Errorf("event header %s: %w", hdrMetadata, unescapeErr)
		}
		e.Metadata = []byte(md)
	}
	e.Payload = data
	if e.Payload == nil {
		e.Payload = []byte{}
	}
	return e, nil
}
