package builder

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"nexus.local/gateway/route"
)

// ProblemMediaType is the media type of every error body (RFC 9457).
const ProblemMediaType = "application/problem+json"

func operation(path, method string, in obj, routes map[string]route.Route) (obj, error) {
	id, _ := in["operationId"].(string)
	id, _ = strings.CutPrefix(id, "OrchestratorService_")
	rt, err := routeOf(routes, lowerFirst(id), method, path)
	if err != nil {
		return nil, err
	}
	out := obj{
		"operationId": lowerFirst(id),
		"summary":     firstSentence(in["summary"]),
		"description": in["summary"],
		"tags":        []any{"Nexus"},
	}
	var params []any
	for _, p := range asList(in["parameters"]) {
		p := p.(obj)
		if p["in"] == "body" {
			out["requestBody"] = obj{
				"required": true,
				"content":  obj{"application/json": obj{"schema": p["schema"]}},
			}
			continue
		}
		name := p["name"].(string)
		// The rejoin route reads where to resume from the SSE header (or
		// its query twin), not from the request message's after_seq.
		if path == EventsPath && name == "afterSeq" {
			continue
		}
		params = append(params, parameter(p))
	}
	resp, ok := in["responses"].(obj)["200"].(obj)
	if !ok {
		return nil, fmt.Errorf("no 200 response")
	}
	responses := obj{}
	switch {
	case path == RunPath && method == http.MethodPost:
		responses["200"] = eventStreamResponse()
	case path == "/v1/sessions/{sessionId}" && method == http.MethodDelete:
		responses["204"] = obj{"description": "Deleted: the session's hot state and its run history are gone (also when only the history was left). No body."}
	case path == DocumentPath && method == http.MethodGet:
		responses["200"] = documentResponse()
	case path == LinkPath && method == http.MethodGet:
		responses["200"] = linkStreamResponse()
	case path == EventsPath && method == http.MethodGet:
		responses["200"] = eventStreamResponse()
		params = append(params, resumeParameters()...)
	default:
		responses["200"] = obj{
			"description": "OK.",
			"content":     obj{"application/json": obj{"schema": resp["schema"]}},
		}
	}
	if rt.TakesBody() != (out["requestBody"] != nil) {
		return nil, fmt.Errorf("the route table says the body is taken %v, the protos %v", rt.TakesBody(), out["requestBody"] != nil)
	}
	if sec, ok := security(rt); ok {
		out["security"] = sec
	}
	for _, code := range errorStatuses(path, method, rt) {
		responses[strconv.Itoa(code)] = obj{"$ref": "#/components/responses/" + responseName(code)}
	}
	out["responses"] = responses
	if len(params) > 0 {
		out["parameters"] = params
	}
	return out, nil
}

// parameter converts a Swagger 2 path or query parameter.
func parameter(p obj) obj {
	schema := obj{}
	for _, k := range []string{"type", "format", "enum", "default", "items", "pattern"} {
		if v, ok := p[k]; ok {
			schema[k] = v
		}
	}
	out := obj{"name": p["name"], "in": p["in"], "schema": schema}
	if d, ok := p["description"]; ok {
		out["description"] = d
	}
	if p["in"] == "path" {
		out["required"] = true
	} else if r, ok := p["required"].(bool); ok && r {
		out["required"] = true
	}
	if p["collectionFormat"] == "multi" {
		out["style"], out["explode"] = "form", true
	}
	return out
}

// resumeParameters say where a rejoined stream starts.
func resumeParameters() []any {
	desc := "The id of the last event the client has; the stream carries the events after it, then follows the run live. Absent or 0: from the first event."
	return []any{
		obj{"name": "Last-Event-ID", "in": "header", "description": desc + " EventSource sends it when it reconnects.",
			"schema": obj{"type": "integer", "format": "int64", "minimum": 0}},
		obj{"name": "lastEventId", "in": "query", "description": desc + " For clients that cannot set headers; the header wins when both are sent.",
			"schema": obj{"type": "integer", "format": "int64", "minimum": 0}},
	}
}

// eventStreamResponse is the 200 of a run's stream.
func eventStreamResponse() obj {
	events := obj{}
	for _, e := range Events() {
		events[e.Name] = obj{"$ref": "#/components/schemas/" + e.Schema}
	}
	return obj{
		"description": "The run's events as server-sent events, until the run ends (a complete or error event) or the client goes away; the run goes on without it. " +
			"Frames: `event: <type>`, `id: <seq>`, `data: <JSON>`; the schema of each frame's data is RunEvent, and x-sse-events names the schema of each event type.",
		"headers": obj{
			"Cache-Control": obj{"schema": obj{"type": "string", "enum": []any{"no-cache"}}},
		},
		"content": obj{"text/event-stream": obj{
			"schema":       obj{"$ref": "#/components/schemas/RunEvent"},
			"x-sse-events": events,
		}},
	}
}

