package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/gltftest"
	"nexus.local/platform/hostclient"
)

// bearerTransport adds an API key to every request of an MCP client.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect connects an MCP client (the official Go SDK's) to base/mcp with
// key; progress notifications go to onProgress.
func mcpConnect(t testing.TB, base, key string, onProgress func(string)) (*mcp.ClientSession, error) {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if onProgress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			onProgress(req.Params.Message)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, opts)
	hc := &http.Client{Transport: bearerTransport{key}}
	if key == "" {
		hc = &http.Client{}
	}
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func callTool(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{"progressToken": name}})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String()
}

// TestMCPEndpoint drives /mcp of a gateway that is not paired with a host:
// a run started over MCP waits for a courier like any other run's, with
// heartbeat progress while it waits, and the
// courier here is this test, reading the run's events over the HTTP API and
// carrying the script to the real FreeCAD runtime. The endpoint acts only as
// the authenticated caller: another user cannot list, audit or continue the
// session, and a prompt over the limit is refused naming the setting.
func TestMCPEndpoint(t *testing.T) {
	stack := startRealStack(t)
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_MAX_PROMPT_BYTES", "200", "NEXUS_SSE_KEEPALIVE", "50ms"))
	hostURL, hostBoxes := startHost(t, "pair-mcp", "http://127.0.0.1:1")
	host := &hostclient.Client{URL: hostURL, Token: "pair-mcp"}

	if _, err := mcpConnect(t, base, "", nil); err == nil {
		t.Fatal("an MCP client without an API key connected")
	}

	waiting, awaiting := make(chan string, 1), make(chan string, 1)
	var (
		mu       sync.Mutex
		progress []string
	)
	alice, err := mcpConnect(t, base, aliceKey, func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, msg)
		// The automation is previewed (carried by the courier), then waits
		// for a person, who approves it over HTTP, as the progress says.
		if strings.Contains(msg, "awaits your review in the Nexus web UI") {
			select {
			case awaiting <- msg:
			default:
			}
		}
		// The courier acts once a heartbeat repeated the wait: a long wait
		// for the host keeps the call alive with progress.
		if strings.HasPrefix(msg, "still at: ") && waitsForHost(msg) {
			select {
			case waiting <- msg:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	courierDone := make(chan error, 1)
	go func() {
		carried := map[string]bool{}
		if err := carryOne(t, base, host, waiting, carried); err != nil {
			courierDone <- err
			return
		}
		if err := approveOne(t, base, awaiting); err != nil {
			courierDone <- err
			return
		}
		courierDone <- carryOne(t, base, host, waiting, carried)
	}()

	res := callTool(t, alice, "run", map[string]any{"prompt": "add a 20 mm box"})
	if err := <-courierDone; err != nil {
		t.Fatalf("courier: %v", err)
	}
	text := resultText(res)
	if res.IsError {
		t.Fatalf("run failed: %s", text)
	}
	var out struct {
		SessionID    string `json:"sessionId"`
		Committed    bool   `json:"committed"`
		ChangeReport string `json:"changeReport"`
		Message      string `json:"message"`
		Views        int    `json:"views"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Committed || !strings.Contains(out.ChangeReport, "=== CHANGE REPORT ===") || !strings.Contains(out.ChangeReport, "1 box") {
		t.Errorf("want a committed run with a change report naming the box, got %s", b)
	}
	if out.Message != "I added **one box**, 20 mm long." {
		t.Errorf("final message %q", out.Message)
	}
	images := 0
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok && img.MIMEType == "image/png" && strings.HasPrefix(string(img.Data), "\x89PNG\r\n\x1a\n") {
			images++
		}
	}
	if images != 1 || out.Views != 1 {
		t.Errorf("%d PNG image contents, views %d; want the rendered view once", images, out.Views)
	}
	// The committed change's 3D model: linked from the result, read as a
	// resource of the caller's session.
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			link = l
		}
	}
	if link == nil || link.MIMEType != "model/gltf-binary" || !strings.HasPrefix(link.URI, "nexus://sessions/"+out.SessionID+"/calls/") {
		t.Fatalf("the result links no model of the commit: %+v", link)
	}
	model, err := alice.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: link.URI})
	if err != nil || len(model.Contents) != 1 || model.Contents[0].MIMEType != "model/gltf-binary" {
		t.Fatalf("read %s: %v %+v", link.URI, err, model)
	}
	gltftest.Validate(t, model.Contents[0].Blob)
	if nodes := gltftest.Nodes(t, model.Contents[0].Blob); len(nodes) != 1 || !strings.HasPrefix(nodes[0].Name, "Box") {
		t.Errorf("the model's nodes %+v; want the one box", nodes)
	}
	if got := hostBoxes(); got != "Box 20.0\n" {
		t.Errorf("the host's document holds boxes %q, want one Box of 20 mm", got)
	}
	mu.Lock()
	said := strings.Join(progress, "\n")
	mu.Unlock()
	if !strings.Contains(said, "host result: committed") || !strings.Contains(said, "run complete") {
		t.Errorf("progress lacks the host result or the end:\n%s", said)
	}

	bob, err := mcpConnect(t, base, bobKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: link.URI}); err == nil {
		t.Errorf("bob read alice's model %s", link.URI)
	}
	tests := []struct {
		name      string
		cs        *mcp.ClientSession
		tool      string
		args      map[string]any
		wantError string
		wantText  string
	}{
		{"alice lists her session", alice, "list_sessions", map[string]any{}, "", out.SessionID},
		{"bob does not see it", bob, "list_sessions", map[string]any{}, "", ""},
		{"alice reads its audit", alice, "session_audit", map[string]any{"sessionId": out.SessionID}, "", "SCRIPT_KIND_TASK_AUTOMATION"},
		{"bob cannot read its audit", bob, "session_audit", map[string]any{"sessionId": out.SessionID}, "not found", ""},
		{"bob cannot continue it", bob, "run", map[string]any{"prompt": "delete everything", "sessionId": out.SessionID}, "not found", ""},
		{"a prompt over the limit", alice, "run", map[string]any{"prompt": strings.Repeat("x", 201)}, "201 bytes, over the limit of 200 (NEXUS_MAX_PROMPT_BYTES)", ""},
		{"an empty prompt", alice, "run", map[string]any{"prompt": "  "}, "prompt is empty", ""},
		{"unattended is for a new session only", alice, "run", map[string]any{"prompt": "add a box", "sessionId": out.SessionID, "unattended": true},
			"unattended applies to a new session", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := callTool(t, tt.cs, tt.tool, tt.args)
			got := resultText(res)
			sc, _ := json.Marshal(res.StructuredContent)
			if tt.wantError != "" {
				if !res.IsError || !strings.Contains(strings.ToLower(got), strings.ToLower(tt.wantError)) {
					t.Fatalf("want an error with %q, got error=%v %s", tt.wantError, res.IsError, got)
				}
				return
			}
			if res.IsError {
				t.Fatalf("unexpected error: %s", got)
			}
			if tt.wantText != "" && !strings.Contains(string(sc), tt.wantText) {
				t.Errorf("result lacks %q: %s", tt.wantText, sc)
			}
			if tt.wantText == "" && strings.Contains(string(sc), out.SessionID) {
				t.Errorf("bob sees alice's session: %s", sc)
			}
		})
	}
	// Refused calls started nothing: alice still has her one session.
	var sessions struct {
		Sessions []any `json:"sessions"`
	}
	sc, _ := json.Marshal(callTool(t, alice, "list_sessions", map[string]any{}).StructuredContent)
	if err := json.Unmarshal(sc, &sessions); err != nil || len(sessions.Sessions) != 1 {
		t.Errorf("alice has %d sessions after the refused calls, want 1: %s", len(sessions.Sessions), sc)
	}
}

// carryOne is the courier of one tool call: once the MCP run says it waits,
// it finds the run from the session, reads the tool call from the run's
// events, runs it on the real host and posts the result over the HTTP API.
// carried holds the (call, token) pairs already carried, which it skips.
func carryOne(t *testing.T, base string, host *hostclient.Client, waiting <-chan string, carried map[string]bool) error {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	var msg string
	select {
	case msg = <-waiting:
	case <-ctx.Done():
		return ctx.Err()
	}
	get := func(path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		return http.DefaultClient.Do(req)
	}
	resp, err := get("/v1/sessions")
	if err != nil {
		return err
	}
	var list agentv1.ListSessionsResponse
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := protojson.Unmarshal(b, &list); err != nil || len(list.GetSessions()) != 1 {
		return &courierError{"list sessions", string(b)}
	}
	sess := list.GetSessions()[0]
	if !strings.Contains(msg, "execute_task_automation") || sess.GetPendingToolCall() == nil {
		return &courierError{"pending call after " + msg, string(b)}
	}
	resp, err = get("/v1/runs/" + sess.GetPendingToolCall().GetRunId() + "/events")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rd := newSSEReader(resp.Body)
	for {
		f, err := rd.next()
		if err != nil {
			return err
		}
		if f.event != "tool_call" {
			continue
		}
		var c agentv1.StreamChunk
		if err := protojson.Unmarshal([]byte(f.data), &c); err != nil {
			return err
		}
		tc := c.GetToolCall()
		if tc.GetResultToken() == "" || carried[tc.GetToolCallId()+tc.GetResultToken()] {
			// The call as it awaited review (its approval follows), or one
			// already carried (its preview).
			continue
		}
		carried[tc.GetToolCallId()+tc.GetResultToken()] = true
		res, err := host.Execute(ctx, tc.GetExecute())
		if err != nil {
			return err
		}
		body, err := protojson.Marshal(&agentv1.SubmitToolResultRequest{ToolCallId: tc.GetToolCallId(), ResultToken: tc.GetResultToken(), Result: res})
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/sessions/"+sess.GetSessionId()+"/tool-results", strings.NewReader(string(body)))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		req.Header.Set("Content-Type", "application/json")
		posted, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		posted.Body.Close()
		if posted.StatusCode != http.StatusOK {
			return &courierError{"post the result", posted.Status}
		}
		return nil
	}
}

// approveOne approves, over the HTTP API as a reviewer does, the script the
// MCP run said it waits on.
func approveOne(t *testing.T, base string, awaiting <-chan string) error {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	select {
	case <-awaiting:
	case <-ctx.Done():
		return ctx.Err()
	}
	do := func(method, path, body string) ([]byte, int, error) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			return nil, 0, err
		}
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return b, resp.StatusCode, err
	}
	b, _, err := do(http.MethodGet, "/v1/sessions", "")
	if err != nil {
		return err
	}
	var list agentv1.ListSessionsResponse
	if err := protojson.Unmarshal(b, &list); err != nil || len(list.GetSessions()) != 1 || list.GetSessions()[0].GetPendingToolCall() == nil {
		return &courierError{"the call awaiting review", string(b)}
	}
	sess := list.GetSessions()[0]
	b, code, err := do(http.MethodPost, "/v1/sessions/"+sess.GetSessionId()+"/tool-calls/"+sess.GetPendingToolCall().GetToolCallId()+":review", `{"verdict":"REVIEW_VERDICT_APPROVE"}`)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return &courierError{"approve the script", string(b)}
	}
	return nil
}

type courierError struct{ step, detail string }

func (e *courierError) Error() string { return e.step + ": " + e.detail }

// BenchmarkMCPListSessions measures one MCP tool call through /mcp: the
// stateless handler builds a server for the caller per request, then calls
// the real orchestrator over gRPC.
func BenchmarkMCPListSessions(b *testing.B) {
	base := startGateway(b, realGatewayEnv(startRealStack(b), "NEXUS_RATE_LIMIT_RPS", "0"))
	cs, err := mcpConnect(b, base, aliceKey, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if res := callTool(b, cs, "list_sessions", map[string]any{}); res.IsError {
			b.Fatal(resultText(res))
		}
	}
}

// TestMCPCancel shows that a client abandoning a run call stops the run: the
// run's own event stream ends with the cancelled error, and no script ever
// reaches the host.
func TestMCPCancel(t *testing.T) {
	stack := startRealStack(t)
	base := startGateway(t, realGatewayEnv(stack))
	waiting := make(chan struct{}, 1)
	alice, err := mcpConnect(t, base, aliceKey, func(msg string) {
		if waitsForHost(msg) || strings.Contains(msg, "waiting for a person") {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	called := make(chan error, 1)
	go func() {
		_, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"prompt": "add a 20 mm box"}, Meta: mcp.Meta{"progressToken": "run"}})
		called <- err
	}()
	select {
	case <-waiting:
	case err := <-called:
		t.Fatalf("the run call ended before it waited for the host: %v", err)
	}
	resp := request(t, http.MethodGet, base+"/v1/sessions", aliceKey, "")
	var list agentv1.ListSessionsResponse
	b, _ := io.ReadAll(resp.Body)
	if err := protojson.Unmarshal(b, &list); err != nil || len(list.GetSessions()) != 1 {
		t.Fatalf("sessions: %v %s", err, b)
	}
	run := list.GetSessions()[0].GetActiveRunId()
	if run == "" {
		t.Fatalf("no active run while the call waits: %s", b)
	}
	cancel()
	if err := <-called; err == nil {
		t.Fatal("the cancelled call answered without an error")
	}
	events := request(t, http.MethodGet, base+"/v1/runs/"+run+"/events", aliceKey, "")
	last := newSSEReader(events.Body).lastEvent(t)
	var c agentv1.StreamChunk
	if err := protojson.Unmarshal([]byte(last.data), &c); err != nil || c.GetError().GetCode() != agentv1.ErrorCode_ERROR_CODE_CANCELLED {
		t.Fatalf("the run's last event is %s %s, want the cancelled error", last.event, last.data)
	}
	t.Logf("the run ended: %s", c.GetError().GetMessage())
}

// waitsForHost says whether a progress message says the call waits for a
// host: none of the session's application is linked yet, and no client
// paired with a runtime carried it.
func waitsForHost(msg string) bool {
	return strings.Contains(msg, "to link, or for a client paired with a runtime") || strings.Contains(msg, "Waiting for a FreeCAD to connect")
}
