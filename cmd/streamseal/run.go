package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/feedhttp"
	"github.com/streamseal/streamseal/controlplane/inbox"
	"github.com/streamseal/streamseal/controlplane/node"
	"github.com/streamseal/streamseal/controlplane/redact"
	"github.com/streamseal/streamseal/controlplane/store"
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
	natsURL := o.NATSURL
	if natsURL == "" {
		natsURL = "embedded"
	}
	c.Logger.Info("streamseal run: starting", "database", redact.String(o.DatabaseURL), "nats", redact.String(natsURL),
		"start_timeout", o.StartTimeout)

	// Reach both dependencies first, retrying what is unreachable for up to --start-timeout, and
	// write nothing (service name, subscriptions, grants) until both answer (invariant 13).
	startCtx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	if err := c.startWith(startCtx, o, "database", func() error { return c.openPool(startCtx, o.DatabaseURL) }, retryableDatabaseError); err != nil {
		return err
	}
	if err := store.SchemaMigrated(ctx, c.Pool); err != nil {
		return err
	}
	service := o.Service
	if service == "" {
		if err := c.readService(ctx); err != nil {
			return fmt.Errorf("%w (pass --service)", err)
		}
		service = c.Service
	}
	url := o.NATSURL
	if url == "" {
		embeddedURL, sec, err := c.startEmbeddedNATS(ctx, o, service)
		if err != nil {
			return err
		}
		url, o.NATS = embeddedURL, sec
		c.Logger.Info("streamseal run: embedded NATS started, authorization on", "url", url, "data_dir", o.NATSDataDir, "user", service)
	}
	if err := c.startWith(startCtx, o, "NATS", func() error { return c.connectNATS(url, service, &o.Options) }, retryableNATSError); err != nil {
		return err
	}
	// Bind the metrics address before anything is written or started: one that cannot be bound is
	// a start-up error, not a control plane running without /metrics and /readyz.
	var metricsListener net.Listener
	if o.MetricsAddr != "" {
		ln, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr %s: %w", o.MetricsAddr, err)
		}
		metricsListener = ln
		c.onClose(func() { ln.Close() })
	}
	var feedListener net.Listener
	if o.FeedAddr != "" {
		ln, err := net.Listen("tcp", o.FeedAddr)
		if err != nil {
			return fmt.Errorf("--feed-addr %s: %w", o.FeedAddr, err)
		}
		feedListener = ln
		c.onClose(func() { ln.Close() })
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
		if err := store.SubscriptionsAdd(ctx, c.Pool, "", o.Consumes, store.AllTenants()); err != nil {
			return fmt.Errorf("--consumes: %w", err)
		}
	}
	for _, g := range o.Grants {
		scope, flag := store.Tenants(g.Tenants...), "--grant"
		if g.AllTenants {
			scope, flag = store.AllTenants(), "--grant-all-tenants"
		}
		if err := store.GrantsAdd(ctx, c.Pool, g.Service, g.Types, scope); err != nil {
			return fmt.Errorf("%s %s: %w", flag, g.Service, err)
		}
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
	if metricsListener != nil {
		srv := &http.Server{Handler: n.Metrics.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(metricsListener); err != nil && !errors.Is(err, http.ErrServerClosed) {
				c.Logger.Error("streamseal run: metrics server failed", "addr", o.MetricsAddr, "err", err)
			}
		}()
		defer srv.Close()
		c.Logger.Info("streamseal run: serving /metrics, /healthz, /readyz", "addr", o.MetricsAddr)
	}
	if feedListener != nil {
		feedSrv := &feedhttp.Server{Pool: c.Pool, Metrics: feedhttp.NewMetrics(n.Metrics.Registry), Logger: c.Logger}
		srv := &http.Server{Handler: feedSrv.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(feedListener); err != nil && !errors.Is(err, http.ErrServerClosed) {
				c.Logger.Error("streamseal run: feed server failed", "addr", o.FeedAddr, "err", err)
			}
		}()
		defer srv.Close()
		c.Logger.Info("streamseal run: serving the feed (SSE) on /feed", "addr", o.FeedAddr)
	}
	c.Logger.Info("streamseal run: control plane started", "service", c.Service, "nats", redact.String(url))
	n.Wait()
	return n.Err()
}

// Start-up backoff: the first retry waits startBackoffFirst, each next one twice as long, at most
// startBackoffMax, until --start-timeout passes.
const (
	startBackoffFirst = 250 * time.Millisecond
	startBackoffMax   = 5 * time.Second
)

// startWith runs connect until it succeeds, fails for a reason a retry cannot fix (retryable
// says), or ctx ends (--start-timeout), backing off between attempts and logging each failure.
func (c *runCmd) startWith(ctx context.Context, o *runOpts, what string, connect func() error, retryable func(error) bool) error {
	wait := startBackoffFirst
	for {
		err := connect()
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return err
		}
		c.Logger.Warn("streamseal run: waiting for "+what, "err", redact.String(err.Error()), "retry_in", wait)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s unreachable for --start-timeout %s: %w", what, o.StartTimeout, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, startBackoffMax)
	}
}

// retryableDatabaseError: no server answered (refused, timed out, unreachable). A server that
// answered with an error (a wrong password, a missing database) is not retried.
func retryableDatabaseError(err error) bool {
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr)
}

// retryableNATSError: no server answered, or it timed out; an authorization or TLS failure is final.
func retryableNATSError(err error) bool {
	var refused *natsRefusedError
	if errors.As(err, &refused) {
		return false
	}
	return !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization")
}
