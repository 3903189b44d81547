package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"time"

	"nexus.local/platform/config"
)

// Config configures the gateway. Who may call it (API keys, OIDC, dev mode,
// the internal key) is identity.Config, which every service reads alike.
type Config struct {
	// HTTPAddr is where the gateway listens when it runs alone.
	HTTPAddr string `env:"NEXUS_HTTP_ADDR, default=127.0.0.1:8080"`
	// OrchestratorAddr is one address, a comma-separated list or a gRPC target.
	OrchestratorAddr string `env:"NEXUS_ORCHESTRATOR_ADDR, default=127.0.0.1:7101"`
	// PublicHosts lists the host names clients reach the gateway by,
	// comma-separated. A request whose Host is another name is refused, so a
	// DNS name rebound to the gateway's address gets nothing. IP literals are
	// always accepted (they cannot be rebound), loopback names in dev mode.
	PublicHosts string `env:"NEXUS_PUBLIC_HOSTS"`
	// CORSOrigins lists the browser origins allowed to call the API, comma-separated.
	CORSOrigins string `env:"NEXUS_CORS_ORIGINS"`
	// SSEKeepalive is the silence after which a stream gets a comment frame.
	SSEKeepalive time.Duration `env:"NEXUS_SSE_KEEPALIVE, default=15s"`
	// DevMode also accepts loopback host names and serves the dev pairing.
	DevMode bool `env:"NEXUS_DEV_MODE, default=false"`
	// HostURL and HostToken are the paired host runtime that nexus dev started;
	// the web UI prefills its host panel from them.
	HostURL   string `env:"NEXUS_DEV_HOST_URL"`
	HostToken string `env:"NEXUS_DEV_HOST_TOKEN"`
	// RedisURL, when set, keeps each user's request rate and open streams
	// in Redis, so every gateway replica holds a user to one limit.
	RedisURL string `env:"NEXUS_REDIS_URL"`
	// PairingSecret is the secret nexus dev prints; /v1/dev/host-pairing
	// answers only a request that carries it.
	PairingSecret string `env:"NEXUS_DEV_PAIRING_SECRET"`

	Server Server
	Limits Limits
}

// Server bounds what one connection may cost before it is answered.
type Server struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration `env:"NEXUS_HTTP_READ_HEADER_TIMEOUT, default=10s"`
	// BodyTimeout bounds reading a request's body, from its headers on.
	BodyTimeout time.Duration `env:"NEXUS_HTTP_BODY_TIMEOUT, default=30s"`
	// IdleTimeout closes a kept-alive connection with no request this long.
	IdleTimeout time.Duration `env:"NEXUS_HTTP_IDLE_TIMEOUT, default=60s"`
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int `env:"NEXUS_HTTP_MAX_HEADER_BYTES, default=65536"`
}

// Limits bound what a client may send; requests over a limit are refused with
// a 4xx naming it and are never forwarded.
type Limits struct {
	// MaxBodyBytes bounds every request body but tool results.
	MaxBodyBytes int64 `env:"NEXUS_MAX_BODY_BYTES, default=1048576"`
	// MaxPromptBytes bounds a run's prompt.
	MaxPromptBytes int `env:"NEXUS_MAX_PROMPT_BYTES, default=65536"`
	// MaxToolResultBytes bounds a tool-result body, images included.
	MaxToolResultBytes int64 `env:"NEXUS_MAX_TOOL_RESULT_BYTES, default=16777216"`
	// MaxDocumentBytes bounds a document a linked host hands over for
	// download (PUT /v1/sessions/{id}/document).
	MaxDocumentBytes int64 `env:"NEXUS_MAX_DOCUMENT_BYTES, default=33554432"`
	// MaxImages bounds the images in one tool result.
	MaxImages int `env:"NEXUS_MAX_IMAGES, default=4"`
	// MaxImageBytes bounds one decoded image.
	MaxImageBytes int `env:"NEXUS_MAX_IMAGE_BYTES, default=5242880"`
	// MaxJSONDepth bounds the nesting of a JSON body.
	MaxJSONDepth int `env:"NEXUS_MAX_JSON_DEPTH, default=32"`
	// RateLimitRPS is each user's sustained request rate; 0 turns limiting off.
	RateLimitRPS float64 `env:"NEXUS_RATE_LIMIT_RPS, default=10"`
	// RateLimitBurst is how many requests a user may send at once.
	RateLimitBurst int `env:"NEXUS_RATE_LIMIT_BURST, default=40"`
	// MaxStreamsPerUser bounds the event streams one user holds open.
	MaxStreamsPerUser int `env:"NEXUS_MAX_STREAMS_PER_USER, default=16"`
	// AuthFailuresPerMinute is how many failed authentications one client
	// address may make per minute, after a burst of AuthFailureBurst, before
	// it is refused with 429 without being checked.
	AuthFailuresPerMinute float64 `env:"NEXUS_AUTH_FAILURES_PER_MINUTE, default=30"`
	AuthFailureBurst      int     `env:"NEXUS_AUTH_FAILURE_BURST, default=20"`
}

