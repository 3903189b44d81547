package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// OpenAPIVersion is the version of the OpenAPI specification the document
// follows: 3.0 is what the TypeScript (and most other) generators read, and
// unlike Swagger 2 it gives one response its own media type.
const OpenAPIVersion = "3.0.3"

// Title is the document's title.
const Title = "Nexus API"

// DevVersion is the version written into the committed document; the
// gateway serves its own build version in its place.
const DevVersion = "dev"

// Paths of the two routes that answer server-sent events.
const (
	runPath    = "/v1/sessions/{sessionId}/runs"
	eventsPath = "/v1/runs/{runId}/events"
)

// ErrorStatuses are the values an error's status takes: the gRPC code names
// of the Google API error model, and the HTTP names of the answers that model
// has no code of its own for. The gateway's tests check it never says another.
func ErrorStatuses() []string {
	return []string{
		"INVALID_ARGUMENT", "OUT_OF_RANGE", "UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND",
		"METHOD_NOT_ALLOWED", "REQUEST_TIMEOUT", "ABORTED", "REQUEST_ENTITY_TOO_LARGE", "MISDIRECTED_REQUEST",
		"RESOURCE_EXHAUSTED", "CANCELLED", "UNIMPLEMENTED", "INTERNAL", "UNKNOWN", "DATA_LOSS", "UNAVAILABLE",
		"DEADLINE_EXCEEDED",
	}
}

// Event is one SSE event type of a run's stream: the event name the gateway
// writes and the StreamChunk field it carries.
type Event struct {
	// Name is the SSE event name, the chunk's oneof field.
	Name string
	// Field is the JSON name of that field in the frame's data.
	Field string
	// Schema names the event's schema in components.
	Schema string
}

// Events are the event types of a run's stream, one per arm of the
// StreamChunk oneof, in the proto's order.
func Events() []Event {
	arms := []string{"metadata", "thinking", "message", "tool_input_delta", "tool_call", "complete", "error", "usage"}
	out := make([]Event, 0, len(arms))
	for _, a := range arms {
		out = append(out, Event{Name: a, Field: camel(a), Schema: pascal(a) + "Event"})
	}
	return out
}

// obj is one JSON object of the documents.
type obj = map[string]any

// Build converts the Swagger 2 document protoc-gen-openapiv2 writes from the
// proto annotations into the OpenAPI 3 document of what the gateway does:
// its title and version, bearer security, the two event streams with a
// schema per event and their resume parameters, the gateway's error body on
// every error each route answers, and operation and schema names a client
// generator makes good types of.
func Build(swagger []byte, version string) ([]byte, error) {
	var in obj
	if err := json.Unmarshal(swagger, &in); err != nil {
		return nil, fmt.Errorf("read the swagger document: %w", err)
	}
	defs, _ := in["definitions"].(obj)
	paths, _ := in["paths"].(obj)
	if defs == nil || paths == nil {
		return nil, fmt.Errorf("the swagger document has no definitions or paths")
	}
	rename, err := schemaNames(defs)
	if err != nil {
		return nil, err
	}
	schemas := obj{}
	for name, def := range defs {
		schemas[rename[name]] = def
	}
	extra, err := extraSchemas(defs)
	if err != nil {
		return nil, err
	}
	for name, s := range extra {
		if _, ok := schemas[name]; ok {
			return nil, fmt.Errorf("schema %s is generated from the protos already", name)
		}
		schemas[name] = s
	}

	outPaths := obj{}
	for path, item := range paths {
		ops, _ := item.(obj)
		outItem := obj{}
		for method, op := range ops {
			o, err := operation(path, strings.ToUpper(method), op.(obj))
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", strings.ToUpper(method), path, err)
			}
			outItem[method] = o
		}
		outPaths[path] = outItem
	}
	for path, item := range probePaths() {
		outPaths[path] = item
	}

	doc := obj{
		"openapi": OpenAPIVersion,
		"info": obj{
			"title":       Title,
			"version":     version,
			"description": description,
		},
		"tags":     []any{obj{"name": "Nexus", "description": "Sessions, runs and their events, tool results, reviews, and the audit of what reached the host."}},
		"security": []any{obj{"bearerAuth": []any{}}},
		"paths":    outPaths,
		"components": obj{
			"schemas":         schemas,
			"responses":       errorResponses(),
			"securitySchemes": securitySchemes(),
		},
	}
	// References are rewritten last, over the whole document, so the
	// schemas added here may use the generated names or the new ones.
	doc = rewriteRefs(doc, rename).(obj)
	if err := prune(doc); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the document: %w", err)
	}
	return append(out, '\n'), nil
}

