package systemtest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/platform/proctest"
)

// TestDevRestartKeepsAddonReview restarts nexus dev while a FreeCAD runtime
// it does not start itself (the add-on's: headless FreeCAD linked with a
// token file, paired by code) is linked and a demo run under the preview
// policy awaits review. The runtime links again under its host id without
// pairing, the review is still pending, and approving it commits the room
// once, with no second preview. Ctrl-C and SIGKILL alike.
func TestDevRestartKeepsAddonReview(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	t.Run("interrupt", func(t *testing.T) {
		reviewAcrossRestart(t, bin, startLinkedRuntime, func(dev *proctest.Process) { interrupt(t, dev) })
	})
	t.Run("kill", func(t *testing.T) {
		reviewAcrossRestart(t, bin, startLinkedRuntime, func(dev *proctest.Process) { dev.Kill() })
	})
}

// addonRuntime is a FreeCAD linked to nexus dev as the add-on links it.
type addonRuntime struct {
	// output is what its link logged so far.
	output func() string
	// tokenFile is where it keeps its host token once paired.
	tokenFile func() string
	// census answers "Type|IfcType" of each object of its document, read
	// once no script runs.
	census func() []string
}

// startLinkedRuntime starts the FreeCAD host runtime headless, linking to
// base with no token yet: it pairs and keeps its token in a file, as the
// add-on does in FreeCAD's user data folder.
func startLinkedRuntime(t *testing.T, _, base string) addonRuntime {
	tokenFile := filepath.Join(t.TempDir(), "host-token")
	out := &lockedBuffer{}
	rt, err := launcher.Start(context.Background(), launcher.Options{Addr: "127.0.0.1:0", Connect: base, LinkTokenFile: tokenFile,
		StartTimeout: 5 * time.Minute, Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rt.Stop()
		if t.Failed() {
			t.Logf("the runtime's output:\n%s", out)
		}
	})
	census := func() []string {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{ToolCallId: "census", Mode: hostv1.Mode_MODE_READ_ONLY, Code: roomCensus})
		if err != nil || res.GetError() != nil {
			t.Fatalf("read the document: %v %v", err, res.GetError())
		}
		return strings.Split(strings.TrimSpace(res.GetStdout()), "\n")
	}
	return addonRuntime{output: out.String, tokenFile: func() string { return tokenFile }, census: census}
}

// approvalCodePattern matches the link's line asking the person to approve
// its pairing code.
const approvalCodePattern = `approve code (\S+) at `

// reviewAcrossRestart runs the demo under the preview policy on the runtime
// startRuntime links to nexus dev, stops nexus dev with stop while the room
// awaits review, starts it again on the same data folder, and approves.
func reviewAcrossRestart(t *testing.T, bin string, startRuntime func(t *testing.T, bin, base string) addonRuntime, stop func(*proctest.Process)) {
	httpAddr := freeAddr(t)
	env := append(devEnv(t, httpAddr), "NEXUS_DEV_NO_HOST=true",
		// The demo model is the default only while no vendor is configured.
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "GEMINI_API_KEY=", "NEXUS_OPENAI_COMPAT_BASE_URL=")
	base := "http://" + httpAddr
	codeLine := regexp.MustCompile(approvalCodePattern)
	dev := start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")

	rt := startRuntime(t, bin, base)
	var code string
	waitFor(t, "the runtime to show a pairing code", linkPatience, func() bool {
		if m := codeLine.FindStringSubmatch(rt.output()); m != nil {
			code = m[1]
		}
		return code != ""
	})
	apiJSON(t, http.MethodPost, base+"/v1/host-pairings:approve", "", map[string]string{"userCode": code}, http.StatusOK, nil)
	var hostID string
	waitFor(t, "the paired runtime to link", linkPatience, func() bool {
		for id, online := range hostPresence(t, base) {
			if online {
				hostID = id
			}
		}
		return hostID != ""
	})
	token, err := os.ReadFile(rt.tokenFile())
	if err != nil || len(token) == 0 {
		t.Fatalf("the runtime kept no host token in %s: %v", rt.tokenFile(), err)
	}

	run := startPreviewRun(t, base, hostID)
	pending := run.awaitReview()
	linksBefore := strings.Count(rt.output(), "host link open on")

	stop(dev)
	start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")
	waitFor(t, "the runtime to link again", linkPatience, func() bool {
		if len(codeLine.FindAllString(rt.output(), -1)) > 1 {
			t.Fatalf("after the restart the runtime asks to be paired again:\n%s", rt.output())
		}
		return strings.Count(rt.output(), "host link open on") > linksBefore && hostPresence(t, base)[hostID]
	})
	if hosts := hostPresence(t, base); len(hosts) != 1 {
		t.Errorf("after the restart the hosts are %v, want %s alone", hosts, hostID)
	}
	if after, _ := os.ReadFile(rt.tokenFile()); string(after) != string(token) {
		t.Errorf("the runtime's host token changed across the restart")
	}
	if s := run.session(); s.awaiting() != pending || s.HostID != hostID {
		t.Fatalf("after the restart the session waits on %q bound to %q, want %s awaiting review on %s", s.awaiting(), s.HostID, pending, hostID)
	}

	run.approve(pending)
	if again := run.awaitEnd(); again != "" {
		// Nothing changed the document: a second preview is a refused
		// approval.
		t.Errorf("the approved room did not commit after the restart: %s awaits review again; the notices: %q", again, run.notices())
		run.approve(again)
		run.awaitEnd()
	}
	run.completed()
	roomOnce(t, rt.census())
	committedOnce(t, base, run.sessionID)
}

// TestDevRestartTellsWhyPreviewRunsAgain restarts nexus dev with Ctrl-C
// while the previewed room awaits review on nexus dev's own FreeCAD, which
// restarts with it on the document as last saved. The runtime is a new
// process, so the host refuses the approved room (the preview it approved
// was of another process's document): the person is told so in words before
// the room is previewed again, and approving that commits the room once.
func TestDevRestartTellsWhyPreviewRunsAgain(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	env := append(devEnv(t, httpAddr), "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "GEMINI_API_KEY=", "NEXUS_OPENAI_COMPAT_BASE_URL=")
	base := "http://" + httpAddr
	dev := start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")
	waitFor(t, "nexus dev's own runtime to link", linkPatience, func() bool { return hostPresence(t, base)["h_dev"] })
	run := startPreviewRun(t, base, "h_dev")
	pending := run.awaitReview()

	interrupt(t, dev)
	start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")
	waitFor(t, "nexus dev's own runtime to link again", linkPatience, func() bool { return hostPresence(t, base)["h_dev"] })
	if got := run.session().awaiting(); got != pending {
		t.Fatalf("after the restart the session waits on %q, want %s awaiting review", got, pending)
	}
	run.approve(pending)
	if again := run.awaitEnd(); again != "" {
		said := strings.Join(run.notices(), " ")
		if !strings.Contains(said, "the document changed after the preview you approved") {
			t.Errorf("the room is previewed again without a word of why; the run's notices: %q", said)
		} else {
			t.Logf("previewed again, after the notice: %s", said)
		}
		run.approve(again)
		if more := run.awaitEnd(); more != "" {
			t.Fatalf("the second approval did not commit either: %s awaits review", more)
		}
	}
	run.completed()
	n := countRoom(t, env)
	if n["wall"] != 4 {
		t.Errorf("the document holds %d walls, want the room's 4 once (all: %v)", n["wall"], n)
	}
	committedOnce(t, base, run.sessionID)
}
