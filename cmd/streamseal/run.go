package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"time"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/inbox"
	"github.com/streamseal/streamseal/controlplane/node"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// runOpts are run's options: the service, its database and NATS, what it consumes and grants,
// its metrics address, and the control plane's settings; in a build tagged chaos, the faults to
// inject too.
type runOpts struct {
	config.Options
	faults func() inbox.Suppress // set by runFaults' flags; nil in the product build
}

// runFaults is nil in the product build, so run has no fault flag and refuses one as unknown. A
// build tagged chaos (fault_chaos.go, for the fault suite in internal/chaos) sets it: it adds
// run's fault-injection flags to fs and returns what selects the inbox Suppress hook they ask for
// (nil: no fault).
var runFaults func(fs *flag.FlagSet) func() inbox.Suppress

func (o *runOpts) registerExtraFlags(fs *flag.FlagSet) {
	if runFaults != nil {
		o.faults = runFaults(fs)
	}
}

func (o *runOpts) options() *config.Options { return &o.Options }

func (o *runOpts) Validate() error { return o.ValidateFor(config.CommandRun) }

// runCmd runs the control plane of one service until ctx ends or it fails.
type runCmd struct{ commandBase }

func (c *runCmd) Run(ctx context.Context, o *runOpts) error {
	if err := c.openDatabase(ctx, o.DatabaseURL); err != nil {
		return err
	}
	if o.Service != "" {
		if err := store.ServiceNameSet(ctx, c.Pool, o.Service); err != nil {
			return err
		}
	}
	if err := c.readService(ctx); err != nil {
		return fmt.Errorf("%w (pass --service)", err)
	}
	if len(o.Consumes) > 0 {
		if err := store.SubscriptionsAdd(ctx, c.Pool, o.Consumes); err != nil {
			return fmt.Errorf("--consumes: %w", err)
		}
	}
	for grantee, types := range o.Grants {
		if err := store.GrantsAdd(ctx, c.Pool, grantee, types); err != nil {
			return fmt.Errorf("--grant %s: %w", grantee, err)
		}
	}
	url := o.NATSURL
	if url == "" {
		embedded, err := wire.StartEmbedded(o.NATSDataDir)
		if err != nil {
			return err
		}
		c.onClose(embedded.Shutdown)
		url = embedded.URL()
		c.Logger.Info("streamseal run: embedded NATS started", "url", url, "data_dir", o.NATSDataDir)
	}
	if err := c.connectNATS(url, c.Service); err != nil {
		return err
	}
	var suppress inbox.Suppress
	if o.faults != nil {
		if suppress = o.faults(); suppress != nil {
			c.Logger.Warn("streamseal run: FAULT INJECTION at the inbox's receive seam (a chaos build)")
		}
	}
	n, err := node.New(node.Config{Service: c.Service, Pool: c.Pool, NC: c.NC, Settings: o.Config, Suppress: suppress})
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		return err
	}
	if o.MetricsAddr != "" {
		srv := &http.Server{Addr: o.MetricsAddr, Handler: n.Metrics.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				c.Logger.Error("streamseal run: metrics server failed", "addr", o.MetricsAddr, "err", err)
			}
		}()
		defer srv.Close()
		c.Logger.Info("streamseal run: serving /metrics, /healthz, /readyz", "addr", o.MetricsAddr)
	}
	c.Logger.Info("streamseal run: control plane started", "service", c.Service, "nats", url)
	n.Wait()
	return n.Err()
}
