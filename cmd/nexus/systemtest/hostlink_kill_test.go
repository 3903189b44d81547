package systemtest

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"nexus.local/gateway"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/platform/config"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

const linkUserKey = "key-link-user"

// startLinkGateway serves a gateway in front of stack for one user.
func startLinkGateway(t *testing.T, stack *ot.Stack) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- gateway.ServeOn(ctx, config.Map(map[string]string{
			"NEXUS_ORCHESTRATOR_ADDR": stack.Addr, "NEXUS_API_KEYS": linkUserKey + ":linker", "NEXUS_INTERNAL_KEY": ot.InternalKey,
			"NEXUS_RATE_LIMIT_RPS": "0", "NEXUS_LOG_LEVEL": "error",
		}), lis)
	}()
	t.Cleanup(func() { cancel(); <-errc })
	return "http://" + lis.Addr().String()
}

// pairOverHTTP pairs a host runtime for key's user as the runtime and the
// person do, and answers its host token.
func pairOverHTTP(t *testing.T, base, key string) string {
	t.Helper()
	var start struct{ DeviceCode, UserCode string }
	apiJSON(t, http.MethodPost, base+"/v1/host-pairings", "", map[string]string{"hostApp": "freecad"}, http.StatusOK, &start)
	apiJSON(t, http.MethodPost, base+"/v1/host-pairings:approve", key, map[string]string{"userCode": start.UserCode}, http.StatusOK, nil)
	var claim struct{ HostToken string }
	apiJSON(t, http.MethodPost, base+"/v1/host-pairings:claim", "", map[string]string{"deviceCode": start.DeviceCode}, http.StatusOK, &claim)
	return claim.HostToken
}

// TestKilledRuntimeCompletesTheCallOnce kills the FreeCAD process with
// SIGKILL while the linked runtime runs a 5-second script: the launcher
// restarts it on its checkpoint, the link offers the unanswered call again,
// and the call completes with its effect in the document once.
func TestKilledRuntimeCompletesTheCallOnce(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "starts")
	script := "import time\nopen(" + pyString(mark) + ", 'a').write('start\\n')\ntime.sleep(5)\ndoc.addObject('Part::Box', 'Slow')\n"
	vendor := ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
		if len(r.ToolResults()) > 0 {
			return ot.Turn{Blocks: []ot.Block{ot.Text("The slow box is in.")}}
		}
		return ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_slow", "execute_task_automation", map[string]any{"description": "Slow box", "code": script})}}
	})
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	base := startLinkGateway(t, stack)
	token := pairOverHTTP(t, base, linkUserKey)
	restarted := make(chan string, 4)
	rt, err := launcher.Start(context.Background(), launcher.Options{Addr: "127.0.0.1:0", Connect: base, LinkToken: token, StartTimeout: 5 * time.Minute,
		OnRestart: func(reason string) { restarted <- reason }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	var hosts linkedHosts
	waitFor(t, "the runtime to link", linkPatience, func() bool {
		apiJSON(t, http.MethodGet, base+"/v1/hosts", linkUserKey, nil, http.StatusOK, &hosts)
		return len(hosts.LinkedHosts) == 1 && hosts.LinkedHosts[0].Online
	})
	var sess struct{ SessionID, HostID string }
	apiJSON(t, http.MethodPost, base+"/v1/sessions", linkUserKey, map[string]any{"hostApp": "freecad", "reviewPolicy": "REVIEW_POLICY_NONE"}, http.StatusOK, &sess)
	var started struct{ RunID string }
	apiJSON(t, http.MethodPost, base+"/v1/sessions/"+sess.SessionID+"/runs:start", linkUserKey, map[string]any{"prompt": "a slow box"}, http.StatusOK, &started)
	waitFor(t, "the script to start", linkPatience, func() bool { b, _ := os.ReadFile(mark); return len(b) > 0 })
	pid := rt.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed FreeCAD process %d while the script ran", pid)
	waitFor(t, "the run to end", linkPatience, func() bool {
		var s struct{ ActiveRunID string }
		apiJSON(t, http.MethodGet, base+"/v1/sessions/"+sess.SessionID, linkUserKey, nil, http.StatusOK, &s)
		return s.ActiveRunID == ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{ToolCallId: "count", Mode: hostv1.Mode_MODE_READ_ONLY,
		Code: "print(len([o for o in doc.Objects if o.Name.startswith('Slow')]))\n"})
	if err != nil || res.GetError() != nil {
		t.Fatalf("count: %v %v", err, res.GetError())
	}
	if got := strings.TrimSpace(res.GetStdout()); got != "1" {
		t.Errorf("the document holds %s slow boxes, want 1", got)
	}
	starts, _ := os.ReadFile(mark)
	if n := strings.Count(string(starts), "start"); n != 2 {
		t.Errorf("the script started %d times, want 2 (killed once, then run to its end)", n)
	}
	if rt.Restarts() < 1 {
		t.Errorf("the launcher did not restart the killed process")
	}
	// What nexus dev and nexus host freecad tell the person hears of it.
	select {
	case reason := <-restarted:
		if !strings.Contains(reason, "killed") {
			t.Errorf("the restart's reason is %q, want it to say the process was killed", reason)
		}
	default:
		t.Errorf("the launcher restarted the process without telling OnRestart")
	}
	log := readRunEventsAs(t, base, started.RunID, linkUserKey)
	if !strings.Contains(log, "event: complete") || !strings.Contains(log, `"committed":true`) {
		t.Fatalf("the run did not complete with the commit:\n%s", log)
	}
}

// pyString quotes s as a Python string literal.
func pyString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// readRunEventsAs reads a finished run's event log with key.
func readRunEventsAs(t *testing.T, base, runID, key string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/runs/"+runID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
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
