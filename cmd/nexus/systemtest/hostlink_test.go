package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

// linkPatience bounds the waits on a whole demo run on a loaded machine;
// it guards against a hang, it measures nothing.
const linkPatience = 5 * time.Minute

// apiJSON sends a JSON request to the gateway and decodes the answer into
// out (when given), failing the test unless the status is want.
func apiJSON(t *testing.T, method, url, token string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, url, resp.StatusCode, want, got)
	}
	if out != nil {
		if err := json.Unmarshal(got, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, url, got, err)
		}
	}
}

// waitFor polls cond until it holds or patience runs out.
func waitFor(t *testing.T, what string, patience time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting (%s) for %s", patience, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type linkedHosts struct {
	LinkedHosts []struct {
		HostID  string `json:"hostId"`
		HostApp string `json:"hostApp"`
		Online  bool   `json:"online"`
	} `json:"linkedHosts"`
}

// roomCensus counts what the demo room is made of in the runtime's document.
const roomCensus = `import Draft
for o in doc.Objects:
    print(Draft.getType(o), getattr(o, "IfcType", ""), sep="|")
`

// countRoom reads the document of nexus dev's runtime and counts walls,
// doors, windows and levels.
func countRoom(t *testing.T, env []string) map[string]int {
	t.Helper()
	res, failure := devHost(t, env).Carry(t.Context(), "", &agentv1.ToolCall{ToolCallId: "census", HostRequest: &agentv1.ToolCall_Execute{
		Execute: &hostv1.ExecuteRequest{ToolCallId: "census-" + time.Now().Format("150405.000000"), Mode: hostv1.Mode_MODE_READ_ONLY, Code: roomCensus}}})
	if failure != nil || res.GetError() != nil {
		t.Fatalf("read the document: %v %v", failure, res.GetError())
	}
	n := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(res.GetStdout()), "\n") {
		typ, ifc, _ := strings.Cut(line, "|")
		switch {
		case typ == "Wall":
			n["wall"]++
		case strings.Contains(ifc, "Door") || typ == "Door":
			n["door"]++
		case typ == "Window":
			n["window"]++
		case typ == "Floor" || typ == "BuildingPart" || strings.Contains(ifc, "Storey"):
			n["level"]++
		}
	}
	t.Logf("document: %s", strings.ReplaceAll(strings.TrimSpace(res.GetStdout()), "\n", ", "))
	return n
}

// TestUnfollowedRunCompletesOnLinkedHost starts the demo with runs:start
// and follows nothing: nexus dev's FreeCAD runtime, linked with no step,
// carries every call from its delivery log, and the room is built.
func TestUnfollowedRunCompletesOnLinkedHost(t *testing.T) {
	bin := buildNexus(t)
	base, env := startDemoDev(t, bin)
	var hosts linkedHosts
	waitFor(t, "nexus dev's runtime to link", linkPatience, func() bool {
		apiJSON(t, http.MethodGet, base+"/v1/hosts", "", nil, http.StatusOK, &hosts)
		return len(hosts.LinkedHosts) == 1 && hosts.LinkedHosts[0].Online
	})
	var sess struct {
		SessionID string `json:"sessionId"`
		HostID    string `json:"hostId"`
	}
	apiJSON(t, http.MethodPost, base+"/v1/sessions", "", map[string]any{"hostApp": "freecad", "reviewPolicy": "REVIEW_POLICY_NONE"}, http.StatusOK, &sess)
	if sess.HostID != hosts.LinkedHosts[0].HostID {
		t.Fatalf("the session is bound to host %q, want the one linked host %q", sess.HostID, hosts.LinkedHosts[0].HostID)
	}
	var started struct {
		RunID string `json:"runId"`
	}
	apiJSON(t, http.MethodPost, base+"/v1/sessions/"+sess.SessionID+"/runs:start", "", map[string]any{"prompt": demoPrompt}, http.StatusOK, &started)
	// Nobody follows: only the session's state is read, now and then.
	waitFor(t, "the run to end", linkPatience, func() bool {
		var s struct {
			ActiveRunID string `json:"activeRunId"`
		}
		apiJSON(t, http.MethodGet, base+"/v1/sessions/"+sess.SessionID, "", nil, http.StatusOK, &s)
		return s.ActiveRunID == ""
	})
	events := readRunEvents(t, base, started.RunID)
	if !strings.Contains(events, "event: complete") {
		t.Fatalf("the run did not complete:\n%s", events)
	}
	if !strings.Contains(events, `"hostId":"`+sess.HostID+`"`) {
		t.Errorf("the run's tool calls do not name the linked host %s", sess.HostID)
	}
	got := countRoom(t, env)
	want := map[string]int{"wall": 4, "door": 1, "window": 1, "level": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("the document has %d %s(s), want %d (all: %v)", got[k], k, v, got)
		}
	}
}

// readRunEvents reads a finished run's whole event log.
func readRunEvents(t *testing.T, base, runID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
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
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
