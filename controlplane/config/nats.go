// nats.go: the checks across the NATS security options, which no single option can make.

package config

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nkeys"
)

// natsAuthFlags are the flags of each authentication method, in AuthMethods' order.
var natsAuthFlags = map[string]string{
	"credentials file": "--nats-creds",
	"NKey seed":        "--nats-nkey-seed",
	"user/password":    "--nats-user/--nats-password",
	"token":            "--nats-token",
}

// NATSAuthFlags names the flags that set how command's NATS connection authenticates, for an
// error the server's refusal causes: "--nats-user/--nats-password", or, with none set, every
// flag that could.
func (o *Options) NATSAuthFlags() string {
	methods := o.NATS.AuthMethods()
	if len(methods) == 0 {
		return "no NATS credentials given (--nats-creds, --nats-nkey-seed, --nats-user/--nats-password or --nats-token)"
	}
	flags := make([]string, len(methods))
	for i, m := range methods {
		flags[i] = natsAuthFlags[m]
	}
	return strings.Join(flags, ", ")
}

// validateNATSSecurity checks what one option cannot: one authentication method at most, a user
// with its password, a certificate with its key, and that the files hold what they should (a
// seed, a credentials file, PEM certificates, a key matching its certificate). Unreadable files
// are already refused by each option's own check, so they are skipped here.
func (o *Options) validateNATSSecurity(command string) error {
	s := o.NATS
	var errs []error
	methods := s.AuthMethods()
	if len(methods) > 1 {
		flags := make([]string, len(methods))
		for i, m := range methods {
			flags[i] = natsAuthFlags[m]
		}
		errs = append(errs, fmt.Errorf("%s: choose one NATS authentication method, not %d", strings.Join(flags, " and "), len(methods)))
	}
	if s.User != "" && s.Password == "" {
		errs = append(errs, errors.New("--nats-user needs --nats-password (or STREAMSEAL_NATS_PASSWORD)"))
	}
	if s.Password != "" && s.User == "" {
		errs = append(errs, errors.New("--nats-password needs --nats-user (or STREAMSEAL_NATS_USER)"))
	}
	if s.TLSCertFile != "" && s.TLSKeyFile == "" {
		errs = append(errs, errors.New("--nats-tls-cert needs --nats-tls-key: a client certificate is useless without its private key"))
	}
	if s.TLSKeyFile != "" && s.TLSCertFile == "" {
		errs = append(errs, errors.New("--nats-tls-key needs --nats-tls-cert"))
	}
	if command == CommandRun && o.NATSURL == "" && (len(methods) > 0 || s.TLS()) {
		errs = append(errs, errors.New("NATS credentials and TLS options need --nats-url: the embedded server run starts makes its own users"))
	}
	if data, ok := readable(s.NKeySeedFile); ok {
		if kp, err := nkeys.ParseDecoratedNKey(data); err != nil {
			errs = append(errs, fmt.Errorf("--nats-nkey-seed %s does not hold an NKey seed: %w", s.NKeySeedFile, err))
		} else if _, err := kp.Seed(); err != nil {
			errs = append(errs, fmt.Errorf("--nats-nkey-seed %s holds a public key, not a seed", s.NKeySeedFile))
		} else if pub, _ := kp.PublicKey(); !nkeys.IsValidPublicUserKey(pub) {
			errs = append(errs, fmt.Errorf("--nats-nkey-seed %s is not a user seed (SU…)", s.NKeySeedFile))
		}
	}
	if data, ok := readable(s.CredsFile); ok {
		if !bytes.Contains(data, []byte("BEGIN NATS USER JWT")) {
			errs = append(errs, fmt.Errorf("--nats-creds %s holds no user JWT (a credentials file holds a user JWT and its NKey seed)", s.CredsFile))
		} else if _, err := nkeys.ParseDecoratedUserNKey(data); err != nil {
			errs = append(errs, fmt.Errorf("--nats-creds %s holds no NKey seed: %w", s.CredsFile, err))
		}
	}
	if data, ok := readable(s.TLSCAFile); ok && !x509.NewCertPool().AppendCertsFromPEM(data) {
		errs = append(errs, fmt.Errorf("--nats-tls-ca %s holds no PEM certificate", s.TLSCAFile))
	}
	_, certOK := readable(s.TLSCertFile)
	_, keyOK := readable(s.TLSKeyFile)
	if certOK && keyOK {
		if _, err := tls.LoadX509KeyPair(s.TLSCertFile, s.TLSKeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--nats-tls-cert %s with --nats-tls-key %s: %w", s.TLSCertFile, s.TLSKeyFile, err))
		}
	}
	return errors.Join(errs...)
}

// readable returns path's contents when it is set and can be read.
func readable(path string) ([]byte, bool) {
	if path == "" {
		return nil, false
	}
	data, err := os.ReadFile(path)
	return data, err == nil
}
