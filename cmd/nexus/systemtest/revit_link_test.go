package systemtest

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestRevitRunOnTheLinkedDouble is the demo-like Revit run through the whole
// mesh on nexus dev with the Revit add-in's runtime on the double linked over
// the host link: it pairs (nexus hosts approve CODE), the session is bound to
// it, and nobody follows or carries the run: the runtime takes every call
// from its delivery log. The model is told the change report naming what was
// built, a script that raises leaves the document as it was, and a larger
// one is reported in grouped counts.
func TestRevitRunOnTheLinkedDouble(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	vendor := ot.NewAnthropic(t, revitDemoTurns()...)
	base, env := devWithVendor(t, bin, vendor.URL)
	hostAddr, hosts := linkRevitDouble(t, bin, env, base)

	var sess struct{ SessionID, HostID string }
	apiJSON(t, http.MethodPost, base+"/v1/sessions", "", map[string]any{"hostApp": "revit", "model": ot.Model,
		"reviewPolicy": "REVIEW_POLICY_NONE"}, http.StatusOK, &sess)
	if sess.HostID != hosts.LinkedHosts[0].HostID {
		t.Fatalf("the session is bound to host %q, want the linked revit host %q", sess.HostID, hosts.LinkedHosts[0].HostID)
	}
	var started struct{ RunID string }
	apiJSON(t, http.MethodPost, base+"/v1/sessions/"+sess.SessionID+"/runs:start", "",
		map[string]any{"prompt": "Build a small room on Level 1 with a door"}, http.StatusOK, &started)
	waitRunEnded(t, base, "", sess.SessionID, "the run to end")
	if events := readRunEvents(t, base, started.RunID); !strings.Contains(events, "event: complete") ||
		!strings.Contains(events, `"hostId":"`+sess.HostID+`"`) {
		t.Fatalf("the run did not complete on the linked host %s:\n%s", sess.HostID, events)
	}

	// What the model was told of each script, as the runtime reported it.
	told := map[string]string{}
	for _, r := range vendor.Requests() {
		for _, b := range r.ToolResults() {
			told[b.ToolUseID], _ = b.ToolResultText()
		}
	}
	for id, want := range map[string]*regexp.Regexp{
		"toolu_r1": regexp.MustCompile(`(?s)=== CHANGE REPORT ===.*#\d+ Walls \| Basic Wall: Generic - 200mm \| Level: Level 1.*` +
			`#\d+ Doors \| Single-Flush: 0915 x 2134mm \| Level: Level 1`),
		"toolu_r2": regexp.MustCompile(`RuntimeError`),
		"toolu_r3": regexp.MustCompile(`Walls / Basic Wall: Generic - 200mm: 16`),
	} {
		if !want.MatchString(told[id]) {
			t.Errorf("the model was told of %s %q, want it to match %s", id, told[id], want)
		}
	}
	// The failed script's wall is not in the document: 4 + 16 walls.
	if n := revitWallCount(t, "http://"+hostAddr, "revit-pair"); n != "20" {
		t.Errorf("want 20 walls (the failed script's wall rolled back), got %q", n)
	}
}

// revitDemoTurns is the scripted model of the Revit demo: walls and a door,
// a script that raises, a row of sixteen walls, then an answer.
func revitDemoTurns() []ot.Turn {
	return []ot.Turn{
		{Blocks: []ot.Block{ot.Text("Four walls on Level 1 and a door."),
			ot.ToolUse("toolu_r1", "execute_task_automation", map[string]any{"description": "Walls and a door", "code": revitArticleScript})}},
		{Blocks: []ot.Block{ot.ToolUse("toolu_r2", "execute_task_automation", map[string]any{"description": "A wall that fails",
			"code": "from Autodesk.Revit.DB import *\nlevel = FilteredElementCollector(doc).OfClass(Level).FirstElement()\n" +
				"Wall.Create(doc, Line.CreateBound(XYZ(0, 40, 0), XYZ(10, 40, 0)), level.Id, False)\nraise RuntimeError('wrong level')\n"})}},
		{Blocks: []ot.Block{ot.ToolUse("toolu_r3", "execute_task_automation", map[string]any{"description": "A row of walls",
			"code": "from Autodesk.Revit.DB import *\nlevel = FilteredElementCollector(doc).OfClass(Level).FirstElement()\n" +
				"for i in range(16):\n    Wall.Create(doc, Line.CreateBound(XYZ(40, 10 * i, 0), XYZ(60, 10 * i, 0)), level.Id, False)\n"})}},
		{Blocks: []ot.Block{ot.Text("Built four walls with a door, and a row of sixteen walls.")}},
	}
}
