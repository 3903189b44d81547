package systemtest

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// waitNotice follows a run's events as key until its host_waiting notice
// arrives, and answers it; it fails the test when the run ends first.
func waitNotice(t *testing.T, base, runID, key string) *agentv1.HostWaiting {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), linkPatience)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+runID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var c agentv1.StreamChunk
		if err := protojson.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		if w := c.GetMetadata().GetHostWaiting(); w != nil {
			return w
		}
		if c.GetComplete() != nil || c.GetError() != nil {
			t.Fatalf("the run ended without a host_waiting notice: %s", data)
		}
	}
	t.Fatalf("the run's stream ended without a host_waiting notice: %v", sc.Err())
	return nil
}

// TestCallWaitsForTheFirstHost starts a run on a session of a user with no
// linked FreeCAD: its call is due with no host to take it, and every
// follower is told it waits for a FreeCAD to connect. Then the user pairs
// and links a real FreeCAD runtime: the session binds to it, the call is
// delivered, and the run completes with its effect in the document once.
func TestCallWaitsForTheFirstHost(t *testing.T) {
	t.Parallel()
	base := startOneCallStack(t, "toolu_first", "A box", "doc.addObject('Part::Box', 'Awaited')\n", "The box is in.")
	var sess struct{ SessionID, HostID string }
	apiJSON(t, http.MethodPost, base+"/v1/sessions", linkUserKey, map[string]any{"hostApp": "freecad", "reviewPolicy": "REVIEW_POLICY_NONE"}, http.StatusOK, &sess)
	if sess.HostID != "" {
		t.Fatalf("a session of a user with no linked host is bound to %q", sess.HostID)
	}
	var started struct{ RunID string }
	apiJSON(t, http.MethodPost, base+"/v1/sessions/"+sess.SessionID+"/runs:start", linkUserKey, map[string]any{"prompt": "a box"}, http.StatusOK, &started)
	// Two followers, each on its own stream, both see the notice.
	for i := range 2 {
		w := waitNotice(t, base, started.RunID, linkUserKey)
		if w.GetHostId() != "" || w.GetHostApp() != "freecad" || w.GetToolCallId() != "toolu_first" {
			t.Fatalf("follower %d: notice %v, want the call toolu_first waiting for no host yet of freecad", i, w)
		}
		if !strings.Contains(w.GetText(), "Waiting for a FreeCAD to connect") {
			t.Errorf("follower %d: the notice says %q, want it to say it waits for a FreeCAD to connect", i, w.GetText())
		}
	}
	var s struct{ ActiveRunID, HostID string }
	apiJSON(t, http.MethodGet, base+"/v1/sessions/"+sess.SessionID, linkUserKey, nil, http.StatusOK, &s)
	if s.ActiveRunID != started.RunID || s.HostID != "" {
		t.Fatalf("before any host links the session has run %q and host %q, want run %s waiting and no host", s.ActiveRunID, s.HostID, started.RunID)
	}

	token := pairOverHTTP(t, base, linkUserKey)
	rt := startLinkedFreeCAD(t, base, token, nil)
	waitFor(t, "the run to end", linkPatience, func() bool {
		apiJSON(t, http.MethodGet, base+"/v1/sessions/"+sess.SessionID, linkUserKey, nil, http.StatusOK, &s)
		return s.ActiveRunID == ""
	})
	var hosts linkedHosts
	apiJSON(t, http.MethodGet, base+"/v1/hosts", linkUserKey, nil, http.StatusOK, &hosts)
	if len(hosts.LinkedHosts) != 1 || s.HostID != hosts.LinkedHosts[0].HostID {
		t.Errorf("the session is bound to %q, want the first linked host (hosts: %+v)", s.HostID, hosts.LinkedHosts)
	}
	events := readRunEventsAs(t, base, started.RunID, linkUserKey)
	if !strings.Contains(events, "event: complete") || !strings.Contains(events, `"committed":true`) {
		t.Fatalf("the run did not complete with the commit:\n%s", events)
	}
	if got := countNamed(t, rt, "Awaited"); got != "1" {
		t.Errorf("the document holds %s boxes, want 1", got)
	}
}
