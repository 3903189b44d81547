package gateway

import (
	"net/http"
	"strings"
	"testing"

	"nexus.local/gateway/mcpserver"
	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// TestEachRefusalHasItsReason answers each refusal the gateway gives, its
// own and the orchestrator's it passes on, and checks the problem's HTTP
// status and reason (apiErrorOf checks the problem's shape).
func TestEachRefusalHasItsReason(t *testing.T) {
	stack := startRealStack(t)
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_RATE_LIMIT_RPS", "0", "NEXUS_MAX_PROMPT_BYTES", "100",
		"NEXUS_DEV_HOST_URL", "http://127.0.0.1:1", "NEXUS_DEV_PAIRING_SECRET", "s3cret"))
	session := createSession(t, base, aliceKey)
	sid := base + "/v1/sessions/" + session
	token := randomHostToken(t)
	cases := []struct {
		name, method, url, key, body string
		header                       []string
		status                       int
		reason                       agentv1.RefusalReason
	}{
		// The gateway's own.
		{"no credential", http.MethodGet, base + "/v1/models", "", "", nil, 401, agentv1.RefusalReason_REFUSAL_REASON_UNAUTHENTICATED},
		{"a wrong key", http.MethodGet, base + "/v1/models", "wrong", "", nil, 401, agentv1.RefusalReason_REFUSAL_REASON_UNAUTHENTICATED},
		{"a made-up host token", http.MethodPost, sid + "/tool-results", token, `{}`, nil, 401, agentv1.RefusalReason_REFUSAL_REASON_HOST_TOKEN_UNKNOWN},
		{"a host token on a user's route", http.MethodGet, base + "/v1/models", token, "", nil, 403, agentv1.RefusalReason_REFUSAL_REASON_HOST_TOKEN_NOT_ALLOWED},
		{"a user's key on the host link", http.MethodGet, base + "/v1/host-link", aliceKey, "", nil, 403, agentv1.RefusalReason_REFUSAL_REASON_HOST_TOKEN_REQUIRED},
		{"a user's key handing a document over", http.MethodPut, sid + "/document?fileName=a.FCStd", aliceKey, "x", nil, 403, agentv1.RefusalReason_REFUSAL_REASON_HOST_TOKEN_REQUIRED},
		{"an origin not allowed", http.MethodGet, base + "/v1/models", aliceKey, "", []string{"Origin", "https://evil.example"}, 403, agentv1.RefusalReason_REFUSAL_REASON_ORIGIN_NOT_ALLOWED},
		{"a host name not served", http.MethodGet, base + "/v1/models", aliceKey, "", []string{"Host", "rebound.example"}, 421, agentv1.RefusalReason_REFUSAL_REASON_HOST_NOT_SERVED},
		{"a GET with a body", http.MethodGet, base + "/v1/models", aliceKey, "{}", nil, 400, agentv1.RefusalReason_REFUSAL_REASON_BAD_REQUEST},
		{"an unknown field", http.MethodPost, base + "/v1/sessions", aliceKey, `{"colour":"red"}`, nil, 400, agentv1.RefusalReason_REFUSAL_REASON_BAD_BODY},
		{"a body nested too deep", http.MethodPost, base + "/v1/sessions", aliceKey, strings.Repeat("[", 40) + strings.Repeat("]", 40), nil, 400, agentv1.RefusalReason_REFUSAL_REASON_LIMIT_REACHED},
		{"a prompt over its limit", http.MethodPost, sid + "/runs", aliceKey, `{"prompt":"` + strings.Repeat("p", 101) + `"}`, nil, 413, agentv1.RefusalReason_REFUSAL_REASON_LIMIT_REACHED},
		{"no route", http.MethodGet, base + "/v1/nothing", aliceKey, "", nil, 404, agentv1.RefusalReason_REFUSAL_REASON_ROUTE_NOT_FOUND},
		{"a method the route does not take", http.MethodPut, base + "/v1/models", aliceKey, "", nil, 405, agentv1.RefusalReason_REFUSAL_REASON_METHOD_NOT_ALLOWED},
		{"the dev pairing without its secret", http.MethodGet, base + "/v1/dev/host-pairing", aliceKey, "", nil, 403, agentv1.RefusalReason_REFUSAL_REASON_PAIRING_SECRET_REQUIRED},
		// The orchestrator's, passed on.
		{"another user's session", http.MethodGet, sid, bobKey, "", nil, 404, agentv1.RefusalReason_REFUSAL_REASON_SESSION_NOT_FOUND},
		{"an unknown run", http.MethodGet, base + "/v1/runs/r_nope/events", aliceKey, "", nil, 404, agentv1.RefusalReason_REFUSAL_REASON_RUN_NOT_FOUND},
		{"a result without its call", http.MethodPost, sid + "/tool-results", aliceKey, `{"resultToken":"t","result":{}}`, nil, 400, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD},
		{"a result for no pending call", http.MethodPost, sid + "/tool-results", aliceKey, `{"toolCallId":"toolu_nope","resultToken":"t","result":{}}`, nil, 409, agentv1.RefusalReason_REFUSAL_REASON_NO_PENDING_CALL},
		{"a review of no pending call", http.MethodPost, sid + "/tool-calls/toolu_nope:review", aliceKey, `{"verdict":"REVIEW_VERDICT_APPROVE"}`, nil, 409, agentv1.RefusalReason_REFUSAL_REASON_NO_PENDING_CALL},
		{"an unknown host application", http.MethodPost, base + "/v1/sessions", aliceKey, `{"hostApp":"blender"}`, nil, 400, agentv1.RefusalReason_REFUSAL_REASON_UNKNOWN_HOST_APP},
		{"an unknown model", http.MethodPost, base + "/v1/sessions", aliceKey, `{"hostApp":"freecad","model":"acme/nope"}`, nil, 400, agentv1.RefusalReason_REFUSAL_REASON_UNKNOWN_MODEL},
		{"no document yet", http.MethodGet, sid + "/document", aliceKey, "", nil, 404, agentv1.RefusalReason_REFUSAL_REASON_NO_DOCUMENT},
		{"an unknown host", http.MethodDelete, base + "/v1/hosts/h_nope", aliceKey, "", nil, 404, agentv1.RefusalReason_REFUSAL_REASON_HOST_NOT_FOUND},
		{"an unknown pairing code", http.MethodPost, base + "/v1/host-pairings:approve", aliceKey, `{"userCode":"ABCD-EFGH"}`, nil, 404, agentv1.RefusalReason_REFUSAL_REASON_PAIRING_NOT_FOUND},
		{"a page token never given out", http.MethodGet, base + "/v1/sessions?pageToken=nope", aliceKey, "", nil, 400, agentv1.RefusalReason_REFUSAL_REASON_BAD_PAGE_TOKEN},
	}
	for _, c := range cases {
		resp := request(t, c.method, c.url, c.key, c.body, c.header...)
		if resp.StatusCode != c.status {
			t.Errorf("%s: HTTP %d, want %d", c.name, resp.StatusCode, c.status)
			continue
		}
		if e := apiErrorOf(t, resp); e.Reason != c.reason.String() {
			t.Errorf("%s: reason %s, want %s (%s)", c.name, e.Reason, c.reason, e.Message)
		}
	}

	t.Run("rate limit and throttle", func(t *testing.T) {
		base := startGateway(t, realGatewayEnv(stack, "NEXUS_RATE_LIMIT_RPS", "0.0002777", "NEXUS_RATE_LIMIT_BURST", "1",
			"NEXUS_AUTH_FAILURE_BURST", "1", "NEXUS_AUTH_FAILURES_PER_MINUTE", "0.001"))
		request(t, http.MethodGet, base+"/v1/models", aliceKey, "")
		if e := apiErrorOf(t, request(t, http.MethodGet, base+"/v1/models", aliceKey, "")); e.Code != 429 || e.Reason != agentv1.RefusalReason_REFUSAL_REASON_RATE_LIMITED.String() {
			t.Errorf("over the rate: %d %s", e.Code, e.Reason)
		}
		request(t, http.MethodGet, base+"/v1/models", "wrong", "")
		if e := apiErrorOf(t, request(t, http.MethodGet, base+"/v1/models", "wrong", "")); e.Code != 429 || e.Reason != agentv1.RefusalReason_REFUSAL_REASON_AUTH_THROTTLED.String() {
			t.Errorf("a throttled address: %d %s", e.Code, e.Reason)
		}
	})

	t.Run("orchestrator away", func(t *testing.T) {
		base, _ := startGatewayAlone(t)
		if e := apiErrorOf(t, request(t, http.MethodGet, base+"/v1/models", aliceKey, "")); e.Code != 503 || e.Reason != agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE.String() {
			t.Errorf("the orchestrator away: %d %s", e.Code, e.Reason)
		}
	})
}

// TestRefusalReasonReachesAnMCPClient: a tool call the orchestrator refuses
// is a tool error whose _meta carries the refusal's reason as the enum
// value.
func TestRefusalReasonReachesAnMCPClient(t *testing.T) {
	base := startGateway(t, realGatewayEnv(startRealStack(t), "NEXUS_RATE_LIMIT_RPS", "0"))
	cs, err := mcpConnect(t, base, aliceKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool   string
		args   map[string]any
		reason agentv1.RefusalReason
	}{
		{"run", map[string]any{"prompt": "add a box", "sessionId": "s_nope"}, agentv1.RefusalReason_REFUSAL_REASON_SESSION_NOT_FOUND},
		{"run", map[string]any{"prompt": "add a box", "hostApp": "blender"}, agentv1.RefusalReason_REFUSAL_REASON_UNKNOWN_HOST_APP},
	} {
		res := callTool(t, cs, c.tool, c.args)
		if !res.IsError || res.Meta[mcpserver.ReasonKey] != c.reason.String() {
			t.Errorf("%s %v: error %v, _meta %v, want the reason %s: %s", c.tool, c.args, res.IsError, res.Meta, c.reason, resultText(res))
		}
	}
}
