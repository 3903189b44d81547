package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"

	"nexus.local/gateway/openapi/builder"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/version"
)

// TestErrorContract shows, against the real orchestrator, the statuses a
// client author reads in the OpenAPI document: a conflict with the
// session's state is 409 ABORTED (a second run on a busy session, a result
// for a call that is not pending, deleting a session while it runs), 404
// NOT_FOUND, 405 METHOD_NOT_ALLOWED, 413 REQUEST_ENTITY_TOO_LARGE, and an
// unknown JSON field is 400 naming it, on every body route.
func TestErrorContract(t *testing.T) {
	stack := startRealStack(t)
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_MAX_PROMPT_BYTES", "100"))
	// A run that waits on its tool call keeps the session busy.
	session, rd, pending := startRunToToolCall(t, base, "REVIEW_POLICY_NONE")

	tests := []struct {
		name, method, path, body string
		status                   int
		apiStatus                string
		// mentions is what the message must name.
		mentions string
	}{
		{"second run on a busy session", http.MethodPost, "/v1/sessions/" + session + "/runs", `{"prompt":"again"}`, 409, "ABORTED", "active run"},
		{"second run started on a busy session", http.MethodPost, "/v1/sessions/" + session + "/runs:start", `{"prompt":"again"}`, 409, "ABORTED", "active run"},
		{"result for a call that is not pending", http.MethodPost, "/v1/sessions/" + session + "/tool-results",
			`{"toolCallId":"call_nope","resultToken":"` + pending.GetResultToken() + `","result":{"committed":true}}`, 409, "ABORTED", "call_nope"},
		{"delete a running session", http.MethodDelete, "/v1/sessions/" + session, "", 409, "ABORTED", "active run"},
		{"unknown session", http.MethodGet, "/v1/sessions/nope", "", 404, "NOT_FOUND", "nope"},
		{"unknown run", http.MethodGet, "/v1/runs/nope/events", "", 404, "NOT_FOUND", "nope"},
		{"wrong method on an api route", http.MethodDelete, "/v1/models", "", 405, "METHOD_NOT_ALLOWED", "DELETE"},
		{"wrong method on a probe", http.MethodPost, "/healthz", "", 405, "METHOD_NOT_ALLOWED", "POST"},
		{"prompt over its limit", http.MethodPost, "/v1/sessions/" + session + "/runs", `{"prompt":"` + strings.Repeat("a", 101) + `"}`, 413, "REQUEST_ENTITY_TOO_LARGE", "NEXUS_MAX_PROMPT_BYTES"},
		{"unknown field creating a session", http.MethodPost, "/v1/sessions", `{"hostApp":"freecad","colour":"red"}`, 400, "INVALID_ARGUMENT", `"colour"`},
		{"unknown field starting a run", http.MethodPost, "/v1/sessions/" + session + "/runs", `{"prompt":"x","temprature":1}`, 400, "INVALID_ARGUMENT", `"temprature"`},
		{"unknown field updating a session", http.MethodPatch, "/v1/sessions/" + session, `{"reviewPolicy":"REVIEW_POLICY_NONE","policy":"none"}`, 400, "INVALID_ARGUMENT", `"policy"`},
		{"unknown field reviewing a call", http.MethodPost, "/v1/sessions/" + session + "/tool-calls/" + pending.GetToolCallId() + ":review", `{"verdict":"REVIEW_VERDICT_APPROVE","why":"ok"}`, 400, "INVALID_ARGUMENT", `"why"`},
		{"unknown query parameter", http.MethodGet, "/v1/sessions?pagesize=2", "", 400, "INVALID_ARGUMENT", `"pagesize"`},
		{"unknown query parameter of a session's runs", http.MethodGet, "/v1/sessions/" + session + "/runs?page=2", "", 400, "INVALID_ARGUMENT", `"page"`},
		{"a model state that is neither before nor after", http.MethodGet, "/v1/sessions/" + session + "/calls/" + pending.GetToolCallId() + "/model?state=during", "", 400, "INVALID_ARGUMENT", `"during"`},
		{"unknown nested field in a result", http.MethodPost, "/v1/sessions/" + session + "/tool-results",
			`{"toolCallId":"` + pending.GetToolCallId() + `","resultToken":"t","result":{"comitted":true}}`, 400, "INVALID_ARGUMENT", `"comitted"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := request(t, tt.method, base+tt.path, aliceKey, tt.body)
			if resp.StatusCode != tt.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			e := apiErrorOf(t, resp)
			if e.Status != tt.apiStatus || !strings.Contains(e.Message, tt.mentions) {
				t.Errorf("error %+v, want status %s and a message naming %s", e, tt.apiStatus, tt.mentions)
			}
			if !slices.Contains(builder.ErrorStatuses(), e.Status) {
				t.Errorf("status %s is not in the document's ApiError enum", e.Status)
			}
			t.Logf("%d %s: %s", resp.StatusCode, e.Status, e.Message)
		})
	}

	// The run goes on: the pending call's result is taken, the run completes.
	body, _ := protojson.Marshal(&agentv1.SubmitToolResultRequest{ToolCallId: pending.GetToolCallId(), ResultToken: pending.GetResultToken(),
		Result: mustHostResult(t, `{"committed":true,"changes":{"added":["Box"]}}`)})
	if r := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/tool-results", aliceKey, string(body)); r.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(r.Body)
		t.Fatalf("tool result: %d %s", r.StatusCode, b)
	}
	if last := rd.lastEvent(t).event; last != "complete" {
		t.Errorf("the run's last event is %q, want complete", last)
	}
}

// TestPagination shows the list routes take pageSize and pageToken from the
// query and answer nextPageToken, walking every session once.
func TestPagination(t *testing.T) {
	base := startGateway(t, realGatewayEnv(startRealStack(t)))
	created := map[string]bool{}
	for range 5 {
		created[createSession(t, base, aliceKey)] = true
	}
	seen := map[string]bool{}
	token, pages := "", 0
	for {
		url := base + "/v1/sessions?pageSize=2"
		if token != "" {
			url += "&pageToken=" + token
		}
		resp := request(t, http.MethodGet, url, aliceKey, "")
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("list sessions: %d %s", resp.StatusCode, b)
		}
		var page struct {
			Sessions []struct {
				SessionID string `json:"sessionId"`
			} `json:"sessions"`
			NextPageToken string `json:"nextPageToken"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Sessions) > 2 {
			t.Fatalf("page %d has %d sessions, over pageSize 2", pages, len(page.Sessions))
		}
		for _, s := range page.Sessions {
			if seen[s.SessionID] {
				t.Errorf("session %s on two pages", s.SessionID)
			}
			seen[s.SessionID] = true
		}
		if page.NextPageToken == "" || pages > 10 {
			break
		}
		token = page.NextPageToken
	}
	if pages != 3 || len(seen) != len(created) {
		t.Errorf("%d pages, %d sessions seen, want 3 pages and the %d created", pages, len(seen), len(created))
	}
	t.Logf("5 sessions in %d pages of at most 2", pages)

	resp := request(t, http.MethodGet, base+"/v1/sessions?pageSize=-1", aliceKey, "")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("pageSize=-1: status %d, want 400", resp.StatusCode)
	}
}

