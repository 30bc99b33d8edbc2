package redelivery

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/streamseal/streamseal/controlplane/wire"
)

// decodeBody strictly decodes env's body into v.
func decodeBody(env wire.Envelope, v any) error {
	dec := json.NewDecoder(bytes.NewReader(env.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s body from %s is malformed: %w", env.Kind, env.From, err)
	}
	return nil
}
