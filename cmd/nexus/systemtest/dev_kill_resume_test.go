package systemtest

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// sessionView is what the tests read of GET /v1/sessions/{id}.
type sessionView struct {
	ActiveRunID     string `json:"activeRunId"`
	PendingToolCall struct {
		ToolCallID string `json:"toolCallId"`
		Review     string `json:"review"`
	} `json:"pendingToolCall"`
}

// getSession reads a session of the local user.
func getSession(t *testing.T, base, sessionID string) sessionView {
	t.Helper()
	var s sessionView
	apiJSON(t, http.MethodGet, base+"/v1/sessions/"+sessionID, "", nil, http.StatusOK, &s)
	return s
}

// awaitingReview starts the demo in a new session under the default review
// policy (the preview) and waits until its room script awaits a decision,
// answering the session, the run and the call.
func awaitingReview(t *testing.T, base string) (sessionID, runID, callID string) {
	t.Helper()
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	apiJSON(t, http.MethodPost, base+"/v1/sessions", "", map[string]any{"hostApp": "freecad"}, http.StatusOK, &sess)
	var started struct {
		RunID string `json:"runId"`
	}
	apiJSON(t, http.MethodPost, base+"/v1/sessions/"+sess.SessionID+"/runs:start", "", map[string]any{"prompt": demoPrompt}, http.StatusOK, &started)
	waitFor(t, "the room script to await review", linkPatience, func() bool {
		s := getSession(t, base, sess.SessionID)
		callID = s.PendingToolCall.ToolCallID
		return s.PendingToolCall.Review == "REVIEW_STATE_AWAITING"
	})
	return sess.SessionID, started.RunID, callID
}

// approve approves the script awaiting review.
func approve(t *testing.T, base, sessionID, callID string) {
	t.Helper()
	apiJSON(t, http.MethodPost, base+"/v1/sessions/"+sessionID+"/tool-calls/"+callID+":review", "",
		map[string]any{"verdict": "REVIEW_VERDICT_APPROVE"}, http.StatusOK, nil)
}

// auditOutcomes reads a session's audit log as nexus audit --output json
// prints it: the outcome of each sending of a call, by call id.
func auditOutcomes(t *testing.T, bin string, env []string, sessionID string) map[string][]string {
	t.Helper()
	ac := exec.Command(bin, "audit", "--output", "json", sessionID)
	ac.Env = env
	out, err := ac.Output()
	if err != nil {
		t.Fatalf("nexus audit: %v\n%s", err, out)
	}
	var audit struct {
		Dispatches []struct {
			ToolCallID string `json:"toolCallId"`
			Kind       string `json:"kind"`
			Outcome    string `json:"outcome"`
		} `json:"dispatches"`
	}
	if err := json.Unmarshal(out, &audit); err != nil {
		t.Fatalf("nexus audit --output json: %v\n%s", err, out)
	}
	got := map[string][]string{}
	for _, d := range audit.Dispatches {
		if d.Kind == "SCRIPT_KIND_TASK_AUTOMATION" {
			got[d.ToolCallID] = append(got[d.ToolCallID], d.Outcome)
		}
	}
	return got
}

// TestKilledDevResumesTheApprovedCall runs the demo on nexus dev's embedded
// default (SQLite in its data folder, no Redis) under the preview policy,
// approves the room and kills nexus dev with SIGKILL, then starts it again on
// the same data folder: the approved call is offered to the host again and
// the room is built once (four walls, not eight: the host's ledger, kept
// with the document, answers a repeat), the run completes with what the
// host did, the audit log ends the call committed and never says NO_RESULT,
// and the session's document downloads. The kill lands either a moment after
// the approval (the campaign that found this killed 0.35 s after it, before
// the host saved anything: the host then refuses the approved script, its
// document being back at its last saved state, and the script is previewed
// and approved again) or as the host saves the committed room, before its
// result is delivered.
func TestKilledDevResumesTheApprovedCall(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	t.Run("after the approval", func(t *testing.T) {
		killAfterApproval(t, bin, func(string) { time.Sleep(350 * time.Millisecond) })
	})
	t.Run("as the host saves the room", func(t *testing.T) {
		killAfterApproval(t, bin, func(file string) {
			before, _ := os.Stat(file)
			waitFor(t, "the host to save the approved room", linkPatience, func() bool {
				now, err := os.Stat(file)
				return err == nil && (before == nil || !now.ModTime().Equal(before.ModTime()) || now.Size() != before.Size())
			})
		})
	})
}

// killAfterApproval is TestKilledDevResumesTheApprovedCall with the kill
// landing once wait (given the document's file) returns.
func killAfterApproval(t *testing.T, bin string, wait func(file string)) {
	httpAddr := freeAddr(t)
	env := append(devEnv(t, httpAddr), "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "GEMINI_API_KEY=", "NEXUS_OPENAI_COMPAT_BASE_URL=")
	base := "http://" + httpAddr
	dev := start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")
	waitFor(t, "nexus dev's runtime to link", linkPatience, func() bool { return hostPresence(t, base)["h_dev"] })

	sessionID, runID, callID := awaitingReview(t, base)
	approve(t, base, sessionID, callID)
	wait(filepath.Join(dataDir(env), "freecad", "Nexus.FCStd"))
	dev.Kill()

	start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")
	// A host that restarted on its last saved document refuses a script
	// approved against the one before: nothing ran, and the person is asked
	// again, as after any change since the preview.
	asked := 0
	waitFor(t, "the run to end after the restart", linkPatience, func() bool {
		s := getSession(t, base, sessionID)
		if s.PendingToolCall.Review == "REVIEW_STATE_AWAITING" && asked < 3 {
			asked++
			approve(t, base, sessionID, s.PendingToolCall.ToolCallID)
		}
		return s.ActiveRunID == ""
	})
	t.Logf("approved again after the restart: %d time(s)", asked)
	events := readRunEvents(t, base, runID)
	if !strings.Contains(events, "event: complete") {
		t.Fatalf("the run did not complete after the restart:\n%s", events)
	}
	if got := countRoom(t, env); got["wall"] != 4 {
		t.Errorf("the document has %d walls after the restart, want 4 (the room built once): %v", got["wall"], got)
	}
	outcomes := auditOutcomes(t, bin, env, sessionID)
	o := outcomes[callID]
	if len(o) == 0 || o[len(o)-1] != "DISPATCH_OUTCOME_COMMITTED" || slices.Contains(o, "DISPATCH_OUTCOME_NO_RESULT") {
		t.Errorf("the audit log records the sendings of the approved call %s as %v, want the last committed and none without a result (all: %v)", callID, o, outcomes)
	}
	if code, name, data := download(t, base, sessionID); code != http.StatusOK || len(data) == 0 {
		t.Errorf("the session's document after the restart: HTTP %d, %q, %d bytes; want the saved file", code, name, len(data))
	}
}