const description = `The public HTTP API of Nexus: sessions with a design application, runs of its agent streamed as server-sent events, tool results from the courier that carries scripts to the host, reviews of scripts, and the audit of what reached the host.

Authentication: ` + "`Authorization: Bearer <token>`" + ` with an API key (NEXUS_API_KEYS) or an OIDC ID token (NEXUS_OIDC_ISSUER). GET /v1/runs/{runId}/events also takes it as the ` + "`access_token`" + ` query parameter, for EventSource. A gateway in dev mode without keys admits loopback callers without one.

Errors: every error is an ApiError, ` + "`{\"error\": {\"code\", \"status\", \"message\", \"limit\"?}}`" + `. Any route also answers 421 to a Host header not in NEXUS_PUBLIC_HOSTS, and 405 (METHOD_NOT_ALLOWED, with Allow) to a method its path does not take.

Event streams: POST /v1/sessions/{sessionId}/runs and GET /v1/runs/{runId}/events answer text/event-stream. Each frame is ` + "`event: <type>`, `id: <seq>`, `data: <one JSON object>`" + `, a blank line; the first frame also carries ` + "`retry: 1000`" + `. The event types and the schema of each frame's data are listed under x-sse-events of the response. ` + "`: keepalive`" + ` comments come after every NEXUS_SSE_KEEPALIVE of silence. An error of the stream itself (the service went away) is an ` + "`error`" + ` event without an id. To resume, send the last id seen as Last-Event-ID (or ?lastEventId=) to GET /v1/runs/{runId}/events: the events after it follow, then the live run.`

// schemaNames maps the generated definition names (v1Session,
// nexusAgentV1Usage, OrchestratorServiceRunBody) to plain ones (Session,
// Usage, RunBody), refusing two that would meet.
func schemaNames(defs obj) (map[string]string, error) {
	rename := map[string]string{}
	taken := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		plain := name
		for _, p := range []string{"nexusAgentV1", "OrchestratorService", "v1"} {
			if rest, ok := strings.CutPrefix(plain, p); ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z' {
				plain = rest
				break
			}
		}
		if other, ok := taken[plain]; ok {
			return nil, fmt.Errorf("schemas %s and %s would both be named %s", other, name, plain)
		}
		taken[plain] = name
		rename[name] = plain
	}
	return rename, nil
}

// rewriteRefs points every #/definitions reference at #/components/schemas
// under the schema's plain name.
func rewriteRefs(v any, rename map[string]string) any {
	switch x := v.(type) {
	case obj:
		for k, e := range x {
			if k == "$ref" {
				if s, ok := e.(string); ok {
					if name, ok := strings.CutPrefix(s, "#/definitions/"); ok {
						if plain, ok := rename[name]; ok {
							name = plain
						}
						x[k] = "#/components/schemas/" + name
					}
				}
				continue
			}
			x[k] = rewriteRefs(e, rename)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = rewriteRefs(e, rename)
		}
		return x
	}
	return v
}

