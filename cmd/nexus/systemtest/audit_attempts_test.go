package systemtest

import (
	"os/exec"
	"strings"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

// TestAuditShowsARefusedApprovalAsRefused runs the demo under the preview
// policy in a terminal while someone changes the document during the first
// review: the host refuses the approved room (its preview no longer holds),
// the room is previewed and approved again, and commits. `nexus audit` lists
// the refused sending as rolled back with RevisionChanged and only the last
// one as committed.
func TestAuditShowsARefusedApprovalAsRefused(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	env := startDev(t, bin)
	out, code := ptyRun(t, bin, env, func(n int) string {
		if n == 0 {
			// Someone changes the document while the person reads the preview.
			res, failure := devHost(t, env).Carry(t.Context(), "", &agentv1.ToolCall{ToolCallId: "meanwhile", HostRequest: &agentv1.ToolCall_Execute{
				Execute: &hostv1.ExecuteRequest{ToolCallId: "meanwhile", Mode: hostv1.Mode_MODE_TRANSACTION, TransactionName: "meanwhile",
					Code: "doc.addObject('Part::Sphere', 'Meanwhile')\n"}}})
			if failure != nil || !res.GetCommitted() {
				t.Fatalf("change the document: %v %v", failure, res.GetError())
			}
		}
		return "a"
	}, "run", "--review", "preview", demoPrompt)
	if code != 0 {
		t.Fatalf("exit %d, want 0; output:\n%s", code, out)
	}
	ac := exec.Command(bin, "audit", "--wide", sessionOf(t, out))
	ac.Env = env
	audit, err := ac.CombinedOutput()
	if err != nil {
		t.Fatalf("nexus audit: %v\n%s", err, audit)
	}
	// The model's automation, each time it left approved (previews have
	// their own call ids).
	var sendings []string
	for _, l := range strings.Split(string(audit), "\n") {
		if strings.Contains(l, " task automation ") && !strings.Contains(l, ".preview") {
			sendings = append(sendings, l)
		}
	}
	if len(sendings) < 2 {
		t.Fatalf("want the room sent at least twice (refused, then committed), the audit lists:\n%s", audit)
	}
	for i, l := range sendings {
		last := i == len(sendings)-1
		if last && !strings.Contains(l, " committed ") || !last && !strings.Contains(l, " rolled back (RevisionChanged) ") {
			t.Errorf("sending %d of %d reads %q; want each refused sending rolled back (RevisionChanged), the last committed", i+1, len(sendings), l)
		}
	}
	t.Logf("nexus audit:\n%s", audit)
}
