package systemtest

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"nexus.local/platform/proctest"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// pairCode is how the kit's link client names the code a person approves.
var pairCode = regexp.MustCompile(`approve code (\S+) at`)

// TestRevitRunOnTheLinkedDouble is the demo-like Revit run through the whole
// mesh on nexus dev with the Revit add-in's runtime on the double linked over
// the host link: it pairs (nexus hosts approve CODE), the session is bound to
// it, and nobody follows or carries the run: the runtime takes every call
// from its delivery log. The model is told the change report naming what was
// built, a script that raises leaves the document as it was, and a larger
// one is reported in grouped counts.
func TestRevitRunOnTheLinkedDouble(t *testing.T) {
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
	waitFor(t, "the run to end", linkPatience, func() bool {
		var s struct{ ActiveRunID string }
		apiJSON(t, http.MethodGet, base+"/v1/sessions/"+sess.SessionID, "", nil, http.StatusOK, &s)
		return s.ActiveRunID == ""
	})
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

// devWithVendor starts nexus dev (no host of its own) with the scripted
// vendor at vendorURL as Anthropic's: its base URL and environment.
func devWithVendor(t *testing.T, bin, vendorURL string) (string, []string) {
	t.Helper()
	httpAddr := freeAddr(t)
	base := "http://" + httpAddr
	env := append(devEnv(t, httpAddr), "ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL="+vendorURL,
		"OPENAI_API_KEY=", "GEMINI_API_KEY=", "NEXUS_OPENAI_COMPAT_BASE_URL=")
	start(t, bin, env, "dev", "--no-host")
	waitHTTP(t, base+"/readyz")
	return base, env
}

// linkRevitDouble starts `nexus host revit --double --connect` against the
// nexus dev at base, pairs it (nexus hosts approve CODE) and waits until it
// is linked and online: its loopback address (token revit-pair) and the
// linked hosts.
func linkRevitDouble(t *testing.T, bin string, env []string, base string) (string, linkedHosts) {
	t.Helper()
	// Picked once nexus dev holds its own ports (see TestRevitRunThroughTheMesh).
	hostAddr := freeAddr(t)
	tokenFile := filepath.Join(t.TempDir(), "host-revit.token")
	host := proctest.Start(t, bin, "host revit --double --connect", []string{"NEXUS_HOST_TOKEN=revit-pair", "NEXUS_HOST_LINK_TOKEN=",
		"NEXUS_HOST_LINK_TOKEN_FILE=" + tokenFile}, "host", "revit", "--double", "--addr", hostAddr, "--connect", base)
	var code string
	waitFor(t, "the revit runtime to ask for a pairing", linkPatience, func() bool {
		if !host.Running() {
			t.Fatalf("the revit runtime ended:\n%s", host.Output())
		}
		if m := pairCode.FindStringSubmatch(host.Output()); m != nil {
			code = m[1]
		}
		return code != ""
	})
	approve := exec.Command(bin, "hosts", "approve", code)
	approve.Env = append(os.Environ(), append(env, "NEXUS_GATEWAY_URL="+base)...)
	if out, err := approve.CombinedOutput(); err != nil || !strings.Contains(string(out), "linked revit host") {
		t.Fatalf("nexus hosts approve %s: %v\n%s", code, err, out)
	}
	var hosts linkedHosts
	waitFor(t, "the revit runtime to link", linkPatience, func() bool {
		apiJSON(t, http.MethodGet, base+"/v1/hosts", "", nil, http.StatusOK, &hosts)
		return len(hosts.LinkedHosts) == 1 && hosts.LinkedHosts[0].HostApp == "revit" && hosts.LinkedHosts[0].Online
	})
	if b, err := os.ReadFile(tokenFile); err != nil || !strings.HasPrefix(string(b), "nxh_") {
		t.Errorf("the paired host token was not kept in %s: %q, %v", tokenFile, b, err)
	}
	return hostAddr, hosts
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

// revitWallCount reads, over the runtime's loopback contract, how many walls
// the document on the double holds.
func revitWallCount(t *testing.T, hostURL, token string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hostURL+"/v1/execute", strings.NewReader(
		`{"mode":"MODE_READ_ONLY","code":"from Autodesk.Revit.DB import *\nprint(FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Walls).WhereElementIsNotElementType().GetElementCount())\n"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		Stdout string `json:"stdout"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(res.Stdout)
}