// prune drops the schemas nothing refers to (the Google status the
// generated document used for errors, the internal services' messages) and
// fails on a reference to a schema that is not there.
func prune(doc obj) error {
	comps := doc["components"].(obj)
	schemas := comps["schemas"].(obj)
	used := map[string]bool{}
	var walk func(v any) error
	walk = func(v any) error {
		switch x := v.(type) {
		case obj:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "$ref" {
					name, ok := strings.CutPrefix(s, "#/components/schemas/")
					if !ok || used[name] {
						continue
					}
					def, ok := schemas[name]
					if !ok {
						return fmt.Errorf("reference to a missing schema %s", s)
					}
					used[name] = true
					if err := walk(def); err != nil {
						return err
					}
					continue
				}
				if err := walk(e); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range x {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(doc["paths"]); err != nil {
		return err
	}
	if err := walk(comps["responses"]); err != nil {
		return err
	}
	for name := range schemas {
		if !used[name] {
			delete(schemas, name)
		}
	}
	return nil
}

// operation converts one Swagger 2 operation.
func operation(path, method string, in obj) (obj, error) {
	id, _ := in["operationId"].(string)
	id, _ = strings.CutPrefix(id, "OrchestratorService_")
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
		if path == eventsPath && name == "afterSeq" {
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
	case path == runPath && method == http.MethodPost:
		responses["200"] = eventStreamResponse()
	case path == "/v1/sessions/{sessionId}" && method == http.MethodDelete:
		responses["204"] = obj{"description": "Deleted: the session's hot state and its run history are gone (also when only the history was left). No body."}
	case path == eventsPath && method == http.MethodGet:
		responses["200"] = eventStreamResponse()
		params = append(params, resumeParameters()...)
		// EventSource cannot set headers, so this route also takes the
		// token as a query parameter (gateway/auth.go).
		out["security"] = []any{obj{"bearerAuth": []any{}}, obj{"accessToken": []any{}}}
	default:
		responses["200"] = obj{
			"description": "OK.",
			"content":     obj{"application/json": obj{"schema": resp["schema"]}},
		}
	}
	for _, code := range errorStatuses(path, method, out["requestBody"] != nil) {
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

// errorStatuses are the error statuses an operation answers, as the gateway
// produces them: its own refusals, then what the orchestrator says.
func errorStatuses(path, method string, hasBody bool) []int {
	// Every /v1 route: a bad request (a GET with a body, a bad query
	// value), no or a bad credential, a cross-origin request from an origin
	// not allowed or a forbidden action, the rate limit, and the services
	// behind the gateway failing or away.
	codes := []int{400, 401, 403, 429, 500, 503, 504}
	if hasBody {
		// The body did not arrive in time, or is over a size limit.
		codes = append(codes, 408, 413)
	}
	if strings.Contains(path, "{") {
		// The session or run does not exist, or is another user's.
		codes = append(codes, 404)
	}
	switch {
	case path == runPath && method == http.MethodPost,
		path == "/v1/sessions/{sessionId}/runs:start",
		path == "/v1/sessions/{sessionId}/tool-results",
		strings.HasSuffix(path, ":review"),
		path == "/v1/sessions/{sessionId}" && (method == http.MethodDelete || method == http.MethodPatch),
		path == "/v1/sessions/{sessionId}:cancel":
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
		401: "No credential, or one that is not valid. WWW-Authenticate names the Bearer scheme.",
		403: "The caller may not do this: a cross-origin request from an origin not in NEXUS_CORS_ORIGINS, a result token that does not match the call.",
		404: "The session or run does not exist, or belongs to another user (the two look the same), or no route has this path.",
		405: "The path does not take this method; Allow names the ones it takes.",
		408: "The request body did not arrive within NEXUS_HTTP_BODY_TIMEOUT.",
		409: "The request conflicts with the session's state: a run is active already, the tool call is not the pending one, or the call was decided with another result or verdict. Status ABORTED. Read the session, then retry or give up.",
		413: "The body, prompt, tool result, an image or the number of images is over its limit; limit names it, its setting, the maximum and the value sent.",
		421: "The Host header is not in NEXUS_PUBLIC_HOSTS.",
		429: "Too many requests for this user (NEXUS_RATE_LIMIT_RPS), too many open event streams (NEXUS_MAX_STREAMS_PER_USER), or too many failed authentications from this address. Retry-After says when to retry.",
		500: "The service failed to handle the request; retry, and report it if it persists. The detail is in the service's log.",
		503: "The service is unavailable right now; retry shortly.",
		504: "The service did not answer in time; retry shortly.",
	}
}

func responseName(code int) string {
	return "Error" + strconv.Itoa(code)
}

// errorResponses are the shared error responses, each with the ApiError body.
func errorResponses() obj {
	out := obj{}
	for code, text := range errorText() {
		r := obj{
			"description": text,
			"content":     obj{"application/json": obj{"schema": obj{"$ref": "#/components/schemas/ApiError"}}},
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
		"accessToken": obj{
			"type": "apiKey", "in": "query", "name": "access_token",
			"description": "The same API key or OIDC token, for EventSource, which cannot set headers. Only GET /v1/runs/{runId}/events takes it.",
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
func extraSchemas(defs obj) (obj, error) {
	chunk, _ := defs["v1StreamChunk"].(obj)
	fields, _ := chunk["properties"].(obj)
	out := obj{
		"ApiError": obj{
			"type":        "object",
			"description": "The body of every error the gateway answers.",
			"required":    []any{"error"},
			"properties": obj{"error": obj{
				"type":     "object",
				"required": []any{"code", "status", "message"},
				"properties": obj{
					"code":    obj{"type": "integer", "description": "The HTTP status."},
					"status":  obj{"type": "string", "enum": toAny(ErrorStatuses()), "description": "The gRPC code name (Google API error model), or the HTTP name for 405, 408, 409 (ABORTED), 413 and 421."},
					"message": obj{"type": "string", "description": "What failed and what to do, for a person. Never an internal address."},
					"limit": obj{
						"type":        "object",
						"description": "The input limit the request broke.",
						"required":    []any{"name", "setting", "max", "actual"},
						"properties": obj{
							"name":    obj{"type": "string", "description": "e.g. prompt_bytes, body_bytes, images, json_depth, open_streams."},
							"setting": obj{"type": "string", "description": "The setting that sets it, e.g. NEXUS_MAX_PROMPT_BYTES."},
							"max":     obj{"type": "integer", "format": "int64"},
							"actual":  obj{"type": "integer", "format": "int64"},
						},
					},
				},
			}},
		},
	}
	var arms []any
	for _, e := range Events() {
		field, ok := fields[e.Field]
		if !ok {
			return nil, fmt.Errorf("StreamChunk has no field %s for the %s event", e.Field, e.Name)
		}
		// The field's schema is the chunk's own, so the generated types of
		// events and of unary answers are the same.
		required := []any{"seq", "runId", "sessionId", e.Field}
		desc := "Data of an SSE frame `event: " + e.Name + "`, whose id is seq."
		if e.Name == "error" {
			// The gateway's own error frame, when the stream itself breaks,
			// has no id, seq, run or session.
			required = []any{e.Field}
			desc += " An error frame the gateway writes when the stream itself broke has no id and carries only error."
		}
		out[e.Schema] = obj{
			"type":        "object",
			"description": desc,
			"x-sse-event": e.Name,
			"required":    required,
			"properties": obj{
				"seq":       obj{"type": "string", "format": "int64", "description": "Per-run sequence number, starting at 1, strictly increasing; the frame's id."},
				"runId":     obj{"type": "string"},
				"sessionId": obj{"type": "string"},
				e.Field:     copyJSON(field),
			},
		}
		arms = append(arms, obj{"$ref": "#/components/schemas/" + e.Schema})
	}
	out["RunEvent"] = obj{
		"description": "The data of one frame of a run's event stream: a StreamChunk with exactly one of its event fields, the one the frame's event names.",
		"oneOf":       arms,
	}
	return out, nil
}

// copyJSON is a deep copy of a decoded JSON value.
func copyJSON(v any) any {
	switch x := v.(type) {
	case obj:
		out := obj{}
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	}
	return v
}

// asList is v as a list, or nil.
func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func camel(snake string) string {
	parts := strings.Split(snake, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

func pascal(snake string) string {
	c := camel(snake)
	return strings.ToUpper(c[:1]) + c[1:]
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// firstSentence is the first sentence of a proto comment, for a summary.
func firstSentence(v any) string {
	s, _ := v.(string)
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
