package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/testrun"
)

// demoTopologyJSON is the demo's bus as a topology file (docker/nats/topology.json holds the same).
const demoTopologyJSON = `{"services": [
  {"name": "orders"},
  {"name": "billing", "consumes": [{"origin": "*", "types": ["order.placed", "order.paid", "order.shipped"], "all_tenants": true}]},
  {"name": "shipping", "consumes": [{"origin": "*", "types": ["order.placed", "order.shipped"], "all_tenants": true}]}
]}`

// Invariant 12: what `streamseal nats-config --out` prints is a configuration nats-server loads,
// whose NKey users are the seeds it wrote (0600, kept on a second run): orders connects with
// --nats-nkey-seed's file through wire.Connect and publishes its own events; publishing as
// billing is a permissions violation.
func TestNATSConfigOutputRunsANATSServer_Invariant12(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	topology := filepath.Join(dir, "topology.json")
	if err := os.WriteFile(topology, []byte(demoTopologyJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	seeds := filepath.Join(dir, "seeds")
	r := streamseal(t, nil, "nats-config", "--topology", topology, "--out", seeds)
	if r.code != 0 {
		t.Fatalf("nats-config: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, name := range []string{"_admin", "orders", "billing", "shipping"} {
		fi, err := os.Stat(filepath.Join(seeds, name+".nk"))
		if err != nil {
			t.Fatalf("seed of %s: %v", name, err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("seed of %s has mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
	if again := streamseal(t, nil, "nats-config", "--topology", topology, "--out", seeds); again.stdout != r.stdout {
		t.Errorf("a second run with the same --out printed another configuration (a key was rotated)")
	}

	conf := filepath.Join(dir, "nats-server.conf")
	body := "listen: 127.0.0.1:-1\njetstream { store_dir: " + `"` + filepath.Join(dir, "js") + `"` + " }\n" + r.stdout
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server refuses the generated configuration: %v\n%s", err, r.stdout)
	}
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(testrun.Failsafe) {
		t.Fatal("nats-server did not start")
	}
	logger := testrun.Logger(t)
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()

	admin, err := wire.Connect(srv.ClientURL(), "admin", wire.Security{NKeySeedFile: filepath.Join(seeds, "_admin.nk")}, logger)
	if err != nil {
		t.Fatalf("admin with its seed: %v", err)
	}
	defer admin.Close()
	adminJS, _ := jetstream.New(admin)
	if err := wire.EnsureStreams(ctx, adminJS, 0); err != nil {
		t.Fatal(err)
	}

	if _, err := wire.Connect(srv.ClientURL(), "orders", wire.Security{}, logger); err == nil {
		t.Fatal("connected without credentials")
	}
	violations := make(chan error, 16)
	nc, err := nats.Connect(srv.ClientURL(), nats.CustomInboxPrefix(wire.InboxPrefix("orders")),
		mustSeed(t, filepath.Join(seeds, "orders.nk")),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatalf("orders with its seed: %v", err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if err := wire.EnsureStreams(ctx, js, 0); err != nil {
		t.Fatalf("orders' start-up against existing streams: %v", err)
	}
	if _, err := js.Publish(ctx, wire.LiveSubject("orders", "acme", "order.placed"), []byte("{}")); err != nil {
		t.Fatalf("orders publishing its own event: %v", err)
	}
	forged := wire.LiveSubject("billing", "acme", "order.placed")
	if err := nc.Publish(forged, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	err = testrun.Receive(t, "a permissions violation for orders publishing as billing", violations)
	if !strings.Contains(err.Error(), "Permissions Violation") || !strings.Contains(err.Error(), forged) {
		t.Fatalf("orders publishing as billing: %v; want a permissions violation naming %s", err, forged)
	}
}

func mustSeed(t *testing.T, path string) nats.Option {
	t.Helper()
	opt, err := nats.NkeyOptionFromSeed(path)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// Without --out the users are the services' names with passwords nats-server reads from its
// environment (STREAMSEAL_NATS_PASSWORD_<SERVICE>): no secret is printed, and nats-server loads it.
func TestNATSConfigWithoutOutUsesPasswordsFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	topology := filepath.Join(dir, "topology.json")
	if err := os.WriteFile(topology, []byte(demoTopologyJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	r := streamseal(t, nil, "nats-config", "--topology", topology)
	if r.code != 0 || !strings.Contains(r.stdout, `user: "billing", password: $STREAMSEAL_NATS_PASSWORD_BILLING`) {
		t.Fatalf("nats-config: exit %d, stdout %s, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, name := range []string{"ADMIN", "ORDERS", "BILLING", "SHIPPING"} {
		t.Setenv("STREAMSEAL_NATS_PASSWORD_"+name, "pw-"+name)
	}
	conf := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(conf, []byte("listen: 127.0.0.1:-1\n"+r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server refuses the generated configuration: %v", err)
	}
	if len(opts.Users) != 4 || opts.Users[2].Username != "billing" || opts.Users[2].Password != "pw-BILLING" {
		t.Fatalf("users read from the configuration: %+v", opts.Users)
	}
	bad := streamseal(t, nil, "nats-config", "--topology", filepath.Join(dir, "missing.json"))
	if bad.code != 2 || !strings.Contains(bad.stderr, "--topology") {
		t.Errorf("a missing topology: exit %d, stderr %q; want exit 2 naming --topology", bad.code, bad.stderr)
	}
}

// The compose file's NATS configuration (docker/nats) loads with the block nats-config generates
// from its topology, as the compose file's comment says to generate it.
func TestComposeNATSConfigurationLoads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := streamseal(t, nil, "nats-config", "--topology", "../../docker/nats/topology.json", "--out", filepath.Join(dir, "seeds"))
	if r.code != 0 {
		t.Fatalf("nats-config: exit %d, stderr %q", r.code, r.stderr)
	}
	conf, err := os.ReadFile("../../docker/nats/nats-server.conf")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nats-server.conf"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "auth.conf"), []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats-server.conf"))
	if err != nil {
		t.Fatalf("docker/nats/nats-server.conf with the generated auth.conf: %v", err)
	}
	if len(opts.Nkeys) != 3 || !opts.JetStream {
		t.Fatalf("compose NATS: %d NKey users, JetStream %v; want 3 (admin, orders, billing) and JetStream", len(opts.Nkeys), opts.JetStream)
	}
	for _, svc := range []string{"orders", "billing"} {
		if _, err := os.Stat(filepath.Join(dir, "seeds", svc+".nk")); err != nil {
			t.Errorf("the compose file mounts seeds/%s.nk: %v", svc, err)
		}
	}
}
