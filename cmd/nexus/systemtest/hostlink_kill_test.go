package systemtest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestKilledRuntimeCompletesTheCallOnce kills the FreeCAD process with
// SIGKILL while the linked runtime runs a 5-second script: the launcher
// restarts it on its checkpoint, the link offers the unanswered call again,
// and the call completes with its effect in the document once.
func TestKilledRuntimeCompletesTheCallOnce(t *testing.T) {
	t.Parallel()
	mark := filepath.Join(t.TempDir(), "starts")
	script := "import time\nopen(" + pyString(mark) + ", 'a').write('start\\n')\ntime.sleep(5)\ndoc.addObject('Part::Box', 'Slow')\n"
	base := startOneCallStack(t, "toolu_slow", "Slow box", script, "The slow box is in.")
	token := pairOverHTTP(t, base, linkUserKey)
	restarted := make(chan string, 4)
	rt := startLinkedFreeCAD(t, base, token, func(reason string) { restarted <- reason })
	waitLinked(t, base, linkUserKey)
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
	waitRunEnded(t, base, linkUserKey, sess.SessionID, "the run to end")
	if got := countNamed(t, rt, "Slow"); got != "1" {
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
