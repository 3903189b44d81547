package launcher_test

import (
	"context"
	"strings"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// TestNULInCodeIsASyntaxError sends the real FreeCAD runtime a script with a
// NUL in it, in every mode: the answer is a normal result whose error is a
// SyntaxError on the NUL's line, not an HTTP failure, and the document is
// as before.
func TestNULInCodeIsASyntaxError(t *testing.T) {
	freshDocument(t)
	if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: seedScript}); res.GetError() != nil {
		t.Fatalf("seed: %v", res.GetError())
	}
	before := dump(t)
	for _, mode := range []hostv1.Mode{hostv1.Mode_MODE_READ_ONLY, hostv1.Mode_MODE_TRANSACTION, hostv1.Mode_MODE_PREVIEW} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			res, err := shared.Client.Execute(ctx, &hostv1.ExecuteRequest{ToolCallId: "nul-" + mode.String(), Mode: mode,
				Code: "App.ActiveDocument.addObject('Part::Box', 'Nul')\nx = '\x00'\n"})
			if err != nil {
				t.Fatalf("the runtime did not answer a result: %v", err)
			}
			e := res.GetError()
			if e.GetType() != "SyntaxError" || e.GetLine() != 2 || !strings.Contains(e.GetMessage(), "null") || res.GetCommitted() || res.GetPreviewed() {
				t.Errorf("want an uncommitted SyntaxError on line 2 naming the null byte, got committed=%v previewed=%v %v",
					res.GetCommitted(), res.GetPreviewed(), e)
			}
			if after := dump(t); after != before {
				t.Errorf("the document changed (%d bytes, was %d)", len(after), len(before))
			}
		})
	}
}
