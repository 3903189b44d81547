package launcher_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/hosts/freecad/launcher/launchertest"
	"nexus.local/platform/hostclient"
)

// helperLines answers the report's lines about construction helpers.
func helperLines(report string) []string {
	var out []string
	for _, l := range strings.Split(report, "\n") {
		if strings.Contains(strings.ToLower(l), "helper") || strings.Contains(l, "Draft") || strings.Contains(l, "Sketch") {
			out = append(out, l)
		}
	}
	return out
}

func revision(t *testing.T, c *hostclient.Client) string {
	t.Helper()
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.GetDocumentRevision() == "" {
		t.Fatalf("info has no document revision: %v", info)
	}
	return info.GetDocumentRevision()
}

// TestPreviewOfTheDemoRoom previews the demo's room, checks that the report
// names the building elements and counts the helpers, that a view came back
// and that the document is byte for byte as before, then commits the same
// bytes and checks the commit did what the preview said.
func TestPreviewOfTheDemoRoom(t *testing.T) {
	st := stampedEpilogue(t, newCapability(t))
	room := launchertest.DemoRoomScript(t)
	freshDocument(t)
	if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: seedScript}); res.GetError() != nil {
		t.Fatalf("seed: %v", res.GetError())
	}
	before := dump(t)
	revBefore := revision(t, shared.Client)
	capture := &hostv1.Capture{View: "isometric", MaxPx: 640, Framing: framingRules(t)}

	started := time.Now()
	preview := execute(t, withEpilogue(st, &hostv1.ExecuteRequest{ToolCallId: "call-preview", Mode: hostv1.Mode_MODE_PREVIEW,
		Code: room, TransactionName: "Room", Capture: capture}))
	previewTook := time.Since(started)
	if preview.GetError() != nil || preview.GetEpilogue().GetError() != nil {
		t.Fatalf("preview failed: %v / epilogue %v", preview.GetError(), preview.GetEpilogue().GetError())
	}
	if !preview.GetPreviewed() || preview.GetCommitted() {
		t.Fatalf("want previewed and not committed, got previewed=%v committed=%v", preview.GetPreviewed(), preview.GetCommitted())
	}
	after := dump(t)
	if after != before {
		t.Fatalf("the preview left the document changed: %s", firstDifference(before, after))
	}
	t.Logf("document dump before and after the preview: %d and %d bytes, identical", len(before), len(after))
	if got := revision(t, shared.Client); got != revBefore || preview.GetDocumentRevision() != revBefore {
		t.Errorf("revision moved across a preview: before %s, preview answered %s, info now %s", revBefore, preview.GetDocumentRevision(), got)
	}

	text := preview.GetEpilogue().GetStdout()
	t.Logf("preview report (%s):\n%s", previewTook.Round(time.Millisecond), text)
	if strings.Contains(text, launchertest.ReportMarker) {
		t.Errorf("the report line was left in stdout:\n%s", text)
	}
	elements, helpers := launchertest.ReportCounts(preview.GetEpilogue().GetReport())
	wantElements := map[string]int{"ADDED Wall": 4, "ADDED Door": 1, "ADDED Window": 1, "ADDED Level": 1}
	wantHelpers := map[string]int32{"ADDED Draft line": 4, "ADDED sketch": 2}
	if fmt.Sprint(elements) != fmt.Sprint(wantElements) || fmt.Sprint(helpers) != fmt.Sprint(wantHelpers) {
		t.Errorf("report data: elements %v helpers %v, want %v %v", elements, helpers, wantElements, wantHelpers)
	}
	for _, want := range []string{"7 building element(s) changed: 7 added, 0 modified, 0 deleted",
		`  Wall  Wall 200 mm  "Wall1" on Ground level`, `  Door  Simple door 900x2100  "Door" on Ground level`,
		`  Window  Open 1-pane 1200x1200  "Window" on Ground level`, `  Level  Building Storey  "Ground level"`} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if got := helperLines(text); len(got) != 1 || got[0] != "Construction helpers: 6 added (4 Draft lines, 2 sketches)" {
		t.Errorf("want the helpers counted on one line, got %q", got)
	}
	for _, name := range preview.GetChanges().GetAdded() {
		if strings.Contains(name, "Line") || strings.Contains(name, "Sketch") {
			if strings.Contains(text, "#"+name+" ") {
				t.Errorf("report names helper #%s", name)
			}
		}
	}
	checkImage(t, preview.GetImages(), preview.GetImages()[0].GetView())

	started = time.Now()
	commit := execute(t, withEpilogue(st, &hostv1.ExecuteRequest{ToolCallId: "call-commit", Mode: hostv1.Mode_MODE_TRANSACTION,
		Code: room, TransactionName: "Room", Capture: capture, ExpectRevision: preview.GetDocumentRevision()}))
	t.Logf("preview took %s, commit %s", previewTook.Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	if commit.GetError() != nil || !commit.GetCommitted() || commit.GetPreviewed() {
		t.Fatalf("want a commit, got error %v committed=%v previewed=%v", commit.GetError(), commit.GetCommitted(), commit.GetPreviewed())
	}
	if !proto.Equal(commit.GetEpilogue().GetReport(), preview.GetEpilogue().GetReport()) {
		t.Errorf("the commit's report differs from the preview's:\ncommit  %v\npreview %v", commit.GetEpilogue().GetReport(), preview.GetEpilogue().GetReport())
	}
	if commit.GetEpilogue().GetStdout() != text {
		t.Errorf("the commit's report text differs from the preview's:\n%s", commit.GetEpilogue().GetStdout())
	}
	if !proto.Equal(commit.GetChanges(), preview.GetChanges()) {
		t.Errorf("the commit changed %v, the preview said %v", commit.GetChanges(), preview.GetChanges())
	}
	if commit.GetDocumentRevision() == revBefore || revision(t, shared.Client) != commit.GetDocumentRevision() {
		t.Errorf("a commit must move the revision: before %s, commit answered %s", revBefore, commit.GetDocumentRevision())
	}
	if committed := dump(t); committed == before {
		t.Errorf("the commit left the document as before")
	}
}

