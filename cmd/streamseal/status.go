package main

import (
	"context"

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
	origins, err := status.Read(ctx, c.Pool)
	if err != nil {
		return err
	}
	return status.Print(c.Out, origins, o.JSON)
}