// TestStatusNamesAreDocumented shows every status an error can say is in
// the document's ApiError enum, and that it agrees with its HTTP status.
func TestStatusNamesAreDocumented(t *testing.T) {
	for c := codes.OK + 1; c <= codes.Unauthenticated; c++ {
		t.Run(c.String(), func(t *testing.T) {
			httpStatus := httpStatusOf(c)
			name := statusName(httpStatus, c)
			if !slices.Contains(builder.ErrorStatuses(), name) {
				t.Errorf("code %s answers %d %s, not in the document", c, httpStatus, name)
			}
			if httpStatus == http.StatusConflict && name != "ABORTED" {
				t.Errorf("code %s answers 409 %s", c, name)
			}
		})
	}
	// The orchestrator has said each of these for a conflict with a
	// session's state; a client sees one answer.
	for _, c := range []codes.Code{codes.FailedPrecondition, codes.Aborted, codes.AlreadyExists} {
		if s := httpStatusOf(c); s != http.StatusConflict || statusName(s, c) != "ABORTED" {
			t.Errorf("code %s answers %d %s, want 409 ABORTED", c, s, statusName(s, c))
		}
	}
	for _, s := range []int{400, 401, 403, 404, 405, 408, 409, 413, 421, 429} {
		if name := statusName(s, codes.InvalidArgument); !slices.Contains(builder.ErrorStatuses(), name) {
			t.Errorf("HTTP %d answers %s, not in the document", s, name)
		}
	}
}

// TestOpenAPIServed shows /openapi.json is the OpenAPI 3 document with the
// running build's version.
func TestOpenAPIServed(t *testing.T) {
	base := startGateway(t, gatewayEnv(startTestOrchestrator(t, toolRunScript)))
	resp := request(t, http.MethodGet, base+"/openapi.json", "", "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	doc := decodeJSON(t, resp)
	info, _ := doc["info"].(map[string]any)
	if !strings.HasPrefix(doc["openapi"].(string), "3.0.") || info["title"] != "Nexus API" || info["version"] != version.String() {
		t.Errorf("openapi %v, info %v; want 3.0.x, Nexus API, %s", doc["openapi"], info, version.String())
	}
}
