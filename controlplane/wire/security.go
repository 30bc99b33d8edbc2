package wire

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
)

// Security is how a connection proves who it is to the NATS server and how it checks the server:
// at most one authentication method (a credentials file holding a JWT and an NKey seed, an NKey
// seed file, a user and password, or a token) and, optionally, TLS (a CA to trust, a client
// certificate and key for servers that require one, and the name to verify). The zero value is
// an open, plain connection. Security holds secrets: never log it; its String names the methods
// only.
type Security struct {
	CredsFile    string // JWT + NKey seed (nsc's .creds); nats.UserCredentials
	NKeySeedFile string // an NKey user seed (SU…); nats.NkeyOptionFromSeed
	User         string
	Password     string
	Token        string

	TLSCAFile     string // trust this CA (PEM) instead of the system's
	TLSCertFile   string // client certificate (PEM), with TLSKeyFile
	TLSKeyFile    string
	TLSServerName string // the name the server's certificate must carry (default: the URL's host)
}

// AuthMethods are the authentication methods s sets, by name ("credentials file", "NKey seed",
// "user/password", "token"); more than one is a configuration error.
func (s Security) AuthMethods() []string {
	var methods []string
	if s.CredsFile != "" {
		methods = append(methods, "credentials file")
	}
	if s.NKeySeedFile != "" {
		methods = append(methods, "NKey seed")
	}
	if s.User != "" || s.Password != "" {
		methods = append(methods, "user/password")
	}
	if s.Token != "" {
		methods = append(methods, "token")
	}
	return methods
}

// TLS reports whether s asks for TLS.
func (s Security) TLS() bool {
	return s.TLSCAFile != "" || s.TLSCertFile != "" || s.TLSKeyFile != "" || s.TLSServerName != ""
}

// String names what s uses, never a secret: "user/password + TLS", "open".
func (s Security) String() string {
	methods := s.AuthMethods()
	desc := "no credentials"
	if len(methods) > 0 {
		desc = methods[0]
		for _, m := range methods[1:] {
			desc += ", " + m
		}
	}
	if s.TLS() {
		desc += " + TLS"
	}
	return desc
}

// natsOptions turns s into nats.go options, reading every file now, so a file that cannot be
// used fails the connection before any dial.
func (s Security) natsOptions() ([]nats.Option, error) {
	if methods := s.AuthMethods(); len(methods) > 1 {
		return nil, fmt.Errorf("more than one NATS authentication method: %v", methods)
	}
	var opts []nats.Option
	switch {
	case s.CredsFile != "":
		if _, err := os.ReadFile(s.CredsFile); err != nil {
			return nil, fmt.Errorf("NATS credentials file: %w", err)
		}
		opts = append(opts, nats.UserCredentials(s.CredsFile))
	case s.NKeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(s.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("NATS NKey seed file %s: %w", s.NKeySeedFile, err)
		}
		opts = append(opts, opt)
	case s.User != "" || s.Password != "":
		if s.User == "" || s.Password == "" {
			return nil, errors.New("NATS user and password go together")
		}
		opts = append(opts, nats.UserInfo(s.User, s.Password))
	case s.Token != "":
		opts = append(opts, nats.Token(s.Token))
	}
	if s.TLS() {
		cfg, err := s.TLSConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(cfg))
	}
	return opts, nil
}

// TLSConfig is the client TLS configuration s describes (TLS 1.2 at least).
func (s Security) TLSConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.TLSServerName}
	if s.TLSCAFile != "" {
		pem, err := os.ReadFile(s.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("NATS TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("NATS TLS CA %s: no PEM certificate in it", s.TLSCAFile)
		}
		cfg.RootCAs = pool
	}
	if (s.TLSCertFile == "") != (s.TLSKeyFile == "") {
		return nil, errors.New("a NATS TLS client certificate and its key go together")
	}
	if s.TLSCertFile != "" {
		pair, err := tls.LoadX509KeyPair(s.TLSCertFile, s.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("NATS TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
