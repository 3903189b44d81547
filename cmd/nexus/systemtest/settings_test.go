package systemtest

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"nexus.local/gateway"
	"nexus.local/platform/config"
	"nexus.local/services/capability"
	"nexus.local/services/modelrouter"
	"nexus.local/services/orchestrator"
)

// TestBadSettingsRefuseToStart: every service refuses to start with a bad
// numeric, duration, enum or list setting, and its error names the variable.
func TestBadSettingsRefuseToStart(t *testing.T) {
	t.Parallel()
	services := map[string]func(ctx context.Context, l config.Lookuper) error{
		"gateway": gateway.Run, "orchestrator": orchestrator.Run, "model-router": modelrouter.Run, "capability": capability.Run,
	}
	good := map[string]string{
		"NEXUS_GRPC_ADDR": "127.0.0.1:0", "NEXUS_HTTP_ADDR": "127.0.0.1:0", "NEXUS_INTERNAL_KEY": meshInternalKey,
		"NEXUS_API_KEYS": "k-alice:alice", "NEXUS_REDIS_URL": "", "NEXUS_LOG_LEVEL": "error",
	}
	// bad is a setting that must refuse a start: name is the variable the
	// error must name, env what is set on top of good.
	type bad struct {
		name string
		env  map[string]string
	}
	one := func(name, value string) bad { return bad{name, map[string]string{name: value}} }
	// Settings every service reads.
	shared := []bad{
		one("NEXUS_LOG_LEVEL", "loud"),
		one("NEXUS_LOG_FORMAT", "xml"),
		one("OTEL_TRACES_SAMPLER", "sometimes"),
		one("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon"),
		one("NEXUS_INTERNAL_KEY", "short"),
		one("NEXUS_API_KEYS", "k:alice,k:mallory"),
		one("NEXUS_API_KEYS", "nocolon"),
		{"NEXUS_OIDC_AUDIENCE", map[string]string{"NEXUS_OIDC_ISSUER": "https://issuer.example"}},
		one("NEXUS_OIDC_ISSUER", "issuer.example"),
		{"NEXUS_TLS_KEY", map[string]string{"NEXUS_TLS_CERT": "/etc/nexus/tls/cert.pem"}},
		{"NEXUS_TLS_CA", map[string]string{"NEXUS_TLS_CERT": "/etc/nexus/tls/cert.pem", "NEXUS_TLS_KEY": "/etc/nexus/tls/key.pem"}},
		one("NEXUS_DEV_MODE", "maybe"),
	}
	own := map[string][]bad{
		"gateway": {
			one("NEXUS_MAX_BODY_BYTES", "-1"),
			one("NEXUS_MAX_PROMPT_BYTES", "0"),
			one("NEXUS_MAX_TOOL_RESULT_BYTES", "-5"),
			one("NEXUS_MAX_IMAGES", "-1"),
			one("NEXUS_MAX_IMAGE_BYTES", "0"),
			one("NEXUS_MAX_JSON_DEPTH", "0"),
			one("NEXUS_RATE_LIMIT_RPS", "nan"),
			one("NEXUS_RATE_LIMIT_RPS", "-1"),
			one("NEXUS_RATE_LIMIT_RPS", "+Inf"),
			one("NEXUS_RATE_LIMIT_BURST", "0"),
			one("NEXUS_MAX_STREAMS_PER_USER", "0"),
			one("NEXUS_AUTH_FAILURES_PER_MINUTE", "nan"),
			one("NEXUS_AUTH_FAILURE_BURST", "0"),
			one("NEXUS_SSE_KEEPALIVE", "0s"),
			one("NEXUS_SSE_KEEPALIVE", "often"),
			one("NEXUS_HTTP_READ_HEADER_TIMEOUT", "-1s"),
			one("NEXUS_HTTP_BODY_TIMEOUT", "0s"),
			one("NEXUS_HTTP_IDLE_TIMEOUT", "0s"),
			one("NEXUS_HTTP_MAX_HEADER_BYTES", "10"),
			one("NEXUS_PUBLIC_HOSTS", "https://nexus.example.com/"),
			one("NEXUS_CORS_ORIGINS", "nexus.example.com"),
			{"NEXUS_DEV_PAIRING_SECRET", map[string]string{"NEXUS_DEV_HOST_URL": "http://127.0.0.1:7723"}},
			{"NEXUS_INTERNAL_KEY", map[string]string{"NEXUS_INTERNAL_KEY": ""}},
		},
		"orchestrator": {
			one("NEXUS_RUN_LEASE", "1ns"),
			one("NEXUS_TOOL_RESULT_TIMEOUT", "-1s"),
			one("NEXUS_MAX_FIX_RETRIES", "-1"),
			one("NEXUS_MAX_ITERATIONS", "-1"),
			one("NEXUS_HEAVY_MAX_TOKENS", "0"),
			one("NEXUS_LIGHT_MAX_TOKENS", "abc"),
			one("NEXUS_MAX_TOOL_RESULT_CHARS", "0"),
			one("NEXUS_COMPACT_AT", "nan"),
			one("NEXUS_COMPACT_AT", "1.5"),
			one("NEXUS_MAX_TURNS", "0"),
			one("NEXUS_INTERNAL_KEY", ""),
		},
		"model-router": {
			one("NEXUS_MODEL_MAX_RETRIES", "-1"),
			one("NEXUS_MODEL_RETRY_BASE_DELAY", "-1s"),
			one("NEXUS_MODEL_RETRY_MAX_DELAY", "1ms"),
			one("NEXUS_MODEL_STREAM_IDLE_TIMEOUT", "0s"),
			one("ANTHROPIC_BASE_URL", "ftp://vendor.example"),
			one("NEXUS_INTERNAL_KEY", ""),
		},
		"capability": {
			one("NEXUS_AUDIT_RETENTION", "-1h"),
			one("NEXUS_DATABASE_URL", "mysql://db/nexus"),
			one("NEXUS_INTERNAL_KEY", ""),
		},
	}
	for svc, run := range services {
		for _, b := range append(append([]bad{}, shared...), own[svc]...) {
			t.Run(svc+"/"+b.name+"/"+fmt.Sprint(b.env), func(t *testing.T) {
				env := maps.Clone(good)
				maps.Copy(env, b.env)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				err := run(ctx, config.Map(env))
				if err == nil {
					t.Fatalf("started (and ran until stopped) with %v", b.env)
				}
				if !strings.Contains(err.Error(), b.name) {
					t.Errorf("error %q does not name %s", err, b.name)
				}
			})
		}
	}
}