// LoadConfig reads Config from l and checks it.
func LoadConfig(ctx context.Context, l config.Lookuper) (Config, error) {
	return config.From[Config](ctx, l)
}

// Validate checks every number, duration and list, naming the setting.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	positiveDur := func(name string, d time.Duration) {
		if d <= 0 {
			bad("%s=%s: must be positive", name, d)
		}
	}
	positiveDur("NEXUS_SSE_KEEPALIVE", c.SSEKeepalive)
	positiveDur("NEXUS_HTTP_READ_HEADER_TIMEOUT", c.Server.ReadHeaderTimeout)
	positiveDur("NEXUS_HTTP_BODY_TIMEOUT", c.Server.BodyTimeout)
	positiveDur("NEXUS_HTTP_IDLE_TIMEOUT", c.Server.IdleTimeout)
	if c.Server.MaxHeaderBytes < 4096 || c.Server.MaxHeaderBytes > 1<<20 {
		bad("NEXUS_HTTP_MAX_HEADER_BYTES=%d: want 4096 to 1048576", c.Server.MaxHeaderBytes)
	}
	l := c.Limits
	positive := func(name string, v int64) {
		if v <= 0 {
			bad("%s=%d: must be positive", name, v)
		}
	}
	positive("NEXUS_MAX_BODY_BYTES", l.MaxBodyBytes)
	positive("NEXUS_MAX_PROMPT_BYTES", int64(l.MaxPromptBytes))
	positive("NEXUS_MAX_TOOL_RESULT_BYTES", l.MaxToolResultBytes)
	positive("NEXUS_MAX_DOCUMENT_BYTES", l.MaxDocumentBytes)
	positive("NEXUS_MAX_IMAGE_BYTES", int64(l.MaxImageBytes))
	positive("NEXUS_MAX_JSON_DEPTH", int64(l.MaxJSONDepth))
	positive("NEXUS_MAX_STREAMS_PER_USER", int64(l.MaxStreamsPerUser))
	if l.MaxImages < 0 {
		bad("NEXUS_MAX_IMAGES=%d: must not be negative", l.MaxImages)
	}
	if !finiteNonNegative(l.RateLimitRPS) {
		bad("NEXUS_RATE_LIMIT_RPS=%g: want a finite number of requests per second, 0 to turn limiting off", l.RateLimitRPS)
	} else if l.RateLimitRPS > 0 && l.RateLimitBurst < 1 {
		bad("NEXUS_RATE_LIMIT_BURST=%d: must be at least 1 while NEXUS_RATE_LIMIT_RPS is set", l.RateLimitBurst)
	}
	if !finiteNonNegative(l.AuthFailuresPerMinute) || l.AuthFailuresPerMinute == 0 {
		bad("NEXUS_AUTH_FAILURES_PER_MINUTE=%g: want a finite positive number", l.AuthFailuresPerMinute)
	}
	if l.AuthFailureBurst < 1 {
		bad("NEXUS_AUTH_FAILURE_BURST=%d: must be at least 1", l.AuthFailureBurst)
	}
	for _, h := range splitList(c.PublicHosts) {
		if strings.ContainsAny(h, "/@ ") || strings.Contains(h, "://") {
			bad("NEXUS_PUBLIC_HOSTS entry %q: want a host name such as nexus.example.com", h)
		}
	}
	for _, o := range splitList(c.CORSOrigins) {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			bad("NEXUS_CORS_ORIGINS entry %q: want an origin such as https://nexus.example.com", o)
		}
	}
	if c.HostURL != "" && c.PairingSecret == "" {
		bad("NEXUS_DEV_PAIRING_SECRET is empty while NEXUS_DEV_HOST_URL is set: the host pairing needs a secret")
	}
	if err := checkMeshLimits(c.Limits); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func finiteNonNegative(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0 }

// hostAllowed says whether a request's Host names this gateway.
func (c *Config) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil {
		return true
	}
	if c.DevMode && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
		return true
	}
	for _, h := range splitList(c.PublicHosts) {
		if hh, _, err := net.SplitHostPort(h); err == nil {
			h = hh
		}
		if strings.EqualFold(strings.TrimSuffix(h, "."), host) {
			return true
		}
	}
	return false
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
