package main

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/backfill"
	"github.com/streamseal/streamseal/controlplane/config"
)

// backfillOpts are backfill's options: which consumed types, and where this service is.
type backfillOpts struct{ config.Options }

func (o *backfillOpts) options() *config.Options { return &o.Options }

func (o *backfillOpts) Validate() error { return o.ValidateFor(config.CommandBackfill) }

// backfillCmd asks every origin for the history of consumed types (state-only) and shows each
// origin's progress until the types are complete.
type backfillCmd struct{ commandBase }

func (c *backfillCmd) Run(ctx context.Context, o *backfillOpts) error {
	if err := c.openDatabase(ctx, o.DatabaseURL); err != nil {
		return err
	}
	if err := c.readService(ctx); err != nil {
		return err
	}
	if err := c.connectNATS(o.NATSURL, c.Service, &o.Options); err != nil {
		return err
	}
	js, err := jetstream.New(c.NC)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	op := &backfill.Operator{Pool: c.Pool, JS: js, Service: c.Service, Out: c.Out}
	return op.Run(ctx, o.Types)
}
