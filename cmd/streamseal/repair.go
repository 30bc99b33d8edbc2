package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/redelivery"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// repairOpts are repair's options: what to ask which origin for, and where this service is.
type repairOpts struct{ config.Options }

func (o *repairOpts) options() *config.Options { return &o.Options }

// Validate checks each option, then the window: [from, to) must not be empty.
func (o *repairOpts) Validate() error {
	errs := []error{o.ValidateFor(config.CommandRepair)}
	if o.To > 0 && o.To <= o.From {
		errs = append(errs, fmt.Errorf("--to %d is not above --from %d: the window [from, to) would be empty", o.To, o.From))
	}
	return errors.Join(errs...)
}

// repairCmd asks an origin to re-deliver events and shows progress until they are stored.
type repairCmd struct{ commandBase }

func (c *repairCmd) Run(ctx context.Context, o *repairOpts) error {
	if err := c.openDatabase(ctx, o.DatabaseURL); err != nil {
		return err
	}
	if err := c.readService(ctx); err != nil {
		return err
	}
	if err := c.connectNATS(o.NATSURL, c.Service, &o.Options); err != nil {
		return err
	}
	req := wire.RedeliveryRequest{RequestID: uuid.NewString(), Tenants: o.Tenants, Types: o.Types,
		MaxEvents: o.MaxEvents, StateOnly: o.StateOnly}
	if o.From > 0 {
		req.FromSeq = &o.From
	}
	if o.To > 0 {
		req.ToSeq = &o.To
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	op := &redelivery.Operator{Pool: c.Pool, NC: c.NC, Service: c.Service, Out: c.Out, Terminal: c.Terminal}
	_, err := op.Run(ctx, o.Origin, req)
	return err
}
