package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// cancelAnswer is what POST /v1/sessions/{id}:cancel answers.
type cancelAnswer struct {
	RunID          string `json:"runId"`
	LeftToolCallID string `json:"leftToolCallId"`
	Outcome        string `json:"outcome"`
	Message        string `json:"message"`
}

// untilEvent follows a run's events live until the nth one whose type and
// data contain what is asked comes, and answers its data; it fails the test
// if the run ends first.
func untilEvent(t *testing.T, base, runID string, n int, event string, data ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), linkPatience)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+runID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	typ := ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			typ = v
			continue
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok && typ == event && containsAll(v, data) {
			if n--; n == 0 {
				return v
			}
		}
	}
	t.Fatalf("run %s ended (%v) before the %s event with %q", runID, sc.Err(), event, data)
	return ""
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// cancelOutcome checks what a run cancelled around its room script tells,
// against what the host did to the document: a room built is a commit the
// audit log records, the cancel's answer names and the run's end says
// ("already ran: committed"); a room not built is no commit anywhere. ans
// is nil when the cancel's answer went to someone else. It answers the
// walls built.
func cancelOutcome(t *testing.T, bin, base string, env []string, sessionID, runID, callID string, ans *cancelAnswer) int {
	t.Helper()
	waitFor(t, "the cancelled run to end", linkPatience, func() bool { return getSession(t, base, sessionID).ActiveRunID == "" })
	events := readRunEvents(t, base, runID)
	walls := countRoom(t, env)["wall"]
	o := auditOutcomes(t, bin, env, sessionID)[callID]
	last := ""
	if len(o) > 0 {
		last = o[len(o)-1]
	}
	if ans == nil {
		t.Logf("the document has %d walls; the audit log: %v", walls, o)
		ans = &cancelAnswer{LeftToolCallID: callID, Outcome: "DISPATCH_OUTCOME_COMMITTED", Message: "already ran: committed"}
		if walls == 0 {
			ans = &cancelAnswer{}
		}
	} else {
		t.Logf("the cancel answered %+v; the document has %d walls; the audit log: %v", *ans, walls, o)
	}
	switch walls {
	case 4:
		if last != "DISPATCH_OUTCOME_COMMITTED" {
			t.Errorf("the room is in the document, but the audit log ends the call %s as %v; want it committed", callID, o)
		}
		if ans.LeftToolCallID != callID || ans.Outcome != "DISPATCH_OUTCOME_COMMITTED" || !strings.Contains(ans.Message, "already ran: committed") {
			t.Errorf("the cancel answered %+v; want it to say that the script %s had already left and ran: committed", *ans, callID)
		}
		if !strings.Contains(events, "already ran: committed") || !strings.Contains(events, "event: error") {
			t.Errorf("the run's end does not say the script already ran and committed:\n%s", events)
		}
	case 0:
		if last == "DISPATCH_OUTCOME_COMMITTED" || ans.LeftToolCallID != "" {
			t.Errorf("no room in the document, yet the audit log says %v and the cancel answered %+v", o, *ans)
		}
	default:
		t.Errorf("the document has %d walls, want the room built once or not at all", walls)
	}
	return walls
}

