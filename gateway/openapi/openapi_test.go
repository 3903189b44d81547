package openapi

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"nexus.local/gateway/openapi/builder"
	swagger "nexus.local/gen/openapi"
)

// TestCommittedIsGenerated shows the committed document is what builder.Build makes
// of the protos' Swagger document: a proto change without go generate fails
// here (and in scripts/check-drift.sh).
func TestCommittedIsGenerated(t *testing.T) {
	want, err := builder.Build(swagger.Spec, builder.DevVersion)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Committed(), want) {
		t.Fatal("gateway/openapi/openapi.json is not what the protos generate: run `go generate ./gateway/openapi/` (make gen) and commit it")
	}
}

// TestDocumentSaysWhatTheGatewayDoes checks the document a client generator
// reads: OpenAPI 3, its title and version, bearer security, both event
// streams as text/event-stream with a schema per event and the resume
// parameters, and the gateway's error body on every error response.
func TestDocumentSaysWhatTheGatewayDoes(t *testing.T) {
	raw, err := Document("1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	get := func(v any, path ...string) any {
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[p]
		}
		return v
	}
	schemas, ok := get(doc, "components", "schemas").(map[string]any)
	if !ok {
		t.Fatalf("no components.schemas: not an OpenAPI 3 document (openapi %v, swagger %v)", doc["openapi"], doc["swagger"])
	}
	resolve := func(ref any) map[string]any {
		name, _ := strings.CutPrefix(ref.(string), "#/components/schemas/")
		s, _ := schemas[name].(map[string]any)
		return s
	}

	t.Run("header", func(t *testing.T) {
		if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.0.") {
			t.Errorf("openapi %q, want 3.0.x", v)
		}
		if get(doc, "info", "title") != "Nexus API" || get(doc, "info", "version") != "1.2.3" {
			t.Errorf("info %v", doc["info"])
		}
		if get(doc, "components", "securitySchemes", "bearerAuth", "scheme") != "bearer" ||
			get(doc, "components", "securitySchemes", "accessToken") != nil {
			t.Errorf("security schemes %v", get(doc, "components", "securitySchemes"))
		}
		if _, ok := schemas["rpcStatus"]; ok {
			t.Error("the generated rpcStatus is still there; errors are Problem")
		}
	})

	streams := []struct{ method, path string }{{"post", builder.RunPath}, {"get", builder.EventsPath}}
	for _, s := range streams {
		t.Run(s.method+" "+s.path, func(t *testing.T) {
			op := get(doc, "paths", s.path, s.method)
			content, _ := get(op, "responses", "200", "content").(map[string]any)
			if len(content) != 1 || content["text/event-stream"] == nil {
				t.Fatalf("200 content %v, want text/event-stream alone", content)
			}
			events, _ := get(content["text/event-stream"], "x-sse-events").(map[string]any)
			for _, e := range builder.Events() {
				ref, ok := events[e.Name].(map[string]any)
				if !ok {
					t.Errorf("no schema for event %s", e.Name)
					continue
				}
				schema := resolve(ref["$ref"])
				if schema == nil || schema["x-sse-event"] != e.Name || get(schema, "properties", e.Field) == nil {
					t.Errorf("event %s: schema %v", e.Name, schema)
				}
			}
			if len(events) != 8 {
				t.Errorf("%d events, want the 8 arms of StreamChunk", len(events))
			}
			for _, code := range []string{"400", "401", "404", "429", "503"} {
				if get(op, "responses", code) == nil {
					t.Errorf("no %s response", code)
				}
			}
		})
	}
	t.Run("resume", func(t *testing.T) {
		var names []string
		params, _ := get(doc, "paths", builder.EventsPath, "get", "parameters").([]any)
		for _, p := range params {
			names = append(names, get(p, "in").(string)+":"+get(p, "name").(string))
		}
		for _, want := range []string{"header:Last-Event-ID", "query:lastEventId"} {
			if !slices.Contains(names, want) {
				t.Errorf("parameters %v lack %s", names, want)
			}
		}
		if slices.Contains(names, "query:afterSeq") {
			t.Error("afterSeq is documented, but the gateway reads Last-Event-ID")
		}
		sec, _ := json.Marshal(get(doc, "paths", builder.EventsPath, "get", "security"))
		if strings.Contains(string(sec), "accessToken") {
			t.Errorf("events security %s still admits a token in the URL", sec)
		}
	})
	t.Run("pagination", func(t *testing.T) {
		for _, path := range []string{"/v1/sessions", "/v1/sessions/{sessionId}/runs"} {
			params, _ := json.Marshal(get(doc, "paths", path, "get", "parameters"))
			if !strings.Contains(string(params), `"pageSize"`) || !strings.Contains(string(params), `"pageToken"`) {
				t.Errorf("GET %s parameters %s lack pageSize and pageToken", path, params)
			}
		}
		for _, s := range []string{"ListSessionsResponse", "ListRunsResponse"} {
			if get(schemas[s], "properties", "nextPageToken") == nil {
				t.Errorf("%s has no nextPageToken", s)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		responses, _ := get(doc, "components", "responses").(map[string]any)
		n := 0
		for path, item := range doc["paths"].(map[string]any) {
			for method, op := range item.(map[string]any) {
				for code, r := range get(op, "responses").(map[string]any) {
					if code == "default" {
						t.Errorf("%s %s has a default response", method, path)
					}
					if code[0] != '4' && code[0] != '5' || path == "/readyz" {
						continue
					}
					n++
					ref, _ := get(r, "$ref").(string)
					name, _ := strings.CutPrefix(ref, "#/components/responses/")
					body := get(responses[name], "content", builder.ProblemMediaType, "schema", "$ref")
					if body != "#/components/schemas/Problem" {
						t.Errorf("%s %s %s: body %v, want Problem", method, path, code, body)
					}
				}
			}
		}
		for _, op := range []struct{ method, path string }{
			{"post", builder.RunPath}, {"post", "/v1/sessions/{sessionId}/tool-results"}, {"post", "/v1/sessions/{sessionId}/tool-calls/{toolCallId}:review"},
		} {
			if get(doc, "paths", op.path, op.method, "responses", "409") == nil {
				t.Errorf("%s %s has no 409", op.method, op.path)
			}
		}
		t.Logf("%d error responses, all Problem", n)
		// The reasons a client decides by are all listed, the unspecified
		// one not.
		reasons := asStrings(get(schemas["RefusalReason"], "enum"))
		if get(schemas["Problem"], "properties", "reason", "$ref") != "#/components/schemas/RefusalReason" ||
			len(reasons) != len(builder.RefusalReasons()) || slices.Contains(reasons, "REFUSAL_REASON_UNSPECIFIED") ||
			!slices.Contains(reasons, "REFUSAL_REASON_NO_PENDING_CALL") || !slices.Contains(reasons, "REFUSAL_REASON_ALREADY_DECIDED") {
			t.Errorf("Problem.reason lists %v", reasons)
		}
	})
}

// TestGatewayDoesNotLinkTheBuilder shows the builder stays a build-time tool:
// neither the gateway nor the nexus binary depends on it.
func TestGatewayDoesNotLinkTheBuilder(t *testing.T) {
	for _, pkg := range []string{"nexus.local/gateway", "nexus.local/cmd/nexus"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, "nexus.local/gateway/openapi") {
			t.Fatalf("%s does not depend on nexus.local/gateway/openapi: the list is not what this test reads", pkg)
		}
		if slices.Contains(deps, "nexus.local/gateway/openapi/builder") {
			t.Errorf("%s links nexus.local/gateway/openapi/builder, a build-time tool", pkg)
		}
	}
}

func asStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