// moveScript changes the document as another person or tool would between
// a preview and its commit.
const moveScript = "w = doc.getObject('Wall')\nw.Placement = App.Placement(App.Vector(0, 500, 0), App.Rotation())\n"

const extraWallScript = `import Arch
level = doc.getObjectsByLabel("Level 1")[0]
w = Arch.makeWall(None, length=2000, width=200, height=3000)
w.Placement = App.Placement(App.Vector(1000, 3000, 0), App.Rotation())
level.addObject(w)
`

// TestCommitExpectsThePreviewedRevision: a commit carrying the revision its
// preview saw runs nothing once the document moved on, and runs once the
// script was previewed again.
func TestCommitExpectsThePreviewedRevision(t *testing.T) {
	st := stampedEpilogue(t, newCapability(t))
	freshDocument(t)
	if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: seedScript}); res.GetError() != nil {
		t.Fatalf("seed: %v", res.GetError())
	}
	previewReq := func() *hostv1.ExecuteRequest {
		return withEpilogue(st, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_PREVIEW, Code: extraWallScript})
	}
	first := execute(t, previewReq())
	if !first.GetPreviewed() || first.GetError() != nil {
		t.Fatalf("preview failed: %v", first.GetError())
	}
	moved := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: moveScript})
	if !moved.GetCommitted() || moved.GetDocumentRevision() == first.GetDocumentRevision() {
		t.Fatalf("the move must commit and move the revision: %v, %s -> %s", moved.GetError(), first.GetDocumentRevision(), moved.GetDocumentRevision())
	}
	before := dump(t)
	stale := execute(t, withEpilogue(st, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: extraWallScript,
		ExpectRevision: first.GetDocumentRevision()}))
	e := stale.GetError()
	if stale.GetCommitted() || e.GetType() != "RevisionChanged" {
		t.Fatalf("want RevisionChanged, got committed=%v %v", stale.GetCommitted(), e)
	}
	for _, want := range []string{"changed since the preview", first.GetDocumentRevision(), moved.GetDocumentRevision()} {
		if !strings.Contains(e.GetMessage(), want) {
			t.Errorf("message %q lacks %q", e.GetMessage(), want)
		}
	}
	if after := dump(t); after != before {
		t.Fatalf("a refused commit changed the document: %s", firstDifference(before, after))
	}
	if stale.GetDocumentRevision() != moved.GetDocumentRevision() {
		t.Errorf("a refused commit answered revision %s, the document is at %s", stale.GetDocumentRevision(), moved.GetDocumentRevision())
	}

	second := execute(t, previewReq())
	if !second.GetPreviewed() || second.GetDocumentRevision() != moved.GetDocumentRevision() {
		t.Fatalf("want a preview at the moved revision %s, got %s (%v)", moved.GetDocumentRevision(), second.GetDocumentRevision(), second.GetError())
	}
	commit := execute(t, withEpilogue(st, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: extraWallScript,
		ExpectRevision: second.GetDocumentRevision()}))
	if commit.GetError() != nil || !commit.GetCommitted() {
		t.Fatalf("want a commit, got %v", commit.GetError())
	}
	if !proto.Equal(commit.GetEpilogue().GetReport(), second.GetEpilogue().GetReport()) {
		t.Errorf("the commit's report differs from the preview's:\ncommit  %v\npreview %v", commit.GetEpilogue().GetReport(), second.GetEpilogue().GetReport())
	}
	elements, _ := launchertest.ReportCounts(commit.GetEpilogue().GetReport())
	if fmt.Sprint(elements) != fmt.Sprint(map[string]int{"ADDED Wall": 1, "MODIFIED Level": 1}) {
		t.Errorf("want one wall added to the modified level, got %v", elements)
	}
}

