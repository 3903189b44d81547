// Package builder makes the gateway's OpenAPI 3 document at build time (go
// generate in gateway/openapi): it converts what the proto annotations say
// (gen/openapi, Swagger 2, written by protoc-gen-openapiv2) and adds what
// they cannot say (the event streams, the error body, security, every status
// a route answers). The gateway embeds the document it writes and never
// links this package.
package builder

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
	RunPath    = "/v1/sessions/{sessionId}/runs"
	EventsPath = "/v1/runs/{runId}/events"
	// LinkPath is the host link: a linked host's calls as server-sent events.
	LinkPath = "/v1/host-link"
)

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
	routes := routeTable()
	for path, item := range paths {
		ops, _ := item.(obj)
		outItem := obj{}
		for method, op := range ops {
			o, err := operation(path, strings.ToUpper(method), op.(obj), routes)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", strings.ToUpper(method), path, err)
			}
			outItem[method] = o
		}
		outPaths[path] = outItem
	}
	if item, ok := outPaths[DocumentPath].(obj); ok {
		put, err := documentUpload(routes)
		if err != nil {
			return nil, err
		}
		item["put"] = put
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

const description = `The public HTTP API of Nexus: sessions with a design application, runs of its agent streamed as server-sent events, the host link that a linked desktop host carries its own calls over (GET /v1/host-link, server-sent events, held open like a run stream; pairing under /v1/host-pairings), tool results from the host (or from a courier carrying scripts to a runtime that is not linked), reviews of scripts, and the audit of what reached the host.

Authentication: ` + "`Authorization: Bearer <token>`" + ` with an API key (NEXUS_API_KEYS) or an OIDC ID token (NEXUS_OIDC_ISSUER). It is never taken from a URL (proxies log URLs): read GET /v1/runs/{runId}/events with a client that sends headers. A gateway in dev mode without keys admits loopback callers without one.

Errors: every error is a Problem (` + "`application/problem+json`" + `, RFC 9457): ` + "`{\"type\", \"title\", \"status\", \"detail\", \"reason\", \"code\", \"limit\"?}`" + `. Decide by ` + "`reason`" + `, a RefusalReason (the same value the gRPC API's google.rpc.ErrorInfo carries); ` + "`detail`" + ` is for a person. Credentials are checked before a body is read. Any route also answers 421 to a Host header not in NEXUS_PUBLIC_HOSTS, and 405 (METHOD_NOT_ALLOWED, with Allow) to a method its path does not take.

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
