// Package testcerts writes throwaway TLS material for tests and benchmarks: a CA, a server
// certificate for 127.0.0.1/localhost and a client certificate, generated with crypto/x509.
// Tooling only.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certs are a throwaway CA, a server certificate for 127.0.0.1/localhost and a client
// certificate, as PEM files.
type Certs struct {
	CAFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile string
	// OtherCAFile is a CA that signed neither certificate.
	OtherCAFile string
}

// Write generates Certs into dir.
func Write(dir string) (*Certs, error) {
	caKey, caCert, caDER, err := newCA("streamseal test CA")
	if err != nil {
		return nil, err
	}
	_, _, otherDER, err := newCA("another CA")
	if err != nil {
		return nil, err
	}
	c := &Certs{CAFile: filepath.Join(dir, "ca.pem"), OtherCAFile: filepath.Join(dir, "other-ca.pem"),
		ServerCertFile: filepath.Join(dir, "server.pem"), ServerKeyFile: filepath.Join(dir, "server-key.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"), ClientKeyFile: filepath.Join(dir, "client-key.pem")}
	if err := writePEM(c.CAFile, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	if err := writePEM(c.OtherCAFile, "CERTIFICATE", otherDER); err != nil {
		return nil, err
	}
	leaf := func(certFile, keyFile string, tmpl *x509.Certificate) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyFile, "EC PRIVATE KEY", keyDER)
	}
	now := time.Now()
	if err := leaf(c.ServerCertFile, c.ServerKeyFile, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, err
	}
	if err := leaf(c.ClientCertFile, c.ClientKeyFile, &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "streamseal client"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, err
	}
	return c, nil
}

// ServerTLS is the server side: its certificate, and the CA its clients' certificates must chain
// to (a client certificate is required).
func (c *Certs) ServerTLS() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(c.ServerCertFile, c.ServerKeyFile)
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
		MinVersion: tls.VersionTLS12}, nil
}

func newCA(name string) (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return key, cert, der, err
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
