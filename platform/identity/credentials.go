package identity

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Config is how a process checks callers. The gateway and the orchestrator
// read the same settings, so a credential means the same thing to both.
type Config struct {
	// InternalKey signs and verifies the identity assertions services pass
	// each other; every service of a deployment shares it.
	InternalKey string `env:"NEXUS_INTERNAL_KEY"`
	// APIKeys is "key:name,key:name"; a caller bearing key is KeyUser(name).
	APIKeys string `env:"NEXUS_API_KEYS"`
	// OIDCIssuer enables bearer JWT verification against this issuer.
	OIDCIssuer string `env:"NEXUS_OIDC_ISSUER"`
	// OIDCAudience is the client id JWTs must be issued for; required with
	// OIDCIssuer, or any token the issuer made for anyone would pass.
	OIDCAudience string `env:"NEXUS_OIDC_AUDIENCE"`
	// DevMode admits unauthenticated loopback callers as LocalUser while no
	// credential is configured.
	DevMode bool `env:"NEXUS_DEV_MODE, default=false"`
}

// Validate checks the settings without reaching the issuer.
func (c *Config) Validate() error {
	var errs []error
	if c.InternalKey != "" && len(c.InternalKey) < MinInternalKeyBytes {
		errs = append(errs, fmt.Errorf("NEXUS_INTERNAL_KEY is %d bytes, want at least %d", len(c.InternalKey), MinInternalKeyBytes))
	}
	if _, err := ParseAPIKeys(c.APIKeys); err != nil {
		errs = append(errs, err)
	}
	if c.OIDCIssuer != "" {
		if u, err := url.Parse(c.OIDCIssuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("NEXUS_OIDC_ISSUER=%q: want an http(s) URL", c.OIDCIssuer))
		}
		if strings.TrimSpace(c.OIDCAudience) == "" {
			errs = append(errs, errors.New("NEXUS_OIDC_AUDIENCE is empty: set it to the client id tokens must be issued for, or any token of NEXUS_OIDC_ISSUER would be accepted"))
		}
	}
	return errors.Join(errs...)
}

// HasCredentials says whether any user credential is configured.
func (c *Config) HasCredentials() bool { return c.APIKeys != "" || c.OIDCIssuer != "" }

// ParseAPIKeys reads "key:name,key:name" into key -> user. A key listed twice
// is refused, whatever users it names: one key must mean one user.
func ParseAPIKeys(s string) (map[string]string, error) {
	keys := map[string]string{}
	for i, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		key, name, ok := strings.Cut(pair, ":")
		key, name = strings.TrimSpace(key), strings.TrimSpace(name)
		if !ok || key == "" || name == "" {
			return nil, fmt.Errorf("NEXUS_API_KEYS entry %d: want key:name", i+1)
		}
		if _, dup := keys[key]; dup {
			return nil, fmt.Errorf("NEXUS_API_KEYS entry %d: the key of entry %q is listed twice; each key must name one user", i+1, name)
		}
		keys[key] = KeyUser(name)
	}
	return keys, nil
}

// errNoCredentialText tells a caller that presented nothing what to send.
const errNoCredentialText = "send Authorization: Bearer <api key or OIDC token>"

// Credentials checks the credentials users present: API keys and OIDC tokens.
type Credentials struct {
	keys     map[string]string
	issuer   string
	verifier *oidc.IDTokenVerifier
}

// NewCredentials builds the checker of cfg, discovering the OIDC issuer.
func NewCredentials(ctx context.Context, cfg Config) (*Credentials, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keys, _ := ParseAPIKeys(cfg.APIKeys)
	c := &Credentials{keys: keys, issuer: cfg.OIDCIssuer}
	if cfg.OIDCIssuer != "" {
		provider, err := oidc.NewProvider(ctx, cfg.OIDCIssuer)
		if err != nil {
			return nil, fmt.Errorf("oidc discovery at NEXUS_OIDC_ISSUER=%s: %w", cfg.OIDCIssuer, err)
		}
		c.verifier = provider.Verifier(&oidc.Config{ClientID: cfg.OIDCAudience})
	}
	return c, nil
}

// Empty says whether no credential is configured at all.
func (c *Credentials) Empty() bool { return len(c.keys) == 0 && c.verifier == nil }

// Check returns the user of token: an API key's user, or the namespaced
// subject of a verified OIDC token.
func (c *Credentials) Check(ctx context.Context, token string) (string, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return "", errors.New(errNoCredentialText)
	}
	user := ""
	for key, u := range c.keys {
		// Compare with every key so the time taken says nothing about which
		// one nearly matched.
		if subtle.ConstantTimeCompare([]byte(key), []byte(token)) == 1 {
			user = u
		}
	}
	if user != "" {
		return user, nil
	}
	if c.verifier != nil && strings.Count(token, ".") == 2 {
		idt, err := c.verifier.Verify(ctx, token)
		if err != nil {
			return "", fmt.Errorf("bearer token: %w", err)
		}
		if strings.TrimSpace(idt.Subject) == "" {
			return "", errors.New("bearer token has no subject (sub)")
		}
		return OIDCUser(c.issuer, idt.Subject), nil
	}
	return "", errors.New("the bearer token is not a known API key")
}
