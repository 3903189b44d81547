package systemtest

import (
	"net/http"
	"strings"
	"testing"
)

// TestUnfollowedRunCompletesOnLinkedHost starts the demo with runs:start
// and follows nothing: nexus dev's FreeCAD runtime, linked with no step,
// carries every call from its delivery log, and the room is built.
func TestUnfollowedRunCompletesOnLinkedHost(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	base, env := startDemoDev(t, bin)
	hosts := waitLinked(t, base, "")
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
	waitRunEnded(t, base, "", sess.SessionID, "the run to end")
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
