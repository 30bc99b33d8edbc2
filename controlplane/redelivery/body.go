package redelivery

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamseal/streamseal/controlplane/store"
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

// classify maps a SQL refusal (22023) onto store.ErrInvalidInput.
func classify(err error) error {
	if pgErr, ok := err.(*pgconn.PgError); ok && pgErr.Code == "22023" {
		return fmt.Errorf("%w: %s", store.ErrInvalidInput, pgErr.Message)
	}
	return err
}
