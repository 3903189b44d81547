package rpc

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// TLSConfig names the certificates of mutual TLS between services. Each
// setting is a PEM file's path (Kubernetes mounts them) or the PEM text itself
// (nexus dev hands its in-memory CA's certificates over that way).
type TLSConfig struct {
	// Cert and Key are this process's certificate, presented both as a server
	// and as a client.
	Cert string `env:"NEXUS_TLS_CERT"`
	Key  string `env:"NEXUS_TLS_KEY"`
	// CA is the authority peers' certificates must chain to.
	CA string `env:"NEXUS_TLS_CA"`
}

// Enabled says whether TLS is configured at all.
func (c *TLSConfig) Enabled() bool { return c.Cert != "" || c.Key != "" || c.CA != "" }

// Validate checks that the settings go together: a certificate needs its key
// and an authority to check peers against.
func (c *TLSConfig) Validate() error {
	if !c.Enabled() {
		return nil
	}
	if (c.Cert == "") != (c.Key == "") {
		return errors.New("NEXUS_TLS_CERT and NEXUS_TLS_KEY must be set together")
	}
	if c.CA == "" {
		return errors.New("NEXUS_TLS_CA is empty: mutual TLS needs the authority peers' certificates chain to")
	}
	return nil
}

func pemOf(setting, v string) ([]byte, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "-----BEGIN") {
		return []byte(v), nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	return b, nil
}

func (c *TLSConfig) load() (*tls.Certificate, *x509.CertPool, error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	caPEM, err := pemOf("NEXUS_TLS_CA", c.CA)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, nil, errors.New("NEXUS_TLS_CA holds no PEM certificate")
	}
	if c.Cert == "" {
		return nil, pool, nil
	}
	certPEM, err := pemOf("NEXUS_TLS_CERT", c.Cert)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := pemOf("NEXUS_TLS_KEY", c.Key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("NEXUS_TLS_CERT and NEXUS_TLS_KEY: %w", err)
	}
	return &cert, pool, nil
}

// ServerOption returns the transport credentials of a server: TLS 1.3 with
// this process's certificate, and client certificates chaining to the CA
// required, or only checked when given where requireClient is false (the
// orchestrator of nexus dev, which the CLI reaches with a credential
// instead).
func (c *TLSConfig) ServerOption(requireClient bool) (grpc.ServerOption, error) {
	cert, pool, err := c.load()
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, errors.New("NEXUS_TLS_CERT is empty: a server needs a certificate")
	}
	auth := tls.RequireAndVerifyClientCert
	if !requireClient {
		auth = tls.VerifyClientCertIfGiven
	}
	return grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{*cert},
		ClientCAs:    pool,
		ClientAuth:   auth,
		MinVersion:   tls.VersionTLS13,
	})), nil
}

// DialOption returns the transport credentials of a client: the server must
// present a certificate chaining to the CA, and this process presents its own
// when it has one.
func (c *TLSConfig) DialOption() (grpc.DialOption, error) {
	cert, pool, err := c.load()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(cfg)), nil
}