// TestRevision checks what moves the revision and what must not, through
// the runtime's own execute path.
func TestRevision(t *testing.T) {
	tests := []struct {
		name  string
		req   *hostv1.ExecuteRequest
		moves bool
	}{
		{"a committed script moves it", &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: moveScript}, true},
		{"a label change moves it", &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: "doc.getObject('Wall').Label = 'South'\n"}, true},
		{"a refused switch to another document keeps it", &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION,
			Code: "App.setActiveDocument(App.newDocument('TestRevisionOther').Name)\n"}, false},
		{"a rolled back transaction keeps it", &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: moveScript + "raise RuntimeError('no')\n"}, false},
		{"a rolled back change outside any transaction keeps it", &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION,
			Code: "doc.abortTransaction()\ndoc.getObject('Wall').Label = 'outside'\nraise ValueError('no')\n"}, false},
		{"a read-only run keeps it", &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: launchertest.DumpScript}, false},
		{"an undone read-only change keeps it", &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: moveScript}, false},
		{"a preview keeps it", &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_PREVIEW, Code: moveScript}, false},
		{"a failed preview keeps it", &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_PREVIEW, Code: moveScript + "raise RuntimeError('no')\n"}, false},
		{"a view export keeps it", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			freshDocument(t)
			if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: seedScript}); res.GetError() != nil {
				t.Fatalf("seed: %v", res.GetError())
			}
			before := revision(t, shared.Client)
			answered := ""
			if tt.req == nil {
				res, err := shared.Client.ExportView(context.Background(), &hostv1.ExportViewRequest{View: "plan", MaxPx: 200})
				if err != nil {
					t.Fatal(err)
				}
				answered = res.GetDocumentRevision()
			} else {
				answered = execute(t, tt.req).GetDocumentRevision()
			}
			after := revision(t, shared.Client)
			if answered != after {
				t.Errorf("the answer says revision %s, info says %s", answered, after)
			}
			if moved := after != before; moved != tt.moves {
				t.Errorf("revision %s -> %s: moved=%v, want %v", before, after, moved, tt.moves)
			}
		})
	}
}

