package gateway

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// startRealStack runs the real orchestrator with the real model router and
// capability service, the model being a loopback server that speaks the
// Anthropic streaming format: one turn that writes a script, one that answers.
func startRealStack(t testing.TB) *ot.Stack {
	t.Helper()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.Thinking("One Part::Box will do."), ot.Text("Adding the box."),
			ot.ToolUse("toolu_01", "execute_task_automation", map[string]any{
				"description": "Add a 20 mm box",
				"code":        "import FreeCAD\ndoc = FreeCAD.ActiveDocument\nbox = doc.addObject(\"Part::Box\", \"Box\")\nbox.Length = 20\n",
			})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("I added **one box**, 20 mm long.")}},
	)
	return ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
}

func realGatewayEnv(stack *ot.Stack, extra ...string) map[string]string {
	env := map[string]string{
		"NEXUS_ORCHESTRATOR_ADDR": stack.Addr,
		"NEXUS_API_KEYS":          aliceKey + ":alice," + bobKey + ":bob",
		"NEXUS_LOG_LEVEL":         "error",
		"NEXUS_INTERNAL_KEY":      ot.InternalKey,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

type sseEvent struct {
	frame sseFrame
	chunk *agentv1.StreamChunk
}

// TestRealOrchestratorStream drives a whole run of the real orchestrator
// through the gateway: SSE headers and framing, keepalive comments while
// the run waits for the host, the result posted over HTTP, the rejoin
// endpoint replaying after Last-Event-ID, and another user getting 404 for
// every route of the session.
func TestRealOrchestratorStream(t *testing.T) {
	stack := startRealStack(t)
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_SSE_KEEPALIVE", "30ms"))
	session := createSession(t, base, aliceKey)

	resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"add a 20 mm box"}`)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("run: %d %s", resp.StatusCode, b)
	}
	for h, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	var events []sseEvent
	var pending *agentv1.ToolCall
	keepalives := 0
	newSSEReader(resp.Body).each(t, func(f sseFrame) {
		if f.comment == "keepalive" && pending != nil {
			keepalives++
			if keepalives == 2 {
				body, _ := protojson.Marshal(&agentv1.SubmitToolResultRequest{ToolCallId: pending.GetToolCallId(), ResultToken: pending.GetResultToken(),
					Result: mustHostResult(t, `{"committed":true,"changes":{"added":["Box"]},"epilogue":{"stdout":"added 1: Box (Part::Box)"}}`)})
				r := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/tool-results", aliceKey, string(body))
				if r.StatusCode != http.StatusOK {
					b, _ := io.ReadAll(r.Body)
					t.Fatalf("tool result: %d %s", r.StatusCode, b)
				}
				pending = nil
			}
			return
		}
		if f.comment != "" {
			return
		}
		c := &agentv1.StreamChunk{}
		if err := protojson.Unmarshal([]byte(f.data), c); err != nil {
			t.Fatalf("data %q: %v", f.data, err)
		}
		if f.event != eventType(c) {
			t.Errorf("event %q carries a %s chunk", f.event, eventType(c))
		}
		if want := strconv.Itoa(len(events) + 1); f.id != want {
			t.Errorf("frame %d has id %q", len(events)+1, f.id)
		}
		if c.GetToolCall() != nil {
			pending = c.GetToolCall()
		}
		events = append(events, sseEvent{f, c})
	})
	if keepalives < 2 {
		t.Errorf("%d keepalives while the run waited for the host, want 2 or more", keepalives)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.frame.event)
	}
	got := strings.Join(kinds, " ")
	for _, want := range []string{"metadata", "thinking", "message", "tool_input_delta", "tool_call", "complete", "usage"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s event in %s", want, got)
		}
	}
	if !strings.Contains(got, "tool_call metadata") {
		t.Errorf("the tool result's metadata does not follow the tool call: %s", got)
	}
	if strings.Contains(events[0].frame.data, "run_id") || !strings.Contains(events[0].frame.data, `"runId"`) {
		t.Errorf("data is not camelCase protojson: %s", events[0].frame.data)
	}
	run := events[0].chunk.GetRunId()

	t.Run("rejoin after Last-Event-ID", func(t *testing.T) {
		for _, after := range []int{0, 3, len(events) - 1, len(events)} {
			resp := request(t, http.MethodGet, base+"/v1/runs/"+run+"/events", aliceKey, "", "Last-Event-ID", strconv.Itoa(after))
			got := readIDs(t, resp)
			var want []string
			for _, e := range events[after:] {
				want = append(want, e.frame.id+" "+e.frame.event)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("after %d: replayed %v, want %v", after, got, want)
			}
		}
		// The header wins over the query parameter.
		resp := request(t, http.MethodGet, base+"/v1/runs/"+run+"/events?lastEventId=1", aliceKey, "", "Last-Event-ID", strconv.Itoa(len(events)-1))
		if got := readIDs(t, resp); len(got) != 1 {
			t.Errorf("header and query: %d events, want 1", len(got))
		}
		resp = request(t, http.MethodGet, base+"/v1/runs/"+run+"/events", aliceKey, "", "Last-Event-ID", "abc")
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("invalid Last-Event-ID: status %d, want 400", resp.StatusCode)
		} else if e := apiErrorOf(t, resp); !strings.Contains(e.Message, "Last-Event-ID") {
			t.Errorf("message %q does not name Last-Event-ID", e.Message)
		}
		// A key in the URL is refused: proxies log URLs.
		resp = request(t, http.MethodGet, base+"/v1/runs/"+run+"/events?lastEventId=2&access_token="+aliceKey, "", "")
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("query credential: status %d, want 401", resp.StatusCode)
		}
	})

	t.Run("another user gets 404", func(t *testing.T) {
		for _, tt := range []struct{ name, method, path, body string }{
			{"get session", http.MethodGet, "/v1/sessions/" + session, ""},
			{"start a run", http.MethodPost, "/v1/sessions/" + session + "/runs", `{"prompt":"delete everything"}`},
			{"read the stream", http.MethodGet, "/v1/runs/" + run + "/events", ""},
			{"post a result", http.MethodPost, "/v1/sessions/" + session + "/tool-results", `{"toolCallId":"toolu_01","resultToken":"x","result":{}}`},
			{"cancel", http.MethodPost, "/v1/sessions/" + session + ":cancel", `{}`},
			{"dispatches", http.MethodGet, "/v1/sessions/" + session + "/dispatches", ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				// A forged identity header must not make Bob the owner.
				resp := request(t, tt.method, base+tt.path, bobKey, tt.body, "Grpc-Metadata-X-Nexus-User", "alice", "X-Nexus-User", "alice")
				if resp.StatusCode != http.StatusNotFound {
					b, _ := io.ReadAll(resp.Body)
					t.Fatalf("status %d, want 404: %s", resp.StatusCode, b)
				}
				if e := apiErrorOf(t, resp); e.Status != "NOT_FOUND" {
					t.Errorf("status %q", e.Status)
				}
			})
		}
		if resp := request(t, http.MethodGet, base+"/v1/sessions/"+session, aliceKey, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("owner: status %d", resp.StatusCode)
		}
	})
}
