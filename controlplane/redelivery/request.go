// request.go: asking. Every redelivery request a service sends goes through Send: recorded
// (streamseal.sent_requests), then published directed to the origin's control address, so its
// answer can be matched and a truncated answer followed.

package redelivery

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// Send records req as sent by service from source (store.Source*) and publishes it to origin on
// the subject naming both (wire.ControlSubjectFrom(origin, service)): an origin's address is
// computed from its authenticated name, never taken from a message (invariant 12). follows names the request whose
// truncated answer req continues (uuid.Nil for none). A request recorded and then lost on the way
// is what re-asking is for.
func Send(ctx context.Context, db store.Querier, js jetstream.JetStream, service, origin, source string, req wire.RedeliveryRequest, follows uuid.UUID) error {
	id, err := uuid.Parse(req.RequestID)
	if err != nil {
		return fmt.Errorf("redelivery request id %q is not a UUID: %w", req.RequestID, err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if err := store.SentRequestRecord(ctx, db, store.SentRequest{RequestID: id, Origin: origin, Source: source, Request: body, Follows: follows}); err != nil {
		return err
	}
	env, err := wire.NewEnvelope(wire.KindRedeliveryRequest, service, origin, req)
	if err != nil {
		return err
	}
	return wire.Publish(ctx, js, env, nil)
}

// Request sends a redelivery request from service to origin as an operator's (Send, source
// operator) and returns its id, minting one when req has none.
func Request(ctx context.Context, db store.Querier, js jetstream.JetStream, service, origin string, req wire.RedeliveryRequest) (string, error) {
	if req.RequestID == "" {
		req.RequestID = uuid.NewString()
	}
	if err := Send(ctx, db, js, service, origin, store.SourceOperator, req, uuid.Nil); err != nil {
		return "", err
	}
	return req.RequestID, nil
}

// SendBroadcastRecord records req as a backfill's broadcast (sent_requests origin '_all',
// source backfill); PublishBroadcast then publishes it on the broadcast subject
// (wire.ControlSubjectFrom(BroadcastInbox, service)): an expanding consumer cannot know which
// origins emitted the types it now consumes, so every origin runs the selection under its grants
// and answers directed back; any origin may answer it, each once
// (streamseal.check_redelivery_answer). A truncated answer is followed by a request directed to
// the origin that sent it (Receiver), which continues the same backfill.
func SendBroadcastRecord(ctx context.Context, db store.Querier, r store.SentRequest, req wire.RedeliveryRequest) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r.Request = body
	return store.SentRequestRecord(ctx, db, r)
}

// PublishBroadcast publishes a recorded broadcast request from service to every origin.
func PublishBroadcast(ctx context.Context, js jetstream.JetStream, service string, req wire.RedeliveryRequest) error {
	env, err := wire.NewEnvelope(wire.KindRedeliveryRequest, service, "", req)
	if err != nil {
		return err
	}
	return wire.Publish(ctx, js, env, nil)
}
