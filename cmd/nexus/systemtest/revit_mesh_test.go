package systemtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	ot "nexus.local/services/orchestrator/orchestratortest"
)

// revitArticleScript builds walls on Level 1 and hosts a door in one, as the
// Revit API reference's own examples write it.
const revitArticleScript = `from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Structure import StructuralType
level = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
pts = [XYZ(0, 0, 0), XYZ(20, 0, 0), XYZ(20, 15, 0), XYZ(0, 15, 0)]
walls = [Wall.Create(doc, Line.CreateBound(pts[i], pts[(i + 1) % 4]), level.Id, False) for i in range(4)]
door_type = FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(BuiltInCategory.OST_Doors).FirstElement()
if not door_type.IsActive:
    door_type.Activate()
doc.Create.NewFamilyInstance(XYZ(10, 0, 0), door_type, walls[0], level, StructuralType.NonStructural)
`

// TestRevitRunThroughTheMesh is a demo-like run for Revit through the whole
// mesh on nexus dev: a scripted model (a loopback server speaking the
// Anthropic wire format) writes Revit scripts, nexus run carries them to the
// Revit add-in's runtime on the double (the loopback courier, for a runtime
// that is not linked; TestRevitRunOnTheLinkedDouble is the same run over the
// host link), and the change report names what was built. A
// script that raises is rolled back and leaves the document as it was; a
// larger one is reported in grouped counts.
func TestRevitRunThroughTheMesh(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	vendor := ot.NewAnthropic(t, revitDemoTurns()...)
	base, env := devWithVendor(t, bin, vendor.URL)
	// Picked once nexus dev holds its own ports: a port free before it
	// started may be one of its services' by now.
	hostAddr, _ := startRevitDouble(t, bin, "revit-pair")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--yes", "--views", t.TempDir(), "--model", ot.Model,
		"--host-url", "http://"+hostAddr, "--host-token", "revit-pair", "Build a small room on Level 1 with a door")
	cmd.Env = append(os.Environ(), append(env, "NEXUS_GATEWAY_URL="+base)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nexus run: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"host Revit 2026",
		"=== CHANGE REPORT ===",
		" Walls | Basic Wall: Generic - 200mm | Level: Level 1",
		" Doors | Single-Flush: 0915 x 2134mm | Level: Level 1",
		"RuntimeError",
		"Walls / Basic Wall: Generic - 200mm: 16",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("nexus run output lacks %q:\n%s", want, text)
		}
	}
	// What the model was told of the failed script: rolled back, exactly.
	var told string
	for _, r := range vendor.Requests() {
		for _, b := range r.ToolResults() {
			if b.ToolUseID == "toolu_r2" {
				told, _ = b.ToolResultText()
			}
		}
	}
	if !strings.Contains(told, "RuntimeError") {
		t.Errorf("the model was not told the script failed: %q", told)
	}
	// The failed script's wall is not in the document: 4 + 16 walls.
	if n := revitWallCount(t, "http://"+hostAddr, "revit-pair"); n != "20" {
		t.Errorf("want 20 walls (the failed script's wall rolled back), got %q", n)
	}
}
