package main

import (
	"context"
	"fmt"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/migrate"
)

// migrateOpts are migrate's options: --database-url.
type migrateOpts struct{ config.Options }

func (o *migrateOpts) options() *config.Options { return &o.Options }

func (o *migrateOpts) Validate() error { return o.ValidateFor(config.CommandMigrate) }

// migrateCmd applies the migrations and re-installs the SQL functions. It opens a connection of
// its own: the base's pool needs the row types that migrating creates.
type migrateCmd struct{ commandBase }

func (c *migrateCmd) Run(ctx context.Context, o *migrateOpts) error {
	r, err := migrate.MigrateURL(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.Out, r)
	return nil
}
