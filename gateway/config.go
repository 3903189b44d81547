package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"nexus.local/platform/config"
)

// Config configures the gateway.
type Config struct {
	// HTTPAddr is where the gateway listens when it runs alone.
	HTTPAddr string `env:"NEXUS_HTTP_ADDR, default=127.0.0.1:8080"`
	// OrchestratorAddr is one address, a comma-separated list or a gRPC target.
	OrchestratorAddr string `env:"NEXUS_ORCHESTRATOR_ADDR, default=127.0.0.1:7101"`
	// APIKeys is "key:user,key:user"; a request bearing key acts as user.
	APIKeys string `env:"NEXUS_API_KEYS"`
	// CORSOrigins lists the browser origins allowed to call the API, comma-separated.
	CORSOrigins string `env:"NEXUS_CORS_ORIGINS"`
	// SSEKeepalive is the silence after which a stream gets a comment frame.
	SSEKeepalive time.Duration `env:"NEXUS_SSE_KEEPALIVE, default=15s"`
	// OIDCIssuer enables bearer JWT verification against this issuer.
	OIDCIssuer string `env:"NEXUS_OIDC_ISSUER"`
	// OIDCAudience is the client id JWTs must be issued for.
	OIDCAudience string `env:"NEXUS_OIDC_AUDIENCE"`
	// DevMode lets unauthenticated loopback callers in as the local user when
	// no API key is configured.
	DevMode bool `env:"NEXUS_DEV_MODE, default=false"`
	// HostURL and HostToken are the paired host runtime that nexus dev started;
	// the web UI prefills its host panel from them.
	HostURL   string `env:"NEXUS_DEV_HOST_URL"`
	HostToken string `env:"NEXUS_DEV_HOST_TOKEN"`

	Limits Limits
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
}

// LoadConfig reads Config from l and checks it.
func LoadConfig(ctx context.Context, l config.Lookuper) (Config, error) {
	return config.From[Config](ctx, l)
}

// Validate checks the settings Load cannot: durations, rate limits, keys.
func (c *Config) Validate() error {
	if c.SSEKeepalive <= 0 {
		return fmt.Errorf("NEXUS_SSE_KEEPALIVE=%s: must be positive", c.SSEKeepalive)
	}
	if c.Limits.RateLimitRPS > 0 && c.Limits.RateLimitBurst < 1 {
		return fmt.Errorf("NEXUS_RATE_LIMIT_BURST=%d: must be at least 1 while NEXUS_RATE_LIMIT_RPS is set", c.Limits.RateLimitBurst)
	}
	if err := checkMeshLimits(c.Limits); err != nil {
		return err
	}
	_, err := parseAPIKeys(c.APIKeys)
	return err
}

// parseAPIKeys reads "key:user,key:user".
func parseAPIKeys(s string) (map[string]string, error) {
	keys := map[string]string{}
	for i, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		key, user, ok := strings.Cut(pair, ":")
		key, user = strings.TrimSpace(key), strings.TrimSpace(user)
		if !ok || key == "" || user == "" {
			return nil, fmt.Errorf("NEXUS_API_KEYS entry %d: want key:user", i+1)
		}
		keys[key] = user
	}
	return keys, nil
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
