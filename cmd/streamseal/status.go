package main

import (
	"context"
	"fmt"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/status"
)

// statusOpts are status's options: --database-url, --json.
type statusOpts struct{ config.Options }

func (o *statusOpts) options() *config.Options { return &o.Options }

func (o *statusOpts) Validate() error { return o.ValidateFor(config.CommandStatus) }

// statusCmd prints, per origin, liveness, seal, unhealed buckets and lanes.
type statusCmd struct{ commandBase }

func (c *statusCmd) Run(ctx context.Context, o *statusOpts) error {
	if err := c.openDatabase(ctx, o.DatabaseURL); err != nil {
		return err
	}
	// Per origin, and what this service consumes (baseline, or an expansion pending, requested
	// or complete, with each origin's backfill progress) and whether consumption is complete.
	report, err := status.ReadReport(ctx, c.Pool)
	if err != nil {
		return err
	}
	if err := status.PrintReport(c.Out, report, o.JSON); err != nil || o.JSON {
		return err
	}
	// Own events the relay could not publish are named here too (invariant 13); the quarantine
	// command lists them for machines and re-queues them.
	quarantined, err := status.ReadQuarantine(ctx, c.Pool)
	if err != nil || len(quarantined) == 0 {
		return err
	}
	fmt.Fprintln(c.Out)
	return status.PrintQuarantine(c.Out, quarantined, false)
}