// TestRevisionFollowsTheGUI runs the runtime under the FreeCAD GUI and
// changes the document on the GUI thread outside the runtime's execute
// path, as a person or another macro does: the revision must move.
func TestRevisionFollowsTheGUI(t *testing.T) {
	ctx := context.Background()
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0", GUI: true, StartTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rt.Stop() }()
	run := func(t *testing.T, mode hostv1.Mode, code string) *hostv1.HostResult {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		res, err := rt.Client.Execute(cctx, &hostv1.ExecuteRequest{Mode: mode, Code: code})
		if err != nil {
			t.Fatal(err)
		}
		if res.GetError() != nil {
			t.Fatalf("%s: %v", mode, res.GetError())
		}
		return res
	}
	// later runs code on the GUI thread from FreeCAD's event loop once the
	// read-only script that scheduled it has returned, then writes done.
	later := func(code, done string) string {
		return fmt.Sprintf("from PySide import QtCore\ndef _later():\n    exec(%q, {'App': App, 'Gui': Gui, 'doc': App.ActiveDocument})\n"+
			"    open(%q, 'w').close()\nQtCore.QTimer.singleShot(0, _later)\n", code, done)
	}
	saved := filepath.Join(t.TempDir(), "GUIRevision.FCStd")
	run(t, hostv1.Mode_MODE_TRANSACTION, seedScript+fmt.Sprintf("doc.saveAs(%q)\n", saved))
	tests := []struct {
		name, code string
	}{
		{"a macro moves a wall", "doc.getObject('Wall').Placement = App.Placement(App.Vector(0, 700, 0), App.Rotation())\ndoc.recompute()\n"},
		{"Edit > Undo", "Gui.runCommand('Std_Undo')\n"},
		{"the same file reopened", fmt.Sprintf("App.closeDocument(doc.Name)\nApp.setActiveDocument(App.openDocument(%q).Name)\n", saved)},
	}
	t.Run("a preview under the GUI leaves the document as it was", func(t *testing.T) {
		before, rev := run(t, hostv1.Mode_MODE_READ_ONLY, launchertest.DumpScript).GetStdout(), revision(t, rt.Client)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		res, err := rt.Client.Execute(cctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_PREVIEW, Code: extraWallScript,
			Capture: &hostv1.Capture{View: "isometric", MaxPx: 480, Framing: framingRules(t)}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.GetPreviewed() || res.GetError() != nil {
			t.Fatalf("want a preview, got %v", res.GetError())
		}
		// A framed GUI render of one plain wall has few colours (its faces
		// and the background), so this asks only for a drawn picture.
		if len(res.GetImages()) != 1 {
			t.Fatalf("want one image, got %d (%s)", len(res.GetImages()), res.GetCaptureNote())
		}
		img, err := png.Decode(bytes.NewReader(res.GetImages()[0].GetData()))
		if err != nil {
			t.Fatalf("decode png: %v", err)
		}
		drawn := 0
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				if r, g, bl, _ := img.At(x, y).RGBA(); r>>8 < 250 || g>>8 < 250 || bl>>8 < 250 {
					drawn++
				}
			}
		}
		if share := float64(drawn) / float64(b.Dx()*b.Dy()); share < 0.05 {
			t.Errorf("the preview's GUI render is blank: %.1f%% drawn", 100*share)
		}
		if after := run(t, hostv1.Mode_MODE_READ_ONLY, launchertest.DumpScript).GetStdout(); after != before {
			t.Fatalf("the preview changed the document: %s", firstDifference(before, after))
		}
		if got := revision(t, rt.Client); got != rev {
			t.Errorf("revision moved across a preview: %s -> %s", rev, got)
		}
	})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := revision(t, rt.Client)
			done := filepath.Join(t.TempDir(), fmt.Sprint("done-", i))
			if res := run(t, hostv1.Mode_MODE_READ_ONLY, later(tt.code, done)); res.GetDocumentRevision() != before {
				t.Fatalf("scheduling the change moved the revision %s -> %s", before, res.GetDocumentRevision())
			}
			// The change lands when the event loop next runs; poll for it.
			deadline := time.Now().Add(2 * time.Minute)
			for {
				if _, err := os.Stat(done); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the GUI-thread change never ran")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if after := revision(t, rt.Client); after == before {
				t.Errorf("the document changed on the GUI thread but its revision stayed %s", before)
			} else {
				t.Logf("revision %s -> %s", before, after)
			}
		})
	}
}

