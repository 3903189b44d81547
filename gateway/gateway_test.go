package gateway

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

const (
	aliceKey = "key-alice"
	bobKey   = "key-bob"
)

func gatewayEnv(orch *testOrchestrator, extra ...string) map[string]string {
	env := map[string]string{
		"NEXUS_ORCHESTRATOR_ADDR": orch.addr,
		"NEXUS_API_KEYS":          aliceKey + ":alice," + bobKey + ":bob",
		"NEXUS_SSE_KEEPALIVE":     "15s",
		"NEXUS_LOG_LEVEL":         "error",
		"NEXUS_INTERNAL_KEY":      testInternalKey,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

func createSession(t testing.TB, base, key string) string {
	t.Helper()
	// The tests carry calls unattended: nothing waits for review.
	resp := request(t, http.MethodPost, base+"/v1/sessions", key, `{"hostApp":"freecad","reviewPolicy":"REVIEW_POLICY_NONE"}`)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("create session: %d %s", resp.StatusCode, b)
	}
	id, _ := decodeJSON(t, resp)["sessionId"].(string)
	if id == "" {
		t.Fatal("create session: no sessionId")
	}
	return id
}

// TestInputLimits shows oversized or over-nested input refused with a 4xx
// that names the limit, its setting and the value, and nothing forwarded.
func TestInputLimits(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	base := startGateway(t, gatewayEnv(orch,
		"NEXUS_MAX_PROMPT_BYTES", "100", "NEXUS_MAX_BODY_BYTES", "4096",
		"NEXUS_MAX_TOOL_RESULT_BYTES", "65536", "NEXUS_MAX_IMAGES", "2",
		"NEXUS_MAX_IMAGE_BYTES", "1000", "NEXUS_MAX_JSON_DEPTH", "8"))
	session := createSession(t, base, aliceKey)
	img := func(n int) string {
		return `{"mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString(make([]byte, n)) + `"}`
	}
	result := func(images ...string) string {
		return `{"toolCallId":"call_1","resultToken":"t","result":{"images":[` + strings.Join(images, ",") + `]}}`
	}
	tests := []struct {
		name, path, body string
		status           int
		limit, setting   string
		max, actual      int64
	}{
		{"prompt", "/runs", `{"prompt":"` + strings.Repeat("a", 101) + `"}`, 413, "prompt_bytes", "NEXUS_MAX_PROMPT_BYTES", 100, 101},
		{"body", "/runs", `{"prompt":"x","model":"` + strings.Repeat("m", 5000) + `"}`, 413, "body_bytes", "NEXUS_MAX_BODY_BYTES", 4096, int64(len(`{"prompt":"x","model":""}`) + 5000)},
		{"image count", "/tool-results", result(img(10), img(10), img(10)), 413, "images", "NEXUS_MAX_IMAGES", 2, 3},
		{"image size", "/tool-results", result(img(1002)), 413, "image_bytes", "NEXUS_MAX_IMAGE_BYTES", 1000, 1002},
		{"tool result size", "/tool-results", result(`{"data":"` + strings.Repeat("A", 70000) + `"}`), 413, "tool_result_bytes", "NEXUS_MAX_TOOL_RESULT_BYTES", 65536, int64(len(result(`{"data":""}`)) + 70000)},
		{"nesting", "/runs", `{"prompt":"x","model":` + strings.Repeat("[", 9) + strings.Repeat("]", 9) + `}`, 400, "json_depth", "NEXUS_MAX_JSON_DEPTH", 8, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := orch.calls.Load()
			resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+tt.path, aliceKey, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			e := apiErrorOf(t, resp)
			if e.Limit == nil {
				t.Fatalf("no limit in %+v", e)
			}
			want := limitInfo{Name: tt.limit, Setting: tt.setting, Max: tt.max, Actual: tt.actual}
			if *e.Limit != want {
				t.Errorf("limit %+v, want %+v", *e.Limit, want)
			}
			if !strings.Contains(e.Message, tt.setting) {
				t.Errorf("message %q does not name %s", e.Message, tt.setting)
			}
			if n := orch.calls.Load() - before; n != 0 {
				t.Errorf("%d calls reached the orchestrator", n)
			}
		})
	}
	t.Run("within the limits", func(t *testing.T) {
		resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+":cancel", aliceKey, `{}`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

// TestRoutesAndProbes shows the fixed routes and JSON errors for routes that
// do not exist or methods they do not take.
func TestRoutesAndProbes(t *testing.T) {
	base := startGateway(t, realGatewayEnv(startRealStack(t)))
	tests := []struct {
		name, method, path string
		key                string
		status             int
		check              func(t *testing.T, resp *http.Response)
	}{
		{"healthz", http.MethodGet, "/healthz", "", 200, nil},
		{"readyz", http.MethodGet, "/readyz", "", 200, nil},
		// Metrics and profiles are served on the internal listener only.
		{"no public metrics", http.MethodGet, "/metrics", "", 404, nil},
		{"no public pprof", http.MethodGet, "/debug/pprof/", "", 404, nil},
		{"openapi", http.MethodGet, "/openapi.json", "", 200, func(t *testing.T, resp *http.Response) {
			doc := decodeJSON(t, resp)
			paths, _ := doc["paths"].(map[string]any)
			if _, ok := paths["/v1/sessions/{sessionId}/runs"]; !ok {
				t.Errorf("openapi paths lack the run route: %v", keys(paths))
			}
		}},
		{"web ui", http.MethodGet, "/", "", 200, func(t *testing.T, resp *http.Response) {
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Errorf("Content-Type %q", ct)
			}
		}},
		{"models", http.MethodGet, "/v1/models", aliceKey, 200, func(t *testing.T, resp *http.Response) {
			if m := decodeJSON(t, resp); m["defaultModel"] != ot.Model {
				t.Errorf("models %v", m)
			}
		}},
		{"hosts", http.MethodGet, "/v1/hosts", aliceKey, 200, nil},
		{"unknown api route", http.MethodGet, "/v1/nothing/here", aliceKey, 404, nil},
		{"unknown page", http.MethodGet, "/nothing.html", "", 404, nil},
		{"wrong method on api", http.MethodDelete, "/v1/models", aliceKey, 405, nil},
		{"wrong method on probe", http.MethodPost, "/healthz", "", 405, nil},
		{"no key", http.MethodGet, "/v1/models", "", 401, nil},
		{"wrong key", http.MethodGet, "/v1/models", "key-mallory", 401, nil},
		{"unknown session", http.MethodGet, "/v1/sessions/nope", aliceKey, 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := request(t, tt.method, base+tt.path, tt.key, "")
			if resp.StatusCode != tt.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			if tt.status >= 400 {
				apiErrorOf(t, resp)
			}
			if tt.check != nil {
				tt.check(t, resp)
			}
		})
	}
}

// TestReadyzFollowsTheOrchestrator shows /readyz reporting the
// orchestrator's grpc.health.v1 status while /healthz stays up. It uses the
// in-test orchestrator because the real one cannot be turned NOT_SERVING from
// outside.
func TestReadyzFollowsTheOrchestrator(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	base := startGateway(t, gatewayEnv(orch))
	tests := []struct {
		serving bool
		want    int
	}{{true, 200}, {false, 503}, {true, 200}}
	for _, tt := range tests {
		orch.setServing(tt.serving)
		if resp := request(t, http.MethodGet, base+"/readyz", "", ""); resp.StatusCode != tt.want {
			t.Fatalf("serving=%v: status %d, want %d", tt.serving, resp.StatusCode, tt.want)
		}
		if resp := request(t, http.MethodGet, base+"/healthz", "", ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz: status %d", resp.StatusCode)
		}
	}
	t.Run("orchestrator gone", func(t *testing.T) {
		lis, err := netListen()
		if err != nil {
			t.Fatal(err)
		}
		dead := lis.Addr().String()
		lis.Close()
		base := startGateway(t, gatewayEnv(&testOrchestrator{addr: dead}))
		if resp := request(t, http.MethodGet, base+"/readyz", "", ""); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503", resp.StatusCode)
		}
	})
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestStreamErrors shows a gRPC error before the first event answered as JSON
// with its HTTP status, and one after it as an error event.
func TestStreamErrors(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	base := startGateway(t, gatewayEnv(orch))
	session := createSession(t, base, aliceKey)

	resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":""}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("empty prompt: status %d, want 400", resp.StatusCode)
	}
	if e := apiErrorOf(t, resp); e.Status != "INVALID_ARGUMENT" || !strings.Contains(e.Message, "prompt") {
		t.Errorf("error %+v", e)
	}

	// Closing the orchestrator mid-run cuts the stream with Unavailable.
	resp = request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"add a box"}`)
	var last sseFrame
	newSSEReader(resp.Body).each(t, func(f sseFrame) {
		if f.event == "tool_call" {
			orch.srv.Stop()
		}
		last = f
	})
	if last.event != "error" || last.id != "" {
		t.Fatalf("last frame %+v, want an error event without id", last)
	}
	var c agentv1.StreamChunk
	if err := protojson.Unmarshal([]byte(last.data), &c); err != nil {
		t.Fatal(err)
	}
	if c.GetError().GetCode() != agentv1.ErrorCode_ERROR_CODE_REPLICA_LOST || !c.GetError().GetRetryable() {
		t.Errorf("error chunk %v", c.GetError())
	}
}

// TestAuthModes shows the three ways the gateway admits callers.
func TestAuthModes(t *testing.T) {
	stack := startRealStack(t)
	t.Run("dev mode admits loopback as local", func(t *testing.T) {
		env := realGatewayEnv(stack, "NEXUS_DEV_MODE", "true")
		delete(env, "NEXUS_API_KEYS")
		base := startGateway(t, env)
		id := createSession(t, base, "")
		if s := decodeJSON(t, request(t, http.MethodGet, base+"/v1/sessions/"+id, "", "")); s["owner"] != "local" {
			t.Errorf("owner %v, want local", s["owner"])
		}
	})
	t.Run("dev mode refuses a bearer token that is not a configured key", func(t *testing.T) {
		env := realGatewayEnv(stack, "NEXUS_DEV_MODE", "true")
		delete(env, "NEXUS_API_KEYS")
		base := startGateway(t, env)
		for _, path := range []string{"/v1/models", "/v1/sessions"} {
			resp := request(t, http.MethodGet, base+path, "not-a-key", "")
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s with a bogus bearer token: status %d, want 401", path, resp.StatusCode)
				continue
			}
			if e := apiErrorOf(t, resp); !strings.Contains(e.Message, "not a configured key") {
				t.Errorf("GET %s: %q does not say the token is not a configured key", path, e.Message)
			}
		}
		mcp := request(t, http.MethodPost, base+"/mcp", "not-a-key", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Accept", "application/json, text/event-stream")
		if mcp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST /mcp with a bogus bearer token: status %d, want 401", mcp.StatusCode)
		}
	})
	t.Run("api key names the owner", func(t *testing.T) {
		base := startGateway(t, realGatewayEnv(stack))
		id := createSession(t, base, aliceKey)
		if s := decodeJSON(t, request(t, http.MethodGet, base+"/v1/sessions/"+id, aliceKey, "")); s["owner"] != "key:alice" {
			t.Errorf("owner %v, want key:alice", s["owner"])
		}
	})
	t.Run("keys configured in dev mode still required", func(t *testing.T) {
		base := startGateway(t, realGatewayEnv(stack, "NEXUS_DEV_MODE", "true"))
		if resp := request(t, http.MethodGet, base+"/v1/models", "", ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", resp.StatusCode)
		}
	})
	t.Run("no keys and no dev mode refuses to start", func(t *testing.T) {
		env := realGatewayEnv(stack)
		delete(env, "NEXUS_API_KEYS")
		lis, err := netListen()
		if err != nil {
			t.Fatal(err)
		}
		err = ServeOn(t.Context(), config.Map(env), lis)
		if err == nil || !strings.Contains(err.Error(), "NEXUS_API_KEYS") {
			t.Fatalf("err %v, want one naming NEXUS_API_KEYS", err)
		}
	})
	t.Run("malformed keys", func(t *testing.T) {
		_, err := app.NewEnv(t.Context(), ServiceName, config.Map(map[string]string{"NEXUS_API_KEYS": "a:b,nocolon"}))
		if err == nil || !strings.Contains(err.Error(), "entry 2") {
			t.Fatalf("err %v", err)
		}
	})
}

// TestCORS shows preflights answered for configured origins only.
func TestCORS(t *testing.T) {
	base := startGateway(t, realGatewayEnv(startRealStack(t), "NEXUS_CORS_ORIGINS", "http://app.example"))
	tests := []struct {
		origin      string
		status      int
		allowOrigin string
	}{
		{"http://app.example", http.StatusNoContent, "http://app.example"},
		{"http://evil.example", http.StatusForbidden, ""},
	}
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
			resp := request(t, http.MethodOptions, base+"/v1/sessions", "", "", "Origin", tt.origin, "Access-Control-Request-Method", "POST")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tt.allowOrigin {
				t.Errorf("Allow-Origin %q, want %q", got, tt.allowOrigin)
			}
		})
	}
}

// TestHostPairing shows the dev pairing route served only when configured.
func TestHostPairing(t *testing.T) {
	stack := startRealStack(t)
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_DEV_HOST_URL", "http://127.0.0.1:7300", "NEXUS_DEV_HOST_TOKEN", "pair-1",
		"NEXUS_DEV_PAIRING_SECRET", "s3cret"))
	got := decodeJSON(t, request(t, http.MethodGet, base+"/v1/dev/host-pairing", aliceKey, "", "X-Nexus-Pairing-Secret", "s3cret"))
	if fmt.Sprint(got) != fmt.Sprint(map[string]any{"hostUrl": "http://127.0.0.1:7300", "hostToken": "pair-1"}) {
		t.Errorf("pairing %v", got)
	}
	for _, secret := range []string{"", "wrong"} {
		resp := request(t, http.MethodGet, base+"/v1/dev/host-pairing", aliceKey, "", "X-Nexus-Pairing-Secret", secret)
		if e := apiErrorOf(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(e.Message, "pairing secret") {
			t.Errorf("secret %q: status %d %q, want 403 naming the pairing secret", secret, resp.StatusCode, e.Message)
		}
	}
	bare := startGateway(t, realGatewayEnv(stack))
	if resp := request(t, http.MethodGet, bare+"/v1/dev/host-pairing", aliceKey, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unconfigured: status %d, want 404", resp.StatusCode)
	}
}

func readIDs(t *testing.T, resp *http.Response) []string {
	t.Helper()
	var out []string
	newSSEReader(resp.Body).each(t, func(f sseFrame) {
		if f.id != "" {
			out = append(out, f.id+" "+f.event)
		}
	})
	return out
}

func TestRouteOf(t *testing.T) {
	tests := map[string]string{
		"/v1/sessions":                  "/v1/sessions",
		"/v1/sessions/s_1":              "/v1/sessions/{id}",
		"/v1/sessions/s_1/runs":         "/v1/sessions/{id}/runs",
		"/v1/sessions/s_1:cancel":       "/v1/sessions/{id}:cancel",
		"/v1/runs/r_9/events":           "/v1/runs/{id}/events",
		"/v1/sessions/s_1/tool-results": "/v1/sessions/{id}/tool-results",
		"/healthz":                      "/healthz",
	}
	for path, want := range tests {
		t.Run(path, func(t *testing.T) {
			if got := routeOf(path); got != want {
				t.Errorf("routeOf(%q) = %q, want %q", path, got, want)
			}
		})
	}
}
