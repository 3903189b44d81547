package replay

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// demoInputs returns the demo's tool inputs in order.
func demoInputs(t *testing.T) []map[string]any {
	t.Helper()
	c, err := LoadCassette("")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Scripts) == 0 {
		t.Fatal("the demo cassette has no script")
	}
	var out []map[string]any
	for _, turn := range c.Scripts[0].Turns {
		for _, b := range turn.Content {
			if b.Type == "tool_use" {
				var in map[string]any
				if err := json.Unmarshal(b.Input, &in); err != nil {
					t.Fatal(err)
				}
				in["tool"] = b.Name
				out = append(out, in)
			}
		}
	}
	return out
}

// applyEdits replaces 1-based inclusive line ranges, as the orchestrator does.
func applyEdits(t *testing.T, code string, edits []any) string {
	t.Helper()
	lines := strings.Split(code, "\n")
	for _, e := range edits {
		m := e.(map[string]any)
		start, end := int(m["start_line"].(float64)), int(m["end_line"].(float64))
		if start < 1 || end < start || end > len(lines) {
			t.Fatalf("edit %v is outside the %d-line script", m, len(lines))
		}
		repl := strings.Split(m["new_text"].(string), "\n")
		lines = append(lines[:start-1], append(repl, lines[end:]...)...)
	}
	return strings.Join(lines, "\n")
}

// runner executes scripts in one FreeCAD document, one transaction each,
// rolling back a script that raises, and reports the outcome as JSON.
const runner = `
import json, os, traceback
import FreeCAD as App
doc = App.newDocument("Room")
# Headless FreeCAD starts with undo off; a transaction rolls back only with it on.
doc.UndoMode = 1
out = []
for path in os.environ["NEXUS_SCRIPTS"].split(os.pathsep):
    doc.openTransaction("demo")
    try:
        exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
        doc.commitTransaction()
        out.append({"ok": True})
    except Exception as e:
        doc.abortTransaction()
        out.append({"ok": False, "error": "%s: %s" % (type(e).__name__, e), "line": traceback.extract_tb(e.__traceback__)[-1].lineno})
doc.recompute()
walls = [o for o in doc.Objects if o.Name.startswith("Wall")]
windows = [o for o in doc.Objects if o.Name.startswith("Window")]
floors = [o for o in doc.Objects if o.Name.startswith("Floor") or o.Label == "Ground level"]
print("NEXUS_RESULT " + json.dumps({"runs": out, "walls": [round(w.Shape.Volume) for w in walls], "windows": len(windows), "floors": len(floors)}))
`

type runResult struct {
	Runs []struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		Line  int    `json:"line"`
	} `json:"runs"`
	Walls   []float64 `json:"walls"`
	Windows int       `json:"windows"`
	Floors  int       `json:"floors"`
}

func runFreeCAD(t *testing.T, scripts ...string) runResult {
	t.Helper()
	bin, err := exec.LookPath("freecadcmd")
	if err != nil {
		t.Fatalf("freecadcmd is not installed (make deps installs FreeCAD): %v", err)
	}
	dir := t.TempDir()
	var paths []string
	for i, s := range scripts {
		p := filepath.Join(dir, "script"+string(rune('a'+i))+".py")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	rp := filepath.Join(dir, "runner.py")
	if err := os.WriteFile(rp, []byte(runner), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, rp)
	cmd.Env = append(os.Environ(), "NEXUS_SCRIPTS="+strings.Join(paths, string(os.PathListSeparator)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("freecadcmd: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if _, after, ok := strings.Cut(line, "NEXUS_RESULT "); ok {
			var r runResult
			if err := json.Unmarshal([]byte(after), &r); err != nil {
				t.Fatalf("runner output: %v: %s", err, after)
			}
			return r
		}
	}
	t.Fatalf("the runner printed no result:\n%s", out)
	return runResult{}
}

// TestDemoScriptsRunInFreeCAD runs the demo's scripts in real FreeCAD: the
// listing works, the first build fails on its misspelled name and leaves
// nothing behind, and the one-line fix builds four walls with two openings.
func TestDemoScriptsRunInFreeCAD(t *testing.T) {
	in := demoInputs(t)
	if len(in) != 3 || in[0]["tool"] != "execute_data_collection" || in[1]["tool"] != "execute_task_automation" || in[2]["edits"] == nil {
		t.Fatalf("demo tool calls = %v", in)
	}
	collect, broken := in[0]["code"].(string), in[1]["code"].(string)
	fixed := applyEdits(t, broken, in[2]["edits"].([]any))

	got := runFreeCAD(t, collect, broken, fixed)
	if len(got.Runs) != 3 {
		t.Fatalf("runs = %+v", got.Runs)
	}
	if !got.Runs[0].OK {
		t.Errorf("the listing failed: %s", got.Runs[0].Error)
	}
	edit := in[2]["edits"].([]any)[0].(map[string]any)
	if got.Runs[1].OK || !strings.HasPrefix(got.Runs[1].Error, "NameError") || got.Runs[1].Line != int(edit["start_line"].(float64)) {
		t.Errorf("the deliberate mistake must raise a NameError on the edited line %v: %+v", edit["start_line"], got.Runs[1])
	}
	if !got.Runs[2].OK {
		t.Fatalf("the fixed script failed: %s", got.Runs[2].Error)
	}
	if len(got.Walls) != 4 || got.Windows != 2 || got.Floors != 1 {
		t.Fatalf("document holds walls %v, %d windows, %d floors; want 4 walls, a door and a window, one level", got.Walls, got.Windows, got.Floors)
	}
	// The long walls are 4000 x 200 x 2700 mm; the two that host openings lose
	// the door (900 x 2100) and the window (1200 x 1200) through their thickness.
	full, door, window := 4000.0*200*2700, 900.0*2100*200, 1200.0*1200*200
	want := map[float64]bool{full - door: true, full - window: true}
	for _, v := range got.Walls {
		delete(want, v)
	}
	if len(want) != 0 {
		t.Errorf("wall volumes %v do not show the door and window openings", got.Walls)
	}
}

func TestParseCassetteErrors(t *testing.T) {
	cases := map[string]string{
		`{"scripts":[{"prompt":"","turns":[]}]}`:                                                               "prompt is empty",
		`{"scripts":[{"prompt":"p","turns":[{"step":"inspect","content":[{"type":"image"}]}]}]}`:               `type "image"`,
		`{"scripts":[{"prompt":"p","turns":[{"step":"inspect","content":[{"type":"tool_use","input":{}}]}]}]}`: "needs a name",
		`{"scripts":[], "unknown": 1}`:                                                                         "unknown field",
		`{"scripts":[{"prompt":"p","turns":[{"content":[]}]}]}`:                                                `step "" is not one of`,
		`{"scripts":[{"prompt":"p","turns":[{"step":"inspect"},{"step":"inspect"}]}]}`:                         "or is there twice",
		`{"scripts":[{"prompt":"p","turns":[{"step":"automate"}]}]}`:                                           "no inspect turn",
	}
	for raw, want := range cases {
		t.Run(want, func(t *testing.T) {
			_, err := ParseCassette([]byte(raw))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error = %v, want one mentioning %q", err, want)
			}
		})
	}
}
