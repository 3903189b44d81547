package systemtest

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	ot "nexus.local/services/orchestrator/orchestratortest"
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
	vendor := ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
		if len(r.ToolResults()) > 0 {
			return ot.Turn{Blocks: []ot.Block{ot.Text("The box is in.")}}
		}
		return ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_first", "execute_task_automation",
			map[string]any{"description": "A box", "code": "doc.addObject('Part::Box', 'Awaited')\n"})}}
	})
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	base := startLinkGateway(t, stack)
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
	rt, err := launcher.Start(context.Background(), launcher.Options{Addr: "127.0.0.1:0", Connect: base, LinkToken: token, StartTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
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
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{ToolCallId: "count", Mode: hostv1.Mode_MODE_READ_ONLY,
		Code: "print(len([o for o in doc.Objects if o.Name.startswith('Awaited')]))\n"})
	if err != nil || res.GetError() != nil {
		t.Fatalf("count: %v %v", err, res.GetError())
	}
	if got := strings.TrimSpace(res.GetStdout()); got != "1" {
		t.Errorf("the document holds %s boxes, want 1", got)
	}
}
