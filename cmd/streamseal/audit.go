package main

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/projections"
	"github.com/streamseal/streamseal/controlplane/store"
)

// auditOpts are audit's options: scope (--origin, --full), where this service is, and the
// control plane's settings, so one audit runs as `run` would run it.
type auditOpts struct{ config.Options }

func (o *auditOpts) options() *config.Options { return &o.Options }

func (o *auditOpts) Validate() error { return o.ValidateFor(config.CommandAudit) }

// auditCmd runs one deep audit now (or, with --local, one coverage audit), beside any running control plane, and prints the findings.
type auditCmd struct{ commandBase }

func (c *auditCmd) Run(ctx context.Context, o *auditOpts) error {
	if err := c.openDatabase(ctx, o.DatabaseURL); err != nil {
		return err
	}
	if err := c.readService(ctx); err != nil {
		return err
	}
	if o.Local {
		res, err := projections.Audit(ctx, c.Pool, o.Config, nil, c.Logger)
		if err != nil {
			return err
		}
		findings, err := store.CoverageFindings(ctx, c.Pool, o.Config.MaxCoverageGapReportsPerAudit)
		if err != nil {
			return err
		}
		projections.WriteCoverage(c.Out, res, findings, o.Config.RepairMode)
		return nil
	}
	if err := c.connectNATS(o.NATSURL, c.Service, &o.Options); err != nil {
		return err
	}
	js, err := jetstream.New(c.NC)
	if err != nil {
		return err
	}
	settings := o.Config
	auditor := &audit.Auditor{Pool: c.Pool, JS: js, Service: c.Service, Config: settings, Logger: c.Logger,
		Limits: audit.Limits{MaxDrillDownTypes: settings.MaxDrillDownTypesPerAudit, MaxDigests: settings.MaxDigestsPerManifest,
			MaxRequests: settings.MaxAutoRepairRequestsPerAudit}}
	report, end := audit.ProgressLines(c.Out, c.Terminal)
	auditor.OnProgress = report
	findings, err := auditor.RunBeside(ctx, c.NC, audit.Scope{Origin: o.Origin, Full: o.Full})
	end()
	if err == nil || len(findings) > 0 {
		audit.WriteFindings(c.Out, findings, settings.RepairMode)
	}
	return err
}
