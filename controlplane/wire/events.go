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
	m := nats.NewMsg(LiveSubject(e.Origin, e.Tenant, e.EventType))
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

// eventHeaderFixedBytes bounds the headers of an event message other than the escaped tenant,
// stream id, type and metadata: header names, the NATS/1.0 preamble, the message id (origin and
// sequence), uuid, sequences, version, flags and timestamp (~450 bytes, measured; rounded up).
const eventHeaderFixedBytes = 1024

// EventOverheadBytes bounds what an event message carries beside its payload, given the limits
// the door enforces: headers whose tenant, stream id, type (and the subject's tenant and type
// tokens) may triple in size when escaped, metadata likewise. The broker's max_payload counts headers and
// payload together, so a payload limit above max_payload minus this could be stored and never
// published.
func EventOverheadBytes(maxIDBytes, maxMetadataBytes int) int {
	return eventHeaderFixedBytes + 3*(5*maxIDBytes+maxMetadataBytes)
}

// CheckPayloadLimit refuses a payload limit the broker (its max_payload) could not carry once the
// envelope is added.
func CheckPayloadLimit(maxPayloadBytes, maxIDBytes, maxMetadataBytes int, brokerMaxPayload int64) error {
	overhead := EventOverheadBytes(maxIDBytes, maxMetadataBytes)
	if int64(maxPayloadBytes+overhead) > brokerMaxPayload {
		return fmt.Errorf("streamseal.limits max_payload_bytes %d plus the event envelope (up to %d bytes with max_id_bytes %d and max_metadata_bytes %d) exceeds the NATS server's max_payload %d: lower it to at most %d (the SQL function streamseal.set_limits) or raise max_payload",
			maxPayloadBytes, overhead, maxIDBytes, maxMetadataBytes, brokerMaxPayload, brokerMaxPayload-int64(overhead))
	}
	return nil
}
