package main

import (
	"context"
	"fmt"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/status"
)

// quarantineOpts are quarantine's options: --database-url, --json, --requeue, --event-ids.
type quarantineOpts struct{ config.Options }

func (o *quarantineOpts) options() *config.Options { return &o.Options }

func (o *quarantineOpts) Validate() error {
	err := o.ValidateFor(config.CommandQuarantine)
	if err == nil && len(o.EventIDs) > 0 && !o.Requeue {
		err = fmt.Errorf("--event-ids names events to re-queue: it needs --requeue")
	}
	return err
}

// quarantineCmd lists this service's quarantined own events or re-queues them.
type quarantineCmd struct{ commandBase }

func (c *quarantineCmd) Run(ctx context.Context, o *quarantineOpts) error {
	if err := c.openDatabase(ctx, o.DatabaseURL); err != nil {
		return err
	}
	if o.Requeue {
		ids, err := status.Requeue(ctx, c.Pool, o.EventIDs)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.Out, "quarantine: %d events re-queued; the running relay publishes them next\n", len(ids))
		return nil
	}
	events, err := status.ReadQuarantine(ctx, c.Pool)
	if err != nil {
		return err
	}
	return status.PrintQuarantine(c.Out, events, o.JSON)
}
