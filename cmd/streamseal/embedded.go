package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/controlplane/wire"
)

// startEmbeddedNATS starts run's embedded NATS server with authorization on: an admin user that
// creates the streams (and nothing else here uses), and one user for service with the
// permissions natsauth generates for what it consumes (its subscriptions, plus --consumes, from
// the origins they name, every tenant). Both passwords are random, live only in this process and
// are never logged. It returns the server's URL and the service's credentials.
func (c *runCmd) startEmbeddedNATS(ctx context.Context, o *runOpts, service string) (string, wire.Security, error) {
	consumes := map[string][]string{} // origin ("*": any) -> types
	subs, err := store.Subscriptions(ctx, c.Pool)
	if err != nil {
		return "", wire.Security{}, err
	}
	for _, s := range subs {
		consumes[s.Origin] = append(consumes[s.Origin], s.EventType)
	}
	for _, t := range o.Consumes {
		if !slices.Contains(consumes[natsauth.AnyOrigin], t) {
			consumes[natsauth.AnyOrigin] = append(consumes[natsauth.AnyOrigin], t)
		}
	}
	svc := natsauth.Service{Name: service}
	for origin, types := range consumes {
		svc.Consumes = append(svc.Consumes, natsauth.Consumption{Origin: origin, Types: types, AllTenants: true})
	}
	slices.SortFunc(svc.Consumes, func(a, b natsauth.Consumption) int {
		if a.Origin < b.Origin {
			return -1
		}
		if a.Origin > b.Origin {
			return 1
		}
		return 0
	})
	topo := natsauth.Topology{Services: []natsauth.Service{svc}}
	if err := topo.Validate(); err != nil {
		return "", wire.Security{}, fmt.Errorf("embedded NATS users: %w", err)
	}
	passwords := map[string]string{}
	for _, name := range topo.Names() {
		if passwords[name], err = randomPassword(); err != nil {
			return "", wire.Security{}, err
		}
	}
	embedded, err := wire.StartEmbeddedSecured(o.NATSDataDir, server.RANDOM_PORT, wire.EmbeddedAuth{Users: topo.Users(natsauth.AdminUser, passwords)})
	if err != nil {
		return "", wire.Security{}, err
	}
	c.onClose(embedded.Shutdown)
	admin, err := wire.Connect(embedded.URL(), "admin", wire.Security{User: natsauth.AdminUser, Password: passwords[natsauth.AdminUser]}, c.Logger)
	if err != nil {
		return "", wire.Security{}, fmt.Errorf("embedded NATS admin: %w", err)
	}
	defer admin.Close()
	js, err := jetstream.New(admin)
	if err != nil {
		return "", wire.Security{}, err
	}
	if err := wire.EnsureStreams(ctx, js, o.EventRetention); err != nil {
		return "", wire.Security{}, err
	}
	return embedded.URL(), wire.Security{User: service, Password: passwords[service]}, nil
}

// randomPassword is 128 random bits, hex.
func randomPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
