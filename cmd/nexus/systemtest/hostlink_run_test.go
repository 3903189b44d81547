package systemtest

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestRunWatchesTheLinkedHost runs `nexus run` through a gateway with no
// host runtime paired with it: it says it only watches, the user's linked
// FreeCAD runtime carries the script, and nexus run shows the run complete.
func TestRunWatchesTheLinkedHost(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	vendor := ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
		if len(r.ToolResults()) > 0 {
			return ot.Turn{Blocks: []ot.Block{ot.Text("The box is in.")}}
		}
		return ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_watched", "execute_task_automation",
			map[string]any{"description": "A box", "code": "doc.addObject('Part::Box', 'Watched')\n"})}}
	})
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	base := startLinkGateway(t, stack)
	token := pairOverHTTP(t, base, linkUserKey)
	rt, err := launcher.Start(context.Background(), launcher.Options{Addr: "127.0.0.1:0", Connect: base, LinkToken: token, StartTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	var hosts linkedHosts
	waitFor(t, "the runtime to link", linkPatience, func() bool {
		apiJSON(t, http.MethodGet, base+"/v1/hosts", linkUserKey, nil, http.StatusOK, &hosts)
		return len(hosts.LinkedHosts) == 1 && hosts.LinkedHosts[0].Online
	})
	ctx, cancel := context.WithTimeout(t.Context(), linkPatience)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--yes", "--views", t.TempDir(), "a box")
	cmd.Env = append(os.Environ(), "NEXUS_GATEWAY_URL="+base, "NEXUS_API_KEY="+linkUserKey, "NEXUS_HOST_URL=", "NEXUS_HOST_TOKEN=",
		"NEXUS_DEV_STATE="+filepath.Join(t.TempDir(), "none.json"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nexus run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "no host runtime paired with nexus run: the session's linked FreeCAD host carries its scripts") {
		t.Errorf("nexus run does not say it only watches:\n%s", out)
	}
	if !strings.Contains(string(out), "✓ committed") {
		t.Errorf("nexus run does not show the linked host's commit:\n%s", out)
	}
	res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{ToolCallId: "count", Mode: hostv1.Mode_MODE_READ_ONLY,
		Code: "print(len([o for o in doc.Objects if o.Name.startswith('Watched')]))\n"})
	if err != nil || res.GetError() != nil {
		t.Fatalf("count: %v %v", err, res.GetError())
	}
	if got := strings.TrimSpace(res.GetStdout()); got != "1" {
		t.Errorf("the document holds %s boxes, want 1", got)
	}
}
