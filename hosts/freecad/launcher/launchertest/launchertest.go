// Package launchertest holds what tests of several modules share about the
// real FreeCAD runtime: the demo's room script, read from the demo model's
// recording so tests run the very bytes people see run, and a whole-document
// dump that tells whether a document is byte for byte as before.
package launchertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/hostclient"
)

// demoCassette is the demo model's recording; its room script is the one the
// demo commits, so the preview is tested on the very bytes people see run.
const demoCassette = "../../../../services/modelrouter/replay/cassettes/demo.json"

// DemoRoomScript answers the demo's room script as it finally commits: the
// first execute_task_automation code with the line edits of the turns after
// it applied (the recorded fix of its deliberate typo).
func DemoRoomScript(t testing.TB) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), filepath.FromSlash(demoCassette))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cassette struct {
		Scripts []struct {
			Turns []struct {
				Content []struct {
					Type  string `json:"type"`
					Name  string `json:"name"`
					Input struct {
						Code  string `json:"code"`
						Edits []struct {
							StartLine int    `json:"start_line"`
							EndLine   int    `json:"end_line"`
							NewText   string `json:"new_text"`
						} `json:"edits"`
					} `json:"input"`
				} `json:"content"`
			} `json:"turns"`
		} `json:"scripts"`
	}
	if err := json.Unmarshal(raw, &cassette); err != nil {
		t.Fatalf("decode %s: %v", demoCassette, err)
	}
	var lines []string
	for _, s := range cassette.Scripts {
		for _, turn := range s.Turns {
			for _, c := range turn.Content {
				if c.Type != "tool_use" || c.Name != "execute_task_automation" {
					continue
				}
				if c.Input.Code != "" && strings.Contains(c.Input.Code, "Arch.makeWall") {
					lines = strings.Split(c.Input.Code, "\n")
					continue
				}
				for _, e := range c.Input.Edits {
					if lines == nil || e.StartLine < 1 || e.EndLine > len(lines) || e.EndLine < e.StartLine-1 {
						t.Fatalf("edit %+v does not fit the room script of %d lines", e, len(lines))
					}
					var repl []string
					if e.NewText != "" {
						repl = strings.Split(strings.TrimSuffix(e.NewText, "\n"), "\n")
					}
					lines = append(lines[:e.StartLine-1], append(repl, lines[e.EndLine:]...)...)
				}
			}
		}
		if lines != nil {
			break
		}
	}
	if lines == nil {
		t.Fatalf("no room script in %s", demoCassette)
	}
	return strings.Join(lines, "\n")
}

// DumpScript prints every object with its label, type and properties, shapes
// reduced to type, volume and bounding box, so two dumps compare whole.
const DumpScript = `import json, Part
def val(v):
    if isinstance(v, Part.Shape):
        if v.isNull():
            return "shape:null"
        b = v.BoundBox
        return "shape:%s:%.3f:%.3f,%.3f,%.3f,%.3f,%.3f,%.3f" % (v.ShapeType, v.Volume, b.XMin, b.YMin, b.ZMin, b.XMax, b.YMax, b.ZMax)
    if isinstance(v, App.DocumentObject):
        return "obj:" + v.Name
    if isinstance(v, (list, tuple)):
        return [val(x) for x in v]
    r = repr(v)
    return r if " at 0x" not in r else type(v).__name__
out = {}
for o in doc.Objects:
    props = {}
    for p in o.PropertiesList:
        if p == "Proxy":
            continue
        try:
            props[p] = val(getattr(o, p))
        except Exception as e:
            props[p] = "error:" + type(e).__name__
    out[o.Name] = {"label": o.Label, "type": o.TypeId, "props": props}
print(json.dumps(out, sort_keys=True))
`

// ReportMarker starts the change report's last line, the report as JSON
// (hosts/change_report.py prints it; the runtime moves it into data).
const ReportMarker = "NEXUS-REPORT-JSON "

// ReportCounts answers a change report's building elements by change and
// category, and its helpers by change and kind, so tests compare what the
// report says rather than its order.
func ReportCounts(r *hostv1.ChangeReport) (map[string]int, map[string]int32) {
	elements := map[string]int{}
	for _, e := range r.GetElements() {
		elements[strings.TrimPrefix(e.GetChange().String(), "CHANGE_KIND_")+" "+e.GetCategory()]++
	}
	helpers := map[string]int32{}
	for _, h := range r.GetHelpers() {
		helpers[strings.TrimPrefix(h.GetChange().String(), "CHANGE_KIND_")+" "+h.GetKind()] += h.GetCount()
	}
	return elements, helpers
}

// Dump answers the whole active document as JSON, through a read-only run.
func Dump(ctx context.Context, c *hostclient.Client) (string, error) {
	res, err := c.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: DumpScript})
	if err != nil {
		return "", fmt.Errorf("dump the document: %w", err)
	}
	if res.GetError() != nil {
		return "", fmt.Errorf("dump the document: %s: %s", res.GetError().GetType(), res.GetError().GetMessage())
	}
	return res.GetStdout(), nil
}
