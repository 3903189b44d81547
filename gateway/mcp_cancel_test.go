package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// startPairedMCP runs the real stack with a model whose script-writing turn
// takes modelDelay, the real FreeCAD runtime paired with the gateway as nexus
// dev pairs it (so the MCP server carries the scripts itself), and answers
// the gateway's URL and the function listing the document's boxes.
func startPairedMCP(t *testing.T, modelDelay time.Duration) (string, func() string) {
	t.Helper()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Delay: modelDelay, Blocks: []ot.Block{ot.Text("Adding the box."),
			ot.ToolUse("toolu_01", "execute_task_automation", map[string]any{
				"description": "Add a 20 mm box",
				"code":        "import FreeCAD\ndoc = FreeCAD.ActiveDocument\nbox = doc.addObject(\"Part::Box\", \"Box\")\nbox.Length = 20\n",
			})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("I added one box.")}},
	)
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	hostURL, boxes := startHost(t, "pair-cancel", "http://127.0.0.1:1")
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_DEV_HOST_URL", hostURL, "NEXUS_DEV_HOST_TOKEN", "pair-cancel",
		"NEXUS_DEV_PAIRING_SECRET", "cancel-secret"))
	return base, boxes
}

// mcpPost posts one JSON-RPC message to /mcp as alice.
func mcpPost(ctx context.Context, base, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	return http.DefaultClient.Do(req)
}

// activeRun waits for alice's one session to have an active run and answers it.
func activeRun(t *testing.T, base string) string {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		resp := request(t, http.MethodGet, base+"/v1/sessions", aliceKey, "")
		var list agentv1.ListSessionsResponse
		b, _ := io.ReadAll(resp.Body)
		if err := protojson.Unmarshal(b, &list); err == nil && len(list.GetSessions()) == 1 && list.GetSessions()[0].GetActiveRunId() != "" {
			return list.GetSessions()[0].GetActiveRunId()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no active run appeared for the MCP call")
	return ""
}

// TestMCPCancelledCallCancelsRun shows that a client that cancels a run call
// cancels the run, whether it closes the connection or sends
// notifications/cancelled for the call's request id: the run ends with the
// cancelled error and its script, which the model had not yet written when
// the client went away, never commits to the host. The run is unattended (the
// explicit choice), so nothing but the cancel stands between the script and
// a commit.
func TestMCPCancelledCallCancelsRun(t *testing.T) {
	t.Parallel()
	const modelDelay = 5 * time.Second
	call := `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"run","arguments":{"prompt":"add a 20 mm box","unattended":true}}}`
	for _, way := range []string{"connection closed", "notifications/cancelled"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			base, boxes := startPairedMCP(t, modelDelay)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			answered := make(chan error, 1)
			go func() {
				resp, err := mcpPost(ctx, base, call)
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				answered <- err
			}()
			run := activeRun(t, base)
			time.Sleep(2 * time.Second)
			if way == "connection closed" {
				cancel()
			} else {
				resp, err := mcpPost(t.Context(), base, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"the person stopped it"}}`)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					t.Errorf("notifications/cancelled answered %d, want 202", resp.StatusCode)
				}
			}
			events := request(t, http.MethodGet, base+"/v1/runs/"+run+"/events", aliceKey, "")
			last := newSSEReader(events.Body).lastEvent(t)
			var c agentv1.StreamChunk
			if err := protojson.Unmarshal([]byte(last.data), &c); err != nil || c.GetError().GetCode() != agentv1.ErrorCode_ERROR_CODE_CANCELLED {
				t.Errorf("the run's last event is %s %s, want the cancelled error", last.event, last.data)
			}
			// Past the model's delay, a run that went on would have committed.
			time.Sleep(modelDelay)
			if got := boxes(); got != "" {
				t.Errorf("the cancelled call's script committed: the document holds %s", got)
			}
			cancel()
			<-answered
			t.Logf("%s: the run ended: %s", way, c.GetError().GetMessage())
		})
	}
}
