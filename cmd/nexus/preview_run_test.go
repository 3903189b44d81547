package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// This file follows a demo run under the preview policy over HTTP, as the
// web UI does, for the tests that restart nexus dev while it awaits review.

// reviewSession is what the test reads of its session.
type reviewSession struct {
	HostID          string `json:"hostId"`
	ActiveRunID     string `json:"activeRunId"`
	PendingToolCall *struct {
		ToolCallID string `json:"toolCallId"`
		Review     string `json:"review"`
	} `json:"pendingToolCall"`
}

// awaiting answers the call the session waits on for a person, or "".
func (s reviewSession) awaiting() string {
	if s.PendingToolCall == nil || s.PendingToolCall.Review != "REVIEW_STATE_AWAITING" {
		return ""
	}
	return s.PendingToolCall.ToolCallID
}

// roomOnce checks that census ("Type|IfcType" per object) holds the room's
// four walls once.
func roomOnce(t *testing.T, census []string) {
	t.Helper()
	walls := 0
	for _, o := range census {
		if strings.HasPrefix(o, "Wall|") {
			walls++
		}
	}
	if walls != 4 {
		t.Errorf("the document holds %d walls, want the room's 4 once: %v", walls, census)
	}
}

// committedOnce checks that the audit log has one committed sending of an
// automation (its epilogue, the change report's script, is logged beside it
// under the same call).
func committedOnce(t *testing.T, base, sessionID string) {
	t.Helper()
	var audit struct {
		Dispatches []struct{ ToolCallID, Kind, Outcome, ErrorType string }
	}
	apiJSON(t, http.MethodGet, base+"/v1/sessions/"+sessionID+"/dispatches", "", nil, http.StatusOK, &audit)
	var committed, all []string
	for _, d := range audit.Dispatches {
		all = append(all, fmt.Sprintf("%s %s %s %s", d.ToolCallID, d.Kind, d.Outcome, d.ErrorType))
		if d.Kind == "SCRIPT_KIND_TASK_AUTOMATION" && d.Outcome == "DISPATCH_OUTCOME_COMMITTED" {
			committed = append(committed, d.ToolCallID)
		}
	}
	if len(committed) != 1 {
		t.Errorf("the audit log has %d committed sendings %v, want 1:\n%s", len(committed), committed, strings.Join(all, "\n"))
	}
}

// previewRun is a demo run under the preview policy, as its session shows
// it over HTTP.
type previewRun struct {
	t                    *testing.T
	base, sessionID, run string
}

// startPreviewRun starts the demo in a new session bound to hostID under
// the preview policy.
func startPreviewRun(t *testing.T, base, hostID string) *previewRun {
	t.Helper()
	var sess struct{ SessionID string }
	apiJSON(t, http.MethodPost, base+"/v1/sessions", "", map[string]any{"hostApp": "freecad", "hostId": hostID, "reviewPolicy": "REVIEW_POLICY_PREVIEW"}, http.StatusOK, &sess)
	var started struct{ RunID string }
	apiJSON(t, http.MethodPost, base+"/v1/sessions/"+sess.SessionID+"/runs:start", "", map[string]any{"prompt": demoPrompt}, http.StatusOK, &started)
	return &previewRun{t: t, base: base, sessionID: sess.SessionID, run: started.RunID}
}

func (r *previewRun) session() reviewSession {
	var s reviewSession
	apiJSON(r.t, http.MethodGet, r.base+"/v1/sessions/"+r.sessionID, "", nil, http.StatusOK, &s)
	return s
}

// awaitReview waits until a previewed script awaits review and answers it.
func (r *previewRun) awaitReview() string {
	var call string
	waitFor(r.t, "the previewed room to await review", linkPatience, func() bool { call = r.session().awaiting(); return call != "" })
	return call
}

// approve approves call and waits until the run took the decision (until
// then the session still shows the call awaiting review).
func (r *previewRun) approve(call string) {
	apiJSON(r.t, http.MethodPost, r.base+"/v1/sessions/"+r.sessionID+"/tool-calls/"+call+":review", "",
		map[string]any{"verdict": "REVIEW_VERDICT_APPROVE"}, http.StatusOK, nil)
	waitFor(r.t, "the run to take the approval of "+call, linkPatience, func() bool {
		return strings.Contains(followRunFor(r.t, r.base, r.run, 2*time.Second), `"reviewDecided":{"toolCallId":"`+call+`"`)
	})
}

// awaitEnd waits until the run ended, answering "", or a call awaits
// review again, answering it.
func (r *previewRun) awaitEnd() string {
	var again string
	waitFor(r.t, "the run to end", linkPatience, func() bool {
		s := r.session()
		again = s.awaiting()
		return s.ActiveRunID == "" || again != ""
	})
	return again
}

// completed checks that the run completed.
func (r *previewRun) completed() {
	if events := readRunEvents(r.t, r.base, r.run); !strings.Contains(events, "event: complete") {
		r.t.Fatalf("the run did not complete:\n%s", events)
	}
}

// notices answers the notices the run's event log holds so far.
func (r *previewRun) notices() []string {
	var out []string
	for _, m := range regexp.MustCompile(`"notice":\{"text":"([^"]*)"`).FindAllStringSubmatch(followRunFor(r.t, r.base, r.run, 5*time.Second), -1) {
		out = append(out, m[1])
	}
	return out
}

// followRunFor reads what a run's event log holds within d (the run may
// still be going).
func followRunFor(t *testing.T, base, runID string, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
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
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
