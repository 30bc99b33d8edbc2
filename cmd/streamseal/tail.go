package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/feedhttp"
	"github.com/streamseal/streamseal/feed"
)

// tailOpts are tail's options: --database-url, --types, --tenant, --resume.
type tailOpts struct{ config.Options }

func (o *tailOpts) options() *config.Options { return &o.Options }

func (o *tailOpts) Validate() error { return o.ValidateFor(config.CommandTail) }

// tailCmd prints the application feed as JSON lines until interrupted; the last line of each
// batch carries the token to --resume from.
type tailCmd struct{ commandBase }

func (c *tailCmd) Run(ctx context.Context, o *tailOpts) error {
	if err := c.openDatabase(ctx, o.DatabaseURL); err != nil {
		return err
	}
	err := feed.Subscribe(ctx, c.Pool, feed.Options{Types: o.Types, Tenants: o.Tenants, Resume: o.Resume},
		func(_ context.Context, _ pgx.Tx, b feed.Batch) error {
			for i, e := range b.Events {
				token := ""
				if i == len(b.Events)-1 {
					token = b.Token
				}
				line, err := feedhttp.JSON(e, token)
				if err != nil {
					return err
				}
				if _, err := fmt.Fprintf(c.Out, "%s\n", line); err != nil {
					return err
				}
			}
			return nil
		})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	if errors.Is(err, feed.ErrBadRequest) || errors.Is(err, feed.ErrConflict) || errors.Is(err, feed.ErrGone) {
		return fmt.Errorf("--resume: %w", err)
	}
	return err
}
