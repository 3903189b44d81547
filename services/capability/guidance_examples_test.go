package capability

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	tasks "nexus.local/eval"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
)

// example is how one code span of the FreeCAD guidance is run and what its
// text promises. The span runs verbatim: as an expression (its value is
// RESULT) or as statements, inside as when as is set ({} marks the span).
type example struct {
	// given binds what the span names but does not make (x, obj, wall).
	given string
	as    string
	// fill stands in for an elision the text writes as "...".
	fill string
	// then asserts what the guidance says the span does.
	then string
	// forbidden marks a span the text tells the model never to run; the
	// test holds the text to saying so.
	forbidden bool
}

// guidanceExamples covers every code span of freecad_guidance.md that
// calls or assigns something; a span the table does not cover fails the
// test, so new guidance comes with its proof.
func guidanceExamples() map[string]example {
	const wall = "import Arch, Draft\nwall = Arch.makeWall(Draft.makeLine(App.Vector(0, 0, 0), App.Vector(5000, 0, 0)), width=200, height=3000, align='Center')\ndoc.recompute()\n"
	return map[string]example{
		"nexus_changes()": {given: "doc.addObject('Part::Box', 'Box')\n",
			then: "c = RESULT\nassert c['added'] == ['Box'], 'what the script changed so far: %s' % c\nassert {'added', 'modified', 'deleted', 'changed'} <= set(c), c\nassert c['changed'] == c['added'] + c['modified'], c"},
		"import Arch, Draft, Part": {then: "assert Arch.makeWall and Draft.makeLine and Part.makeBox"},
		"doc.undo()":               {forbidden: true},
		"App.Vector(x, y, z)":      {given: "x, y, z = 1, 2, 3", then: "assert (RESULT.x, RESULT.y, RESULT.z) == (1, 2, 3)"},
		"App.Placement(App.Vector(...), App.Rotation(App.Vector(0, 0, 1), deg))": {given: "deg = 90", fill: "1000, 0, 0",
			then: "import math\nassert abs(RESULT.Rotation.Angle - math.pi / 2) < 1e-9 and RESULT.Rotation.Axis.z > 0.99 and RESULT.Base.x == 1000"},
		"p = obj.Placement; p.Base.z = 3000; obj.Placement = p": {given: "obj = doc.addObject('Part::Box', 'Box')",
			then: "assert obj.Placement.Base.z == 3000\np.Base.z = 1\nassert obj.Placement.Base.z == 3000, 'a Placement is a copy'"},
		"doc.Objects":                      {given: "doc.addObject('Part::Box', 'Box')", then: "assert [o.Name for o in RESULT] == ['Box']"},
		`doc.getObject("Wall001")`:         {given: wall + "Arch.makeWall(None, length=1000)\n", then: "assert RESULT.Name == 'Wall001' and RESULT.IfcType == 'Wall'"},
		`doc.getObjectsByLabel("Level 1")`: {given: "import Arch\nArch.makeFloor().Label = 'Level 1'", then: "assert len(RESULT) == 1 and RESULT[0].IfcType == 'Building Storey'"},
		`[o for o in doc.Objects if getattr(o, "IfcType", "") == "Building Storey"]`: {given: wall + "lv = Arch.makeFloor()\n", then: "assert RESULT == [lv]"},
		"Arch.makeFloor()":                    {given: "import Arch", then: "assert RESULT.IfcType == 'Building Storey'"},
		"Arch.makeBuildingPart()":             {given: "import Arch", then: "RESULT.IfcType = 'Building Storey'\nassert [o for o in doc.Objects if getattr(o, 'IfcType', '') == 'Building Storey'] == [RESULT]"},
		`IfcType = "Building Storey"`:         {given: "import Arch\nbp = Arch.makeBuildingPart()", as: "bp.{}", then: "assert bp.IfcType == 'Building Storey'"},
		"level.addObject(obj)":                {given: "import Arch\nlevel = Arch.makeFloor()\nobj = doc.addObject('Part::Box', 'Box')", then: "assert obj in level.Group"},
		`getattr(o, "IfcType", "") == "Wall"`: {given: wall + "o = wall", then: "assert RESULT is True"},
		`line = Draft.makeLine(App.Vector(0, 0, 0), App.Vector(5000, 0, 0)); w = Arch.makeWall(line, width=200, height=3000, align="Center")`: {given: "import Arch, Draft",
			then: "doc.recompute()\nb = w.Shape.BoundBox\nassert abs(w.Length.Value - 5000) < 1e-6 and (b.XMin, b.XMax, b.YMin, b.YMax, b.ZMax) == (0, 5000, -100, 100, 3000), b"},
		"Arch.makeWall(None, length=5000, width=200, height=3000)": {given: "import Arch",
			then: "doc.recompute()\nb = RESULT.Shape.BoundBox\nassert (round(b.XMin), round(b.XMax), round(b.YMin), round(b.YMax)) == (-2500, 2500, -100, 100), 'runs along X centred on its placement: %s' % b"},
		`d = Arch.makeWindowPreset("Simple door", width=900, height=2100, h1=100, h2=100, h3=100, w1=200, w2=100, o1=0, o2=100, placement=App.Placement(App.Vector(x, y - 100, 0), App.Rotation(App.Vector(1, 0, 0), 90)))`: {
			given: wall + "x, y = 1000, 0",
			then:  "d.Hosts = [wall]\ndoc.recompute()\nb = d.Shape.BoundBox\nassert d.IfcType == 'Door' and (round(b.XMin), round(b.XMax), round(b.YMin), round(b.YMax), round(b.ZMin), round(b.ZMax)) == (1000, 1900, -100, 100, 0, 2100), b"},
		"d.Hosts = [wall]": {given: wall + "before = wall.Shape.Volume\nd = Arch.makeWindowPreset('Simple door', width=900, height=2100, h1=100, h2=100, h3=100, w1=200, w2=100, o1=0, o2=100, placement=App.Placement(App.Vector(1000, -100, 0), App.Rotation(App.Vector(1, 0, 0), 90)))",
			then: "doc.recompute()\nassert wall.Shape.Volume < before - 900 * 2100 * 200 * 0.9, 'the door cuts its wall: %s of %s left' % (wall.Shape.Volume, before)"},
		`l1 = Arch.makeFloor(); l1.Label = "Level 1"; l2 = Arch.makeFloor(); l2.Label = "Level 2"; p = l2.Placement; p.Base.z = 3000; l2.Placement = p`: {given: "import Arch",
			then: "assert (l1.Label, l1.Placement.Base.z, l2.Label, l2.Placement.Base.z) == ('Level 1', 0, 'Level 2', 3000)"},
		"l2.addObjects([...])": {given: wall + "l2 = Arch.makeFloor()", fill: "wall", then: "assert wall in l2.Group"},
	}
}