// linkStreamResponse is the 200 of the host link (gateway/hostlink.go): a
// `linked` event naming the host, then a `call` event per call of its
// delivery log, its id the call's seq in that log (Last-Event-ID resumes).
func linkStreamResponse() obj {
	return obj{
		"description": "The linked host's calls as server-sent events, for as long as the host stays connected: first `event: linked` (data: LinkedHost), then `event: call`, `id: <seq in the host's delivery log>`, `data: <HostCall>` for every call still without a result, offered again after a reconnect.",
		"headers": obj{
			"Cache-Control": obj{"schema": obj{"type": "string", "enum": []any{"no-cache"}}},
		},
		"content": obj{"text/event-stream": obj{
			"schema":       obj{"$ref": "#/components/schemas/HostCall"},
			"x-sse-events": obj{"linked": obj{"$ref": "#/components/schemas/LinkedHost"}, "call": obj{"$ref": "#/components/schemas/HostCall"}},
		}},
	}
}

// routeOf is the gateway's route of an operation, which must have the
// operation's method and path.
func routeOf(routes map[string]route.Route, id, method, path string) (route.Route, error) {
	rt, ok := routes[id]
	if !ok {
		return rt, fmt.Errorf("operation %s is not in the gateway's route table (gateway/route)", id)
	}
	if rt.Method != method || openAPIPath(rt.Pattern) != path {
		return rt, fmt.Errorf("operation %s is %s %s in the route table", id, rt.Method, rt.Pattern)
	}
	return rt, nil
}

// openAPIPath writes a route's pattern the way the document does, its
// parameters in camelCase: /v1/sessions/{session_id} is /v1/sessions/{sessionId}.
func openAPIPath(pattern string) string {
	var b strings.Builder
	for {
		open := strings.Index(pattern, "{")
		if open < 0 {
			b.WriteString(pattern)
			return b.String()
		}
		end := strings.Index(pattern[open:], "}") + open
		b.WriteString(pattern[:open+1] + camel(pattern[open+1:end]))
		pattern = pattern[end:]
	}
}

// routeTable is the gateway's routes by operation.
func routeTable() map[string]route.Route {
	out := map[string]route.Route{}
	for _, rt := range route.Table() {
		out[rt.Operation] = rt
	}
	return out
}

// security is what a route's credentials say in the document, when it is
// not the document's default (a user's bearer token).
func security(rt route.Route) ([]any, bool) {
	var out []any
	if rt.Admits&route.UserCredential != 0 {
		out = append(out, obj{"bearerAuth": []any{}})
	}
	if rt.Admits&route.HostToken != 0 {
		out = append(out, obj{"hostToken": []any{}})
	}
	if rt.Admits == route.NoCredential {
		// A runtime pairing has no credential yet.
		return []any{}, true
	}
	if rt.Admits == route.UserCredential {
		return nil, false
	}
	return out, true
}

// errorStatuses are the error statuses an operation answers, as the gateway
// produces them: its own refusals, then what the orchestrator says.
func errorStatuses(path, method string, rt route.Route) []int {
	// Every /v1 route: a bad request (a GET with a body, a bad query
	// value), no or a bad credential, a cross-origin request from an origin
	// not allowed or a forbidden action, the rate limit, and the services
	// behind the gateway failing or away.
	codes := []int{400, 401, 403, 429, 500, 503, 504}
	if rt.TakesBody() {
		// The body did not arrive in time, or is over a size limit.
		codes = append(codes, 408, 413)
	}
	if strings.Contains(path, "{") {
		// The session or run does not exist, or is another user's.
		codes = append(codes, 404)
	}
	switch rt.Operation {
	case "run", "startRun", route.SubmitToolResult, "reviewToolCall", "deleteSession", "updateSession", "cancelRun":
		// The request conflicts with the session's state: a run is
		// active, the call is not pending or was decided otherwise.
		codes = append(codes, 409)
	}
	sort.Ints(codes)
	return codes
}

