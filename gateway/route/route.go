// Package route is the gateway's one route table: for each route of the
// public API its operation, the message its body decodes into, the limit
// its body is held to and the credentials it admits. The gateway's front
// door reads it once per request; the OpenAPI builder writes the document's
// bodies and security from it.
package route

import (
	"net/http"
	"strings"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// Body is the limit a route's body is held to.
type Body int

const (
	// JSON is a JSON body under NEXUS_MAX_BODY_BYTES (and none, for a
	// route that takes none: a body sent anyway is held to the same limit).
	JSON Body = iota
	// ToolResult is a tool result under NEXUS_MAX_TOOL_RESULT_BYTES.
	ToolResult
	// Document is a file's bytes under NEXUS_MAX_DOCUMENT_BYTES, not JSON.
	Document
)

// Credentials is the set of credentials a route admits.
type Credentials uint8

const (
	// UserCredential is a user's API key or OIDC token (or, in dev mode,
	// a loopback caller without one).
	UserCredential Credentials = 1 << iota
	// HostToken is a linked host runtime's token, checked with the
	// orchestrator before the body is read.
	HostToken
	// NoCredential admits a caller that has none yet: a runtime pairing.
	NoCredential
)

// Route is one route of the gateway's public API.
type Route struct {
	// Method and Pattern, as the protos' HTTP annotations write them
	// ("/v1/sessions/{session_id}:cancel").
	Method, Pattern string
	// Operation is the route's operationId in the OpenAPI document.
	Operation string
	// Request is the message a JSON body decodes into, or nil when the
	// route takes none or takes bytes.
	Request func() proto.Message
	// Body is the limit the body is held to.
	Body Body
	// Admits is the credentials the route takes.
	Admits Credentials
}

// TakesBody says whether the route takes a body.
func (r *Route) TakesBody() bool {
	return r.Request != nil || r.Body == Document
}

// Table is every route of the public API, once.
func Table() []Route {
	msg := func(m proto.Message) func() proto.Message {
		return func() proto.Message { return m.ProtoReflect().New().Interface() }
	}
	const user, host, none = UserCredential, HostToken, NoCredential
	get, post, del, patch, put := http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPatch, http.MethodPut
	return []Route{
		{post, "/v1/sessions", "createSession", msg(&agentv1.CreateSessionRequest{}), JSON, user},
		{get, "/v1/sessions", "listSessions", nil, JSON, user},
		{get, "/v1/sessions/{session_id}", "getSession", nil, JSON, user},
		{patch, "/v1/sessions/{session_id}", "updateSession", msg(&agentv1.UpdateSessionRequest{}), JSON, user},
		{del, "/v1/sessions/{session_id}", "deleteSession", nil, JSON, user},
		{post, "/v1/sessions/{session_id}/runs", "run", msg(&agentv1.RunRequest{}), JSON, user},
		{get, "/v1/sessions/{session_id}/runs", "listRuns", nil, JSON, user},
		{post, "/v1/sessions/{session_id}/runs:start", "startRun", msg(&agentv1.StartRunRequest{}), JSON, user},
		{get, "/v1/runs/{run_id}/events", "streamRunEvents", nil, JSON, user},
		{post, "/v1/sessions/{session_id}/tool-results", SubmitToolResult, msg(&agentv1.SubmitToolResultRequest{}), ToolResult, user | host},
		{post, "/v1/sessions/{session_id}:cancel", "cancelRun", msg(&agentv1.CancelRunRequest{}), JSON, user},
		{get, "/v1/sessions/{session_id}/dispatches", "listDispatches", nil, JSON, user},
		{post, "/v1/sessions/{session_id}/tool-calls/{tool_call_id}:review", "reviewToolCall", msg(&agentv1.ReviewToolCallRequest{}), JSON, user},
		{get, "/v1/sessions/{session_id}/calls/{tool_call_id}/model", "getCallModel", nil, JSON, user},
		{get, "/v1/sessions/{session_id}/document", "getSessionDocument", nil, JSON, user},
		{put, "/v1/sessions/{session_id}/document", "putSessionDocument", nil, Document, host},
		{get, "/v1/models", "listModels", nil, JSON, user},
		{get, "/v1/hosts", "listHosts", nil, JSON, user},
		{del, "/v1/hosts/{host_id}", "hostLinkService_RevokeHost", nil, JSON, user},
		{post, "/v1/host-pairings", "hostLinkService_StartPairing", msg(&agentv1.StartPairingRequest{}), JSON, none},
		{post, "/v1/host-pairings:claim", "hostLinkService_ClaimPairing", msg(&agentv1.ClaimPairingRequest{}), JSON, none},
		{post, "/v1/host-pairings:approve", "hostLinkService_ApprovePairing", msg(&agentv1.ApprovePairingRequest{}), JSON, user},
		{get, "/v1/host-pairings/{user_code}", "hostLinkService_GetPairing", nil, JSON, user},
		{get, "/v1/host-link", "hostLinkService_LinkHost", nil, JSON, host},
		{get, "/v1/dev/host-pairing", "devHostPairing", nil, JSON, user},
	}
}

// Finder finds the route of a request.
type Finder struct {
	routes []Route
	// other is the route of a path the table does not have: a user's
	// credential, a JSON body, decoded into nothing.
	other Route
}

// NewFinder finds routes in Table.
func NewFinder() *Finder {
	return &Finder{routes: Table(), other: Route{Body: JSON, Admits: UserCredential}}
}

// Match is the route of method and path, or the route of a path the table
// does not have (a user's credential, a JSON body decoded into nothing).
func (t *Finder) Match(method, path string) *Route {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	for i := range t.routes {
		if t.routes[i].Method == method && patternMatches(t.routes[i].Pattern, path) {
			return &t.routes[i]
		}
	}
	return &t.other
}

// Param is the value path gives the {name} segment of the route's pattern,
// or "" when it has none or path is not an instance of it.
func (r *Route) Param(path, name string) string {
	ps, xs := strings.Split(r.Pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) || !patternMatches(r.Pattern, path) {
		return ""
	}
	for i, p := range ps {
		if rest, ok := strings.CutPrefix(p, "{"+name+"}"); ok {
			return strings.TrimSuffix(xs[i], rest)
		}
	}
	return ""
}

// patternMatches says whether path is an instance of pattern: a {name}
// segment stands for one non-empty segment without ':' or '/'; a last
// segment may end in a ":verb".
func patternMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		x := xs[i]
		if !strings.HasPrefix(p, "{") {
			if p != x {
				return false
			}
			continue
		}
		_, verb, _ := strings.Cut(p, "}")
		id, ok := strings.CutSuffix(x, verb)
		if !ok || id == "" || strings.Contains(id, ":") {
			return false
		}
	}
	return true
}

// SubmitToolResult is the operation a linked host posts its results to.
const SubmitToolResult = "submitToolResult"
