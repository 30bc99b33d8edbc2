package main

import (
	"context"
	"fmt"

	"github.com/streamseal/streamseal/controlplane/config"
	"github.com/streamseal/streamseal/controlplane/natsauth"
)

// natsConfigOpts are nats-config's options: the topology file and where seeds go.
type natsConfigOpts struct{ config.Options }

func (o *natsConfigOpts) options() *config.Options { return &o.Options }

func (o *natsConfigOpts) Validate() error { return o.ValidateFor(config.CommandNATSConfig) }

// natsConfigCmd prints the nats-server authorization block for a topology (package natsauth).
type natsConfigCmd struct{ commandBase }

func (c *natsConfigCmd) Run(_ context.Context, o *natsConfigOpts) error {
	topo, err := natsauth.LoadTopology(o.Topology)
	if err != nil {
		return fmt.Errorf("--topology: %w", err)
	}
	credential := natsauth.PasswordCredential
	if o.SeedDir != "" {
		keys, err := natsauth.Seeds(o.SeedDir, topo.Names())
		if err != nil {
			return fmt.Errorf("--out %s: %w", o.SeedDir, err)
		}
		credential = func(name string) string { return natsauth.NkeyCredential(keys[name]) }
	}
	_, err = fmt.Fprint(c.Out, topo.ServerConfig(credential))
	return err
}

// natsConfigAbout is nats-config's -h beyond its summary.
const natsConfigAbout = `The topology file (JSON):

  {"services": [
    {"name": "orders"},
    {"name": "billing", "consumes": [{"origin": "*", "types": ["order.placed"], "all_tenants": true}]}
  ]}

Each service may publish only its own events (streamseal.evt.<self>.>) and control messages
naming itself as sender (streamseal.ctl.*.<self>), use only its own JetStream durables, each
pinned to one filter it consumes, and subscribe only to its reply prefix and its directed control
subjects. Include the printed block in nats-server.conf. With --out, each service connects with
--nats-nkey-seed <out>/<service>.nk; without it, with --nats-user <service> and the password
nats-server reads from STREAMSEAL_NATS_PASSWORD_<SERVICE>. The _admin user may do anything:
keep its seed or password for operators.
`