// errorText says what each error status means across the API.
func errorText() map[int]string {
	return map[int]string{
		400: "The request is malformed: a body that is not the operation's JSON (an unknown field is named), a missing or bad value, a JSON nesting over NEXUS_MAX_JSON_DEPTH (limit says so), a GET with a body.",
		401: "No credential, or one that is not valid (checked before the body is read). WWW-Authenticate names the Bearer scheme.",
		403: "The caller may not do this: a cross-origin request from an origin not in NEXUS_CORS_ORIGINS, a host token on a route only users call or a user's credential on one only linked hosts call, a result token that does not match the call.",
		404: "The session or run does not exist, or belongs to another user (the two look the same), or no route has this path.",
		405: "The path does not take this method; Allow names the ones it takes.",
		408: "The request body did not arrive within NEXUS_HTTP_BODY_TIMEOUT.",
		409: "The request conflicts with the session's state: a run is active already (REFUSAL_REASON_RUN_ACTIVE), the tool call is not the pending one (REFUSAL_REASON_NO_PENDING_CALL), the call was decided with another result or verdict (REFUSAL_REASON_ALREADY_DECIDED) or is not awaiting review (REFUSAL_REASON_NOT_AWAITING_REVIEW), several linked hosts could take the session (REFUSAL_REASON_HOST_AMBIGUOUS). Code ABORTED. Read the session, then retry or give up.",
		413: "The body, prompt, tool result, an image or the number of images is over its limit; limit names it, its setting, the maximum and the value sent.",
		421: "The Host header is not in NEXUS_PUBLIC_HOSTS.",
		429: "Too many requests for this user (NEXUS_RATE_LIMIT_RPS, REFUSAL_REASON_RATE_LIMITED), too many open event streams (NEXUS_MAX_STREAMS_PER_USER, REFUSAL_REASON_LIMIT_REACHED), or too many failed authentications from this address (REFUSAL_REASON_AUTH_THROTTLED: a credential that passed lately is still checked). Retry-After says when to retry.",
		500: "The service failed to handle the request; retry, and report it if it persists. The detail is in the service's log.",
		503: "The service is unavailable right now; retry shortly.",
		504: "The service did not answer in time; retry shortly.",
	}
}

func responseName(code int) string {
	return "Error" + strconv.Itoa(code)
}

// errorResponses are the shared error responses, each with the Problem body.
func errorResponses() obj {
	out := obj{}
	for code, text := range errorText() {
		r := obj{
			"description": text,
			"content":     obj{ProblemMediaType: obj{"schema": obj{"$ref": "#/components/schemas/Problem"}}},
		}
		if code == 429 {
			r["headers"] = obj{"Retry-After": obj{"description": "Seconds to wait before retrying.", "schema": obj{"type": "integer"}}}
		}
		if code == 405 {
			r["headers"] = obj{"Allow": obj{"description": "The methods the path takes.", "schema": obj{"type": "string"}}}
		}
		out[responseName(code)] = r
	}
	return out
}

func securitySchemes() obj {
	return obj{
		"bearerAuth": obj{
			"type": "http", "scheme": "bearer",
			"description": "An API key from NEXUS_API_KEYS (the user is key:<name>), or an OIDC ID token for NEXUS_OIDC_AUDIENCE from NEXUS_OIDC_ISSUER (the user is oidc:<issuer>#<sub>).",
		},
		"hostToken": obj{
			"type": "http", "scheme": "bearer",
			"description": "A linked host runtime's token (nxh_...), from its pairing. It opens the host link, the results of the host's calls and the documents it saves, nothing else; it is checked before the body is read.",
		},
	}
}

// probePaths are the gateway's own routes beside the API.
func probePaths() obj {
	status := func(id, summary string, codes ...int) obj {
		responses := obj{}
		for _, c := range codes {
			r := obj{
				"description": http.StatusText(c) + ".",
				"content": obj{"application/json": obj{"schema": obj{
					"type": "object", "properties": obj{"status": obj{"type": "string"}, "orchestrator": obj{"type": "string"}},
					"required": []any{"status"},
				}}},
			}
			responses[strconv.Itoa(c)] = r
		}
		return obj{"get": obj{"operationId": id, "summary": summary, "tags": []any{"Nexus"}, "security": []any{}, "responses": responses}}
	}
	return obj{
		"/healthz": status("healthz", "Liveness: the gateway answers.", 200),
		"/readyz":  status("readyz", "Readiness: 200 while the orchestrator reports SERVING, 503 with the reason otherwise.", 200, 503),
		"/openapi.json": obj{"get": obj{
			"operationId": "openapi", "summary": "This document, with the version of the running build.", "tags": []any{"Nexus"}, "security": []any{},
			"responses": obj{"200": obj{"description": "The OpenAPI document.", "content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}},
		}},
	}
}

// extraSchemas are what the proto annotations cannot say: the gateway's
// error body and the events of a run's stream.