// codeSpan finds the inline code of a guidance text.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// TestGuidanceExamplesRun extracts every code span of the FreeCAD guidance
// the model is taught and runs each on the real FreeCAD runtime, on a
// cleared document, checking that it does what the text says.
func TestGuidanceExamplesRun(t *testing.T) {
	raw, err := os.ReadFile("hosts/freecad_guidance.md")
	if err != nil {
		t.Fatal(err)
	}
	table := guidanceExamples()
	var spans []string
	seen := map[string]bool{}
	for _, m := range codeSpan.FindAllStringSubmatch(string(raw), -1) {
		s := m[1]
		code := strings.Contains(s, "(") || strings.Contains(s, " = ") || strings.HasPrefix(s, "[") ||
			strings.HasPrefix(s, "import ") || strings.HasPrefix(s, "doc.")
		if !code || strings.HasPrefix(s, "{") || seen[s] {
			continue // a name, a value or a result's shape, not something to run
		}
		seen[s] = true
		spans = append(spans, s)
		if _, ok := table[s]; !ok {
			t.Errorf("the guidance teaches %q, which no example of this test runs: add it to guidanceExamples with what its text says it does", s)
		}
	}
	for s := range table {
		if !seen[s] {
			t.Errorf("guidanceExamples covers %q, which the guidance no longer holds", s)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("start the freecad runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	for _, s := range spans {
		ex := table[s]
		if ex.forbidden {
			line := lineOf(string(raw), "`"+s+"`")
			if !strings.Contains(line, "Do not") {
				t.Errorf("%q is marked as never to be run, but its line does not say so: %q", s, line)
			}
			continue
		}
		t.Run(s, func(t *testing.T) {
			run := func(mode hostv1.Mode, code string) {
				t.Helper()
				res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{Mode: mode, Code: code, TransactionName: "guidance example"})
				if err != nil {
					t.Fatal(err)
				}
				if e := res.GetError(); e != nil {
					t.Fatalf("%s: %s (line %d)\n%s", e.GetType(), e.GetMessage(), e.GetLine(), code)
				}
			}
			run(hostv1.Mode_MODE_TRANSACTION, tasks.ClearCode)
			snippet := s
			if ex.fill != "" {
				snippet = strings.ReplaceAll(snippet, "...", ex.fill)
			}
			if ex.as != "" {
				snippet = strings.ReplaceAll(ex.as, "{}", snippet)
			}
			given := ex.given
			quoted, _ := json.Marshal(snippet)
			code := given + "\nSNIPPET = " + string(quoted) + "\n" +
				"try:\n    RESULT = eval(compile(SNIPPET, '<guidance>', 'eval'), globals())\n" +
				"except SyntaxError:\n    RESULT = None\n    exec(compile(SNIPPET, '<guidance>', 'exec'), globals())\n" + ex.then + "\n"
			run(hostv1.Mode_MODE_TRANSACTION, code)
		})
	}
}

// lineOf is the line of text that holds s.
func lineOf(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
