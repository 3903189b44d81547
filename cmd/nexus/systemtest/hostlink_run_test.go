package systemtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWatchesTheLinkedHost runs `nexus run` through a gateway with no
// host runtime paired with it: it says it only watches, the user's linked
// FreeCAD runtime carries the script, and nexus run shows the run complete.
func TestRunWatchesTheLinkedHost(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	base := startOneCallStack(t, "toolu_watched", "A box", "doc.addObject('Part::Box', 'Watched')\n", "The box is in.")
	token := pairOverHTTP(t, base, linkUserKey)
	rt := startLinkedFreeCAD(t, base, token, nil)
	waitLinked(t, base, linkUserKey)
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
	if got := countNamed(t, rt, "Watched"); got != "1" {
		t.Errorf("the document holds %s boxes, want 1", got)
	}
}
