package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/internal/natstest"
)

// Invariant 12 starts at the door: against a NATS server with authorization on, `streamseal run`
// with no credentials or wrong ones cannot connect, exits 1 at once (no retry can fix it), names
// the options to check, and prints no secret; against a TLS server that requires client
// certificates, a missing TLS setup, a missing client certificate or a wrong CA each fail naming
// the option. Nothing is written to the database on any of these failures.
func TestNATSRefusalsNameTheOption_Invariant12(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	topo := natsauth.Topology{Services: []natsauth.Service{{Name: "billing"}}}
	open := natstest.StartSecured(t, topo, natstest.SecuredOptions{})
	secured := natstest.StartSecured(t, topo, natstest.SecuredOptions{TLS: true})
	dir := t.TempDir()
	strangerSeed := filepath.Join(dir, "stranger.nk")
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	if err := os.WriteFile(strangerSeed, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	certs := secured.Certs
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		want   []string // in stderr
		secret string   // never printed
	}{
		{name: "no credentials", args: []string{"--nats-url", open.Embedded.URL()},
			want: []string{"Authorization Violation", "no NATS credentials given (--nats-creds, --nats-nkey-seed, --nats-user/--nats-password or --nats-token)"}},
		{name: "wrong password", args: []string{"--nats-url", open.Embedded.URL()},
			env:  []string{"STREAMSEAL_NATS_USER=billing", "STREAMSEAL_NATS_PASSWORD=wrong-pw-123"},
			want: []string{"Authorization Violation", "check --nats-user/--nats-password"}, secret: "wrong-pw-123"},
		{name: "unknown NKey", args: []string{"--nats-url", open.Embedded.URL(), "--nats-nkey-seed", strangerSeed},
			want: []string{"check --nats-nkey-seed"}, secret: string(seed)},
		{name: "token instead of the user", args: []string{"--nats-url", open.Embedded.URL(), "--nats-token", "tok-secret-9"},
			want: []string{"check --nats-token"}, secret: "tok-secret-9"},
		{name: "TLS required", args: []string{"--nats-url", secured.Embedded.URL(), "--nats-user", "billing"},
			env:  []string{"STREAMSEAL_NATS_PASSWORD=pw-billing"},
			want: []string{"x509: certificate signed by unknown authority", "check --nats-tls-ca"}},
		{name: "no client certificate", args: []string{"--nats-url", secured.Embedded.URL(), "--nats-user", "billing",
			"--nats-tls-ca", certs.CAFile},
			env:  []string{"STREAMSEAL_NATS_PASSWORD=pw-billing"},
			want: []string{"check --nats-tls-cert and --nats-tls-key"}},
		{name: "wrong CA", args: []string{"--nats-url", secured.Embedded.URL(), "--nats-user", "billing",
			"--nats-tls-ca", certs.OtherCAFile, "--nats-tls-cert", certs.ClientCertFile, "--nats-tls-key", certs.ClientKeyFile},
			env:  []string{"STREAMSEAL_NATS_PASSWORD=pw-billing"},
			want: []string{"check --nats-tls-ca"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--database-url", url, "--service", "billing", "--start-timeout", "1m"}, tc.args...)
			r := streamseal(t, tc.env, args...)
			if r.code != 1 {
				t.Fatalf("run: exit %d, stderr %q; want exit 1", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("run's stderr does not say %q:\n%s", w, r.stderr)
				}
			}
			if tc.secret != "" && strings.Contains(r.stdout+r.stderr, tc.secret) {
				t.Errorf("a secret appears in run's output: %s%s", r.stdout, r.stderr)
			}
		})
	}
}

// Bad NATS security options are refused before anything starts (exit 2), each naming its flag.
func TestBadNATSSecurityOptionsAreUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	certs := natstest.NewCerts(t)
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{args: []string{"--nats-user", "billing"}, want: "--nats-user needs --nats-password"},
		{args: []string{"--nats-user", "billing", "--nats-token", "t"}, env: []string{"STREAMSEAL_NATS_PASSWORD=p"},
			want: "--nats-user/--nats-password and --nats-token: choose one NATS authentication method"},
		{args: []string{"--nats-nkey-seed", garbage}, want: "--nats-nkey-seed " + garbage + " does not hold an NKey seed"},
		{args: []string{"--nats-creds", filepath.Join(dir, "missing.creds")}, want: "--nats-creds " + filepath.Join(dir, "missing.creds") + " is not readable"},
		{args: []string{"--nats-creds", garbage}, want: "--nats-creds " + garbage + " holds no user JWT"},
		{args: []string{"--nats-tls-cert", certs.ClientCertFile}, want: "--nats-tls-cert needs --nats-tls-key"},
		{args: []string{"--nats-tls-cert", certs.ClientCertFile, "--nats-tls-key", certs.ServerKeyFile}, want: "--nats-tls-cert " + certs.ClientCertFile + " with --nats-tls-key"},
		{args: []string{"--nats-tls-ca", garbage}, want: "--nats-tls-ca " + garbage + " holds no PEM certificate"},
	} {
		for _, cmd := range []string{"run", "audit", "repair"} {
			args := append([]string{cmd, "--database-url", "postgres://x/y", "--nats-url", "nats://127.0.0.1:1"}, tc.args...)
			r := streamseal(t, tc.env, args...)
			if r.code != 2 || !strings.Contains(r.stderr, "streamseal "+cmd+": "+tc.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", args, r.code, r.stderr, tc.want)
			}
		}
	}
	// run with the embedded server: credentials have no server to go to.
	r := streamseal(t, []string{"STREAMSEAL_NATS_PASSWORD=p"}, "run", "--database-url", "postgres://x/y", "--nats-user", "billing")
	if r.code != 2 || !strings.Contains(r.stderr, "need --nats-url") {
		t.Errorf("run --nats-user without --nats-url: exit %d, stderr %q; want exit 2 saying they need --nats-url", r.code, r.stderr)
	}
}
