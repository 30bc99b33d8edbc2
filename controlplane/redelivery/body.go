package redelivery

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/streamseal/streamseal/controlplane/wire"
)

// decodeBody strictly decodes env's body into v, naming the message when it is malformed.
func decodeBody(env wire.Envelope, v any) error {
	if err := strictJSON(env.Body, v); err != nil {
		return fmt.Errorf("%s body from %s is malformed: %w", env.Kind, env.From, err)
	}
	return nil
}

// strictJSON decodes body into v, refusing fields v does not have: the serve and receive sides
// of the exchange read every body the same way (one decoder, since the two packages merged).
func strictJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