// TestCancelAfterTheScriptLeftRecordsWhatItDid approves the demo's room under
// the preview policy on nexus dev and its real FreeCAD runtime, then cancels
// the run: at once, or once the approved script is on its way to the host.
// A cancel cannot unrun a script that left: the run waits for what the host
// did, the audit log records the commit, and the cancel and the run's end
// say the script already ran and committed. Before, the run ended as
// cancelled at once, the audit log said NO_RESULT, the host's result was
// refused with 409, and the document held the room.
func TestCancelAfterTheScriptLeftRecordsWhatItDid(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	for _, tc := range []struct {
		name string
		// left says the approved script left for the host before the cancel.
		left bool
	}{{"at once", false}, {"once the script left", true}} {
		t.Run(tc.name, func(t *testing.T) {
			// The test's polls and the MCP server's own calls share the local
			// user's rate limit; it is not what is tested.
			base, env := startDemoDev(t, bin, "NEXUS_RATE_LIMIT_RPS=0")
			waitFor(t, "nexus dev's runtime to link", linkPatience, func() bool { return hostPresence(t, base)["h_dev"] })
			sessionID, runID, callID := awaitingReview(t, base)
			approve(t, base, sessionID, callID)
			if tc.left {
				// The approved call is streamed once it is in the host's
				// delivery log, which the host's live link reads at once.
				untilEvent(t, base, runID, 1, "tool_call", callID, "REVIEW_STATE_APPROVED")
			}
			var ans cancelAnswer
			apiJSON(t, http.MethodPost, base+"/v1/sessions/"+sessionID+":cancel", "", map[string]any{}, http.StatusOK, &ans)
			if ans.RunID != runID {
				t.Fatalf("the cancel answered %+v, want run %s cancelled", ans, runID)
			}
			if walls := cancelOutcome(t, bin, base, env, sessionID, runID, callID, &ans); tc.left && walls != 4 {
				t.Errorf("the script left for the host before the cancel, yet the document has %d walls", walls)
			}
		})
	}
}

// TestClosedMCPRunRecordsTheScriptThatLeft runs the demo unattended through
// nexus dev's MCP endpoint and closes the connection while the room script is
// on the host: the run is cancelled, and the script that left finishes and
// is recorded (docs/mcp.md): the audit log says committed, and the run's end
// says it already ran. Before, the document held the room and the audit log
// said NO_RESULT.
func TestClosedMCPRunRecordsTheScriptThatLeft(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	base, env := startDemoDev(t, bin, "NEXUS_RATE_LIMIT_RPS=0")
	waitFor(t, "nexus dev's runtime to link", linkPatience, func() bool { return hostPresence(t, base)["h_dev"] })
	ctx, closeConn := context.WithCancel(t.Context())
	defer closeConn()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run","arguments":{"prompt":"` + demoPrompt + `","unattended":true}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	var sessionID, runID string
	waitFor(t, "the MCP call's run to start", linkPatience, func() bool {
		var list struct {
			Sessions []struct {
				SessionID   string `json:"sessionId"`
				ActiveRunID string `json:"activeRunId"`
			} `json:"sessions"`
		}
		apiJSON(t, http.MethodGet, base+"/v1/sessions", "", nil, http.StatusOK, &list)
		if len(list.Sessions) == 1 {
			sessionID, runID = list.Sessions[0].SessionID, list.Sessions[0].ActiveRunID
		}
		return runID != ""
	})
	// The demo's first automation fails on a typo and is rolled back; the
	// connection closes once its fix, which builds the room, is streamed:
	// it is in the host's delivery log then, which the host reads at once.
	var second struct {
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"toolCall"`
	}
	if err := json.Unmarshal([]byte(untilEvent(t, base, runID, 2, "tool_call", "TOOL_NAME_EXECUTE_TASK_AUTOMATION")), &second); err != nil {
		t.Fatal(err)
	}
	callID := second.ToolCall.ToolCallID
	closeConn()
	<-answered
	// The MCP server cancels the run of the abandoned call; the cancel's
	// own answer is the server's, so the checks read the run and the audit.
	waitFor(t, "the run to be cancelled", linkPatience, func() bool { return getSession(t, base, sessionID).ActiveRunID == "" })
	events := readRunEvents(t, base, runID)
	if !strings.Contains(events, "ERROR_CODE_CANCELLED") {
		t.Fatalf("the run of the closed MCP call was not cancelled:\n%s", events)
	}
	if walls := cancelOutcome(t, bin, base, env, sessionID, runID, callID, nil); walls != 4 {
		t.Errorf("the room script was on the host when the connection closed, yet the document has %d walls", walls)
	}
}