// TestReportLine: the runtime moves a valid report line out of the
// epilogue's text into data and leaves anything malformed where it was,
// without failing the call.
func TestReportLine(t *testing.T) {
	valid := launchertest.ReportMarker + `{"elements":[{"change":"CHANGE_KIND_ADDED","category":"Wall","name":"Wall","label":"South"}],` +
		`"helpers":[{"change":"CHANGE_KIND_ADDED","kind":"sketch","count":2}]}`
	tests := []struct {
		name, printed, stdout string
		report                *hostv1.ChangeReport
	}{
		{name: "a valid last line becomes data", printed: "text\n" + valid + "\n", stdout: "text\n",
			report: &hostv1.ChangeReport{
				Elements: []*hostv1.ReportedElement{{Change: hostv1.ChangeKind_CHANGE_KIND_ADDED, Category: "Wall", Name: "Wall", Label: "South"}},
				Helpers:  []*hostv1.HelperCount{{Change: hostv1.ChangeKind_CHANGE_KIND_ADDED, Kind: "sketch", Count: 2}}}},
		{name: "not JSON", printed: "text\n" + launchertest.ReportMarker + "{nope\n"},
		{name: "an unknown field", printed: "text\n" + launchertest.ReportMarker + `{"elements":[{"colour":"red"}]}` + "\n"},
		{name: "an unknown change kind", printed: "text\n" + launchertest.ReportMarker + `{"helpers":[{"change":"CHANGE_KIND_MOVED","kind":"x","count":1}]}` + "\n"},
		{name: "a count that is not a number", printed: "text\n" + launchertest.ReportMarker + `{"helpers":[{"kind":"x","count":"2"}]}` + "\n"},
		{name: "not on the last line", printed: valid + "\ntext after\n"},
	}
	freshDocument(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: "x = 1\n",
				Epilogue: &hostv1.Epilogue{Code: fmt.Sprintf("print(%q, end='')\n", tt.printed)}})
			if res.GetError() != nil || res.GetEpilogue().GetError() != nil {
				t.Fatalf("want a clean commit, got %v / %v", res.GetError(), res.GetEpilogue().GetError())
			}
			want := tt.stdout
			if tt.report == nil {
				want = tt.printed
			}
			if got := res.GetEpilogue().GetStdout(); got != want {
				t.Errorf("stdout %q, want %q", got, want)
			}
			if !proto.Equal(res.GetEpilogue().GetReport(), tt.report) {
				t.Errorf("report %v, want %v", res.GetEpilogue().GetReport(), tt.report)
			}
		})
	}
}

// TestEpilogueThatCannotBeUndone: an epilogue is read-only, so when its
// rollback is not exact (here it clears the undo history the person's
// Edit > Undo relies on) the answer says so instead of reading as a clean
// commit.
func TestEpilogueThatCannotBeUndone(t *testing.T) {
	freshDocument(t)
	res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: seedScript,
		Epilogue: &hostv1.Epilogue{Code: "doc.clearUndos()\n"}})
	if res.GetError() != nil || !res.GetCommitted() {
		t.Fatalf("the script itself must commit, got %v", res.GetError())
	}
	e := res.GetEpilogue().GetError()
	if e.GetType() != "RollbackFailed" || !strings.Contains(e.GetMessage(), "rollback was not exact") || !strings.Contains(e.GetMessage(), "earlier undo steps") {
		t.Fatalf("want the epilogue's inexact rollback reported, got %v", e)
	}
	if res.GetRollback() != hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT || !strings.Contains(strings.Join(res.GetRollbackDifferences(), "; "), "earlier undo steps") {
		t.Fatalf("want the result's rollback field to say not exact and name what differs, got %v %q", res.GetRollback(), res.GetRollbackDifferences())
	}
}
