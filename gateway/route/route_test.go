package route

import (
	"net/http"
	"testing"
)

// TestMatch: each route is found by its method and an instance of its
// pattern, verbs and ids told apart; a path the table lacks is the other
// route, a user's with a JSON body.
func TestMatch(t *testing.T) {
	f := NewFinder()
	for _, c := range []struct {
		method, path, op string
	}{
		{http.MethodPost, "/v1/sessions", "createSession"},
		{http.MethodGet, "/v1/sessions/s_1", "getSession"},
		{http.MethodPost, "/v1/sessions/s_1:cancel", "cancelRun"},
		{http.MethodPost, "/v1/sessions/s_1/runs", "run"},
		{http.MethodPost, "/v1/sessions/s_1/runs:start", "startRun"},
		{http.MethodPost, "/v1/sessions/s_1/tool-results", SubmitToolResult},
		{http.MethodPost, "/v1/sessions/s_1/tool-calls/toolu_1:review", "reviewToolCall"},
		{http.MethodPut, "/v1/sessions/s_1/document", "putSessionDocument"},
		{http.MethodHead, "/v1/models", "listModels"},
		{http.MethodPost, "/v1/host-pairings:claim", "hostLinkService_ClaimPairing"},
		{http.MethodPost, "/v1/sessions/:cancel", ""},
		{http.MethodPost, "/v1/sessions/s_1/tool-results/x", ""},
		{http.MethodDelete, "/v1/models", ""},
	} {
		rt := f.Match(c.method, c.path)
		if rt.Operation != c.op {
			t.Errorf("%s %s: %q, want %q", c.method, c.path, rt.Operation, c.op)
		}
		if c.op == "" && (rt.Admits != UserCredential || rt.Body != JSON || rt.Request != nil) {
			t.Errorf("%s %s: the other route is %+v", c.method, c.path, rt)
		}
	}
	if got := f.Match(http.MethodPost, "/v1/sessions/s_1:cancel").Param("/v1/sessions/s_1:cancel", "session_id"); got != "s_1" {
		t.Errorf("session_id of a cancel: %q", got)
	}
	if got := f.Match(http.MethodPost, "/v1/sessions/s_1/tool-calls/toolu_1:review").Param("/v1/sessions/s_1/tool-calls/toolu_1:review", "tool_call_id"); got != "toolu_1" {
		t.Errorf("tool_call_id of a review: %q", got)
	}
}

// TestEveryOperationOnce: an operation names one route, and a route with a
// body names the message it decodes into or takes bytes.
func TestEveryOperationOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, rt := range Table() {
		if seen[rt.Operation] {
			t.Errorf("operation %s is in the table twice", rt.Operation)
		}
		seen[rt.Operation] = true
		if rt.Admits == 0 {
			t.Errorf("%s admits no credential", rt.Operation)
		}
		if rt.Request != nil && rt.Request() == rt.Request() {
			t.Errorf("%s hands out one message to every request", rt.Operation)
		}
	}
}
