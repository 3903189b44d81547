package systemtest

import (
	"strings"
	"testing"
)

// TestMCPHostRunsACallIDOnce retries a run_transaction over `nexus host
// freecad --mcp` on real FreeCAD under the client's own callId: a repeat
// that races the first run and one sent after it both get the first run's
// answer, the box is in the document once, and the same callId with other
// code is refused with CallIdReused and changes nothing.
func TestMCPHostRunsACallIDOnce(t *testing.T) {
	t.Parallel()
	m := startMCPStdio(t, buildNexus(t))
	box := map[string]any{"code": "import time\ndoc.addObject('Part::Box', 'Once')\ntime.sleep(1)\n", "description": "A box", "callId": "box-1"}
	// The first and a racing repeat, before either is answered.
	m.callTool(10, "run_transaction", box)
	m.callTool(11, "run_transaction", box)
	first, racing := m.answer(10), m.answer(11)
	m.callTool(12, "run_transaction", box)
	later := m.answer(12)
	for name, a := range map[string]toolAnswer{"first": first, "racing repeat": racing, "later repeat": later} {
		if a.IsError || !a.StructuredContent.Committed {
			t.Errorf("%s: %+v, want committed", name, a)
		}
		if a.StructuredContent.DurationMs != first.StructuredContent.DurationMs {
			t.Errorf("%s ran %d ms, the first %d ms: a repeat must get the first run's answer", name, a.StructuredContent.DurationMs, first.StructuredContent.DurationMs)
		}
	}
	count := func(id int) string {
		m.callTool(id, "inspect", map[string]any{"code": "print(len([o for o in doc.Objects if o.Name.startswith('Once')]))"})
		a := m.answer(id)
		if a.IsError {
			t.Fatalf("count: %+v", a)
		}
		return strings.TrimSpace(a.StructuredContent.Stdout)
	}
	if n := count(13); n != "1" {
		t.Fatalf("the document holds %s boxes after three deliveries of one call, want 1", n)
	}
	m.callTool(14, "run_transaction", map[string]any{"code": "doc.addObject('Part::Box', 'Once')\n", "description": "Another box", "callId": "box-1"})
	reused := m.answer(14)
	if !reused.IsError || reused.StructuredContent.Error == nil || reused.StructuredContent.Error.Type != "CallIdReused" {
		t.Errorf("the same callId with other code answered %+v, want CallIdReused", reused)
	}
	if n := count(15); n != "1" {
		t.Fatalf("the refused call changed the document: %s boxes", n)
	}
	// Without a callId every call is a new one.
	m.callTool(16, "run_transaction", map[string]any{"code": "doc.addObject('Part::Box', 'Once')\n", "description": "A fresh box"})
	if a := m.answer(16); a.IsError || !a.StructuredContent.Committed {
		t.Fatalf("a call without callId: %+v, want committed", a)
	}
	if n := count(17); n != "2" {
		t.Errorf("after a fresh call the document holds %s boxes, want 2", n)
	}
}
