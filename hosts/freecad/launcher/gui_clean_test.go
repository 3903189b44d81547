package launcher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/hosts/freecad/launcher/launchertest"
)

// lockedBuffer collects a process's output written from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// guiStateScript lets FreeCAD's event loop run what it queued, then prints
// what the Report view holds, whether the GUI marks the document modified
// and which tabs show the mark, and the document itself.
const guiStateScript = `import json
from PySide import QtGui
QtGui.QApplication.processEvents()
window = Gui.getMainWindow()
report = window.findChild(QtGui.QTextEdit, "Report view")
tabs = window.findChild(QtGui.QMdiArea).subWindowList()
print(json.dumps({"report": report.toPlainText() if report is not None else None,
    "modified": Gui.getDocument(doc.Name).Modified,
    "tabsMarked": [w.windowTitle() for w in tabs if w.isWindowModified() or w.widget().isWindowModified()]}))
`

type guiState struct {
	Report   *string  `json:"report"`
	Modified bool     `json:"modified"`
	Marked   []string `json:"tabsMarked"`
}

// TestPreviewLeavesTheGUIAsItFoundIt previews the demo's room under the
// FreeCAD GUI, as the add-on does: once it is rolled back, FreeCAD printed
// nothing to its Report view or its stderr (the rolled-back objects'
// observers acting on objects the rollback removed), and the document is
// marked modified exactly when it was before the preview: not on a new
// document, still after a commit.
func TestPreviewLeavesTheGUIAsItFoundIt(t *testing.T) {
	ctx := context.Background()
	stderr := &lockedBuffer{}
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0", GUI: true, StartTimeout: 5 * time.Minute, Stderr: stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rt.Stop() }()
	run := func(t *testing.T, req *hostv1.ExecuteRequest) *hostv1.HostResult {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		res, err := rt.Client.Execute(cctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	state := func(t *testing.T) guiState {
		t.Helper()
		res := run(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: guiStateScript})
		if res.GetError() != nil {
			t.Fatalf("read the GUI's state: %v", res.GetError())
		}
		var s guiState
		if err := json.Unmarshal([]byte(res.GetStdout()), &s); err != nil || s.Report == nil {
			t.Fatalf("read the GUI's state (%v): %q", err, res.GetStdout())
		}
		return s
	}
	dumpGUI := func(t *testing.T) string {
		t.Helper()
		res := run(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: launchertest.DumpScript})
		if res.GetError() != nil {
			t.Fatalf("dump: %v", res.GetError())
		}
		return res.GetStdout()
	}
	st := stampedEpilogue(t, newCapability(t))
	room := launchertest.DemoRoomScript(t)
	capture := &hostv1.Capture{View: "isometric", MaxPx: 480, Framing: framingRules(t)}

	tests := []struct {
		name, code string
		// commitFirst commits a level first: the document is then marked
		// modified before the preview, and must stay so.
		commitFirst bool
		fails       bool
	}{
		{name: "the demo's room on a new document", code: room},
		{name: "the demo's room failing at its end", code: room + "\nraise RuntimeError('the script fails after building the room')\n", fails: true},
		{name: "the demo's room on a document modified before", code: room, commitFirst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.commitFirst {
				if res := run(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: "import Arch\nArch.makeFloor().Label = 'Upper level'\n"}); !res.GetCommitted() {
					t.Fatalf("commit a level: %v", res.GetError())
				}
			}
			before, dumped, printedBefore := state(t), dumpGUI(t), stderr.String()
			if before.Modified != tt.commitFirst || (len(before.Marked) > 0) != tt.commitFirst {
				t.Fatalf("before the preview the document is marked modified %v (tabs marked %q), want %v", before.Modified, before.Marked, tt.commitFirst)
			}
			preview := run(t, withEpilogue(st, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_PREVIEW, Code: tt.code,
				TransactionName: "Room", Capture: capture}))
			if tt.fails {
				if preview.GetError().GetType() != "RuntimeError" || preview.GetPreviewed() {
					t.Fatalf("want the script's RuntimeError, got previewed=%v %v", preview.GetPreviewed(), preview.GetError())
				}
			} else if !preview.GetPreviewed() || preview.GetError() != nil || preview.GetEpilogue().GetError() != nil {
				t.Fatalf("want a preview, got %v / epilogue %v", preview.GetError(), preview.GetEpilogue().GetError())
			}
			if preview.GetRollback() != hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT {
				t.Fatalf("want an exact rollback, got %v %q", preview.GetRollback(), preview.GetRollbackDifferences())
			}
			if after := dumpGUI(t); after != dumped {
				t.Fatalf("the preview left the document changed: %s", firstDifference(dumped, after))
			}

			after := state(t)
			if printed := strings.TrimPrefix(*after.Report, *before.Report); strings.TrimSpace(printed) != "" {
				t.Errorf("FreeCAD's Report view gained during the preview:\n%s", printed)
			}
			if printed := strings.TrimPrefix(stderr.String(), printedBefore); strings.Contains(printed, "Traceback") || strings.Contains(printed, "Error:") {
				t.Errorf("FreeCAD printed to stderr during the preview:\n%s", printed)
			}
			if after.Modified != before.Modified || len(after.Marked) != len(before.Marked) {
				t.Errorf("the document is marked modified %v (tabs marked %q) after the preview, %v (tabs marked %q) before it; "+
					"the rollback restored it exactly", after.Modified, after.Marked, before.Modified, before.Marked)
			}
		})
	}
}
