package main

import (
	"context"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/internal/demo"
	"github.com/streamseal/streamseal/internal/scratchdb"
)

// demoOpts are demo's options: --keep, its --metrics-addr, and a server to play on.
type demoOpts struct{ config.Options }

func (o *demoOpts) options() *config.Options { return &o.Options }

func (o *demoOpts) Validate() error { return o.ValidateFor(config.CommandDemo) }

// demoCmd plays the demo on a throwaway cluster, or on --database-url's server.
type demoCmd struct{ commandBase }

func (c *demoCmd) Run(ctx context.Context, o *demoOpts) error {
	server, err := scratchdb.Open(ctx, o.ScratchURL)
	if err != nil {
		return err
	}
	c.onClose(func() { server.Close() })
	return demo.Run(ctx, server, c.Out, demo.Options{Keep: o.Keep, MetricsAddr: o.DemoMetricsAddr, Secured: true})
}
