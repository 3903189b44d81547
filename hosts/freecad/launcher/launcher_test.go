package launcher_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/hosts/freecad/launcher/launchertest"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/hostclient"
	"nexus.local/platform/sqlstore/sqlstoretest"
	"nexus.local/services/capability"
)

const testOrigin = "http://127.0.0.1:18080"

// shared is one FreeCAD runtime for the whole package: starting FreeCAD is
// the slow part, so tests share it and each works in a fresh document.
var shared *launcher.Runtime

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := time.Now()
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0", AllowedOrigin: testOrigin, StartTimeout: 5 * time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start freecad runtime:", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "freecad runtime started in %s at %s\n", time.Since(started).Round(time.Millisecond), rt.URL())
	}
	defer func() { _ = rt.Stop() }()
	shared = rt
	return m.Run()
}

func execute(t testing.TB, req *hostv1.ExecuteRequest) *hostv1.HostResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := shared.Client.Execute(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// freshDocument empties the document the runtime serves (a script may not
// switch it to another) and clears its undo history.
func freshDocument(t *testing.T) {
	t.Helper()
	res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION,
		Code: "for name in [o.Name for o in doc.Objects][::-1]:\n    if doc.getObject(name) is not None:\n        doc.removeObject(name)\n" +
			"doc.clearUndos()\n"})
	if res.GetError() != nil {
		t.Fatalf("empty the document: %v", res.GetError())
	}
	if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: "print(len(doc.Objects))\n"}); strings.TrimSpace(res.GetStdout()) != "0" {
		t.Fatalf("the document is not empty: %v", res)
	}
}

func dump(t *testing.T) string {
	t.Helper()
	res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: launchertest.DumpScript})
	if res.GetError() != nil {
		t.Fatalf("dump: %v", res.GetError())
	}
	return res.GetStdout()
}

const storeysScript = `import Arch
def storey(label, z):
    level = Arch.makeFloor()
    level.Label = label
    p = level.Placement
    p.Base.z = z
    level.Placement = p
    south = Arch.makeWall(None, length=5000, width=200, height=2800)
    south.Placement = App.Placement(App.Vector(2500, 0, z), App.Rotation())
    west = Arch.makeWall(None, length=4000, width=200, height=2800)
    west.Placement = App.Placement(App.Vector(0, 2000, z), App.Rotation(App.Vector(0, 0, 1), 90))
    door = Arch.makeWindowPreset("Simple door", width=900, height=2100, h1=100, h2=100, h3=100, w1=200, w2=100, o1=0, o2=100,
        placement=App.Placement(App.Vector(1000, 100, z), App.Rotation(App.Vector(1, 0, 0), 90)))
    door.Hosts = [south]
    window = Arch.makeWindowPreset("Fixed", width=1200, height=1200, h1=100, h2=100, h3=100, w1=200, w2=100, o1=0, o2=100,
        placement=App.Placement(App.Vector(3000, 100, z + 900), App.Rotation(App.Vector(1, 0, 0), 90)))
    window.Hosts = [south]
    level.addObjects([south, west, door, window])
    return level
storey("Level 1", 0)
storey("Level 2", 3000)
print("changed so far:", len(nexus_changes()["changed"]))
`

const fortyWallsScript = `import Arch
level = Arch.makeFloor()
level.Label = "Level 1"
walls = []
for i in range(40):
    w = Arch.makeWall(None, length=1000, width=200, height=2500)
    w.Placement = App.Placement(App.Vector((i % 8) * 1500, (i // 8) * 1500, 0), App.Rotation())
    walls.append(w)
level.addObjects(walls)
`

// newCapability builds the capability service in process.
func newCapability(t *testing.T) *capability.Service {
	t.Helper()
	ctx := context.Background()
	env, err := app.NewEnv(ctx, capability.ServiceName, config.Map(map[string]string{"NEXUS_LOG_LEVEL": "error"}))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := capability.New(ctx, env, capability.Config{Database: sqlstoretest.Config(t, "sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

// stampedEpilogue is the FreeCAD epilogue as the capability service stamps it.
func stampedEpilogue(t *testing.T, svc *capability.Service) *capabilityv1.StampedScript {
	t.Helper()
	e, err := svc.GetEpilogue(context.Background(), &capabilityv1.GetEpilogueRequest{HostApp: "freecad"})
	if err != nil {
		t.Fatal(err)
	}
	return e.GetEpilogue()
}

func withEpilogue(st *capabilityv1.StampedScript, req *hostv1.ExecuteRequest) *hostv1.ExecuteRequest {
	req.Epilogue = &hostv1.Epilogue{Code: st.GetCode(), ContentHash: st.GetContentHash()}
	return req
}

func TestChangeReport(t *testing.T) {
	st := stampedEpilogue(t, newCapability(t))
	t.Run("two storeys of walls, doors and windows are named one by one", func(t *testing.T) {
		freshDocument(t)
		res := execute(t, withEpilogue(st, &hostv1.ExecuteRequest{ToolCallId: "call-1", Mode: hostv1.Mode_MODE_TRANSACTION,
			Code: storeysScript, TransactionName: "Two storeys", Capture: &hostv1.Capture{View: "isometric", MaxPx: 640}}))
		if res.GetError() != nil || !res.GetCommitted() {
			t.Fatalf("want a commit, got %v", res.GetError())
		}
		added := res.GetChanges().GetAdded()
		report := res.GetEpilogue().GetStdout()
		if res.GetEpilogue().GetError() != nil {
			t.Fatalf("epilogue failed: %v", res.GetEpilogue().GetError())
		}
		if len(added) < 10 || len(added) > 15 {
			t.Fatalf("want 10..15 added objects (2 levels, 4 walls, 2 doors, 2 windows, their sketches), got %v", added)
		}
		if !strings.Contains(res.GetStdout(), fmt.Sprintf("changed so far: %d", len(added))) {
			t.Errorf("nexus_changes() inside the script should see the %d additions so far, stdout %q", len(added), res.GetStdout())
		}
		// The preset doors and windows are drawn on sketches: helpers are
		// counted, building elements named.
		sketches := 0
		for _, name := range added {
			named := strings.Contains(report, "+ #"+name+" ")
			if strings.HasPrefix(name, "Sketch") {
				sketches++
				if named {
					t.Errorf("report names the helper #%s:\n%s", name, report)
				}
			} else if !named {
				t.Errorf("report does not name #%s:\n%s", name, report)
			}
		}
		for _, want := range []string{"=== CHANGE REPORT ===", "10 building element(s) changed: 10 added, 0 modified, 0 deleted",
			"  Wall  Wall 200 mm", "  Door  Simple door 900x2100", "  Window  Fixed 1200x1200",
			"  Level  Building Storey", `on Level 1`, `on Level 2`, "Levels touched: Level 1, Level 2",
			fmt.Sprintf("\nConstruction helpers: %d added (%d sketches)\n", sketches, sketches)} {
			if !strings.Contains(report, want) {
				t.Errorf("report lacks %q:\n%s", want, report)
			}
		}
		checkImage(t, res.GetImages(), "isometric")
	})
	t.Run("forty new walls are grouped with counts", func(t *testing.T) {
		freshDocument(t)
		res := execute(t, withEpilogue(st, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: fortyWallsScript}))
		if res.GetError() != nil || !res.GetCommitted() {
			t.Fatalf("want a commit, got %v", res.GetError())
		}
		if got := len(res.GetChanges().GetAdded()); got != 41 {
			t.Fatalf("want 41 added, got %d", got)
		}
		report := res.GetEpilogue().GetStdout()
		for _, want := range []string{"41 building element(s) changed: 41 added, 0 modified, 0 deleted", "Added by category and type:",
			"  Wall / Wall 200 mm: 40 (e.g. #Wall", "  Level / Building Storey: 1 (e.g. #"} {
			if !strings.Contains(report, want) {
				t.Errorf("report lacks %q:\n%s", want, report)
			}
		}
		if strings.Contains(report, "+ #") {
			t.Errorf("past 15 changes the report must group, not name:\n%s", report)
		}
	})
	t.Run("deleted and modified elements are reported", func(t *testing.T) {
		res := execute(t, withEpilogue(st, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION,
			Code: "doc.removeObject('Wall001')\ndoc.getObject('Wall002').Height = 3000\n"}))
		if res.GetError() != nil || !res.GetCommitted() {
			t.Fatalf("want a commit, got %v", res.GetError())
		}
		ch := res.GetChanges()
		if len(ch.GetDeleted()) != 1 || ch.GetDeleted()[0] != "Wall001" || !contains(ch.GetModified(), "Wall002") {
			t.Fatalf("want Wall001 deleted and Wall002 modified, got %v", ch)
		}
		report := res.GetEpilogue().GetStdout()
		for _, want := range []string{"- #Wall001  Wall", "~ #Wall002  Wall  Wall 200 mm", `"Wall002" on Level 1  (Area, Height, `} {
			if !strings.Contains(report, want) {
				t.Errorf("report lacks %q:\n%s", want, report)
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func checkImage(t *testing.T, images []*hostv1.Image, view string) {
	t.Helper()
	if len(images) != 1 {
		t.Fatalf("want one image, got %d", len(images))
	}
	im := images[0]
	if im.GetMimeType() != "image/png" || im.GetView() != view {
		t.Fatalf("want a %s png, got %s %s", view, im.GetMimeType(), im.GetView())
	}
	img, err := png.Decode(bytes.NewReader(im.GetData()))
	if err != nil {
		t.Fatalf("decode png: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != int(im.GetWidth()) || b.Dy() != int(im.GetHeight()) {
		t.Errorf("png is %dx%d, answer says %dx%d", b.Dx(), b.Dy(), im.GetWidth(), im.GetHeight())
	}
	colours := map[[3]uint32]bool{}
	drawn := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r, g, bl}] = true
			if r>>8 < 250 || g>>8 < 250 || bl>>8 < 250 {
				drawn++
			}
		}
	}
	share := float64(drawn) / float64(b.Dx()*b.Dy())
	// A blank render has one colour; shaded faces and outlines give several.
	if len(colours) < 4 || share < 0.02 {
		t.Errorf("image looks blank: %d distinct colours, %.1f%% drawn", len(colours), 100*share)
	}
	t.Logf("%s image %dx%d: %d distinct colours, %.1f%% drawn", view, b.Dx(), b.Dy(), len(colours), 100*share)
}

const seedScript = `import Arch
level = Arch.makeFloor()
level.Label = "Level 1"
a = Arch.makeWall(None, length=4000, width=200, height=3000)
b = Arch.makeWall(None, length=3000, width=200, height=3000)
b.Placement = App.Placement(App.Vector(0, 0, 0), App.Rotation(App.Vector(0, 0, 1), 90))
level.addObjects([a, b])
`

func TestRollback(t *testing.T) {
	tests := []struct {
		name     string
		mode     hostv1.Mode
		code     string
		timeout  int64
		errType  string
		errLine  int32
		lines    []int32
		contains string
	}{
		{name: "a raising script leaves the document as it was", mode: hostv1.Mode_MODE_TRANSACTION, errType: "RuntimeError", errLine: 10,
			contains: "deliberate failure", code: `import Arch
level = doc.getObjectsByLabel("Level 1")[0]
level.Label = "Renamed"
extra = Arch.makeWall(None, length=1000, width=300, height=1000)
level.addObject(extra)
doc.getObject("Wall").Height = 5000
doc.removeObject("Wall001")
doc.recompute()
print("about to fail")
raise RuntimeError("deliberate failure")
`},
		{name: "a syntax error names its line", mode: hostv1.Mode_MODE_TRANSACTION, errType: "SyntaxError", errLine: 3,
			code: "x = 1\ny = 2\nif x = y:\n    pass\n"},
		{name: "an error inside a function names the script's line", mode: hostv1.Mode_MODE_TRANSACTION, errType: "ZeroDivisionError", errLine: 3,
			code: "import Arch\ndef f(n):\n    return 1 / n\nArch.makeWall(None, length=1000, width=200, height=1000)\nf(0)\n"},
		// The timeout leaves the wall's creation room on a loaded machine, so
		// that it lands in the loop (lines 3 and 4), as the test means.
		// Long enough for import Arch on a loaded machine: the timeout must
		// strike in the loop, whose line the error names.
		{name: "a looping script times out and rolls back", mode: hostv1.Mode_MODE_TRANSACTION, timeout: 10000, errType: "ScriptTimeout", lines: []int32{3, 4},
			contains: "timeout of 10000 ms", code: "import Arch\nArch.makeWall(None, length=1000, width=200, height=1000)\nwhile True:\n    pass\n"},
		{name: "a loop that swallows its exceptions still times out", mode: hostv1.Mode_MODE_TRANSACTION, timeout: 1500, errType: "ScriptTimeout",
			code: "import Arch\nArch.makeWall(None, length=1000, width=200, height=1000)\nwhile True:\n    try:\n        int('x')\n    except Exception:\n        pass\n"},
		{name: "sys.exit with a failure code rolls back and the runtime lives", mode: hostv1.Mode_MODE_TRANSACTION, errType: "SystemExit", errLine: 3,
			contains: "sys.exit(3)", code: "import Arch, sys\nArch.makeWall(None, length=1000, width=200, height=1000)\nsys.exit(3)\n"},
		{name: "a read-only script cannot change the document", mode: hostv1.Mode_MODE_READ_ONLY, errType: "ReadOnlyViolation",
			contains: "were undone", code: "import Arch\nArch.makeWall(None, length=1000, width=200, height=1000)\ndoc.getObject('Wall').Label = 'x'\n"},
		{name: "a read-only script that commits its own change is rolled back", mode: hostv1.Mode_MODE_READ_ONLY, errType: "ReadOnlyViolation",
			contains: "were undone", code: "import Arch\nArch.makeWall(None, length=1000, width=200, height=1000)\ndoc.getObject('Wall').Label = 'x'\n" +
				"doc.commitTransaction()\n"},
		{name: "a change the script committed itself before raising is rolled back", mode: hostv1.Mode_MODE_TRANSACTION, errType: "RuntimeError",
			errLine: 8, contains: "after my own commit", code: "import Arch\nArch.makeWall(None, length=1000, width=200, height=1000)\n" +
				"doc.getObject('Wall').Height = 7000\ndoc.recompute()\ndoc.commitTransaction()\ndoc.openTransaction('mine')\n" +
				"doc.removeObject('Wall001')\nraise RuntimeError('after my own commit')\n"},
		{name: "a script that aborts the transaction and changes on is rolled back", mode: hostv1.Mode_MODE_TRANSACTION, errType: "ValueError",
			errLine: 4, code: "doc.abortTransaction()\ndoc.getObject('Wall').Label = 'outside any transaction'\n" +
				"doc.openTransaction('mine')\nraise ValueError('no')\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			freshDocument(t)
			if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: seedScript}); res.GetError() != nil {
				t.Fatalf("seed: %v", res.GetError())
			}
			before := dump(t)
			res := execute(t, &hostv1.ExecuteRequest{Mode: tt.mode, Code: tt.code, TimeoutMs: tt.timeout})
			if res.GetCommitted() {
				t.Fatal("must not commit")
			}
			e := res.GetError()
			if e.GetType() != tt.errType {
				t.Fatalf("want %s, got %v", tt.errType, e)
			}
			if tt.errLine != 0 && e.GetLine() != tt.errLine {
				t.Errorf("want line %d, got %d (%s)", tt.errLine, e.GetLine(), e.GetTraceback())
			}
			if len(tt.lines) > 0 && !slices.Contains(tt.lines, e.GetLine()) {
				t.Errorf("want one of lines %v, got %d (%s)", tt.lines, e.GetLine(), e.GetTraceback())
			}
			if !strings.Contains(e.GetMessage()+e.GetTraceback(), tt.contains) {
				t.Errorf("error lacks %q: %v", tt.contains, e)
			}
			if strings.Contains(e.GetTraceback(), "nexus_runtime.py") {
				t.Errorf("traceback shows runtime frames: %s", e.GetTraceback())
			}
			if after := dump(t); after != before {
				t.Errorf("document changed: %s", firstDifference(before, after))
			}
		})
	}
	t.Run("sys.exit(0) ends the script early and commits", func(t *testing.T) {
		freshDocument(t)
		res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION,
			Code: "import Arch, sys\nArch.makeWall(None, length=1000, width=200, height=1000)\nsys.exit(0)\nprint('not reached')\n"})
		if res.GetError() != nil || !res.GetCommitted() || len(res.GetChanges().GetAdded()) != 1 || strings.Contains(res.GetStdout(), "not reached") {
			t.Fatalf("want a commit of one wall, got %v", res)
		}
	})
}

func TestEpilogueStampMatchesExecutedBytes(t *testing.T) {
	ctx := context.Background()
	svc := newCapability(t)
	st := stampedEpilogue(t, svc)
	freshDocument(t)
	res := execute(t, withEpilogue(st, &hostv1.ExecuteRequest{ToolCallId: "call-7", Mode: hostv1.Mode_MODE_TRANSACTION, Code: seedScript}))
	sum := sha256.Sum256([]byte(st.GetCode()))
	if got := res.GetEpilogue().GetContentHash(); got != st.GetContentHash() || got != hex.EncodeToString(sum[:]) {
		t.Fatalf("runtime ran bytes hashing to %s, stamp says %s", got, st.GetContentHash())
	}
	if !strings.Contains(res.GetEpilogue().GetStdout(), "=== CHANGE REPORT ===") {
		t.Fatalf("epilogue did not report: %v", res.GetEpilogue())
	}
	scriptSum := sha256.Sum256([]byte(seedScript))
	_, err := svc.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{
		{SessionId: "sess-1", RunId: "run-1", ToolCallId: "call-7", Kind: capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION,
			Stamp: &capabilityv1.StampedScript{HostApp: "freecad", Code: seedScript, ContentHash: hex.EncodeToString(scriptSum[:])}},
		{SessionId: "sess-1", RunId: "run-1", ToolCallId: "call-7", Kind: capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE, Stamp: st},
	}})
	if err != nil {
		t.Fatal(err)
	}
	log, err := svc.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: "sess-1", IncludeCode: true})
	if err != nil {
		t.Fatal(err)
	}
	ds := log.GetDispatches()
	if len(ds) != 2 || ds[1].GetKind() != capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE ||
		ds[1].GetStamp().GetContentHash() != res.GetEpilogue().GetContentHash() || ds[1].GetStamp().GetCapabilityVersion() != st.GetCapabilityVersion() {
		t.Fatalf("audit log does not show the executed epilogue: %v", ds)
	}
	// The stored bytes themselves hash to what the runtime reported running.
	if stored := sha256.Sum256([]byte(ds[1].GetStamp().GetCode())); hex.EncodeToString(stored[:]) != res.GetEpilogue().GetContentHash() {
		t.Fatalf("stored epilogue bytes hash to %x, the runtime ran %s", stored, res.GetEpilogue().GetContentHash())
	}
	if ds[0].GetStamp().GetCode() != seedScript {
		t.Fatalf("stored script is not the script the runtime ran")
	}

	t.Run("a tampered epilogue is not run", func(t *testing.T) {
		res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: "x = 1\n",
			Epilogue: &hostv1.Epilogue{Code: st.GetCode() + "\nprint('extra')\n", ContentHash: st.GetContentHash()}})
		if res.GetEpilogue().GetError().GetType() != "ContentHashMismatch" || res.GetEpilogue().GetStdout() != "" {
			t.Fatalf("want ContentHashMismatch, got %v", res.GetEpilogue())
		}
	})
}

func TestAccessControl(t *testing.T) {
	do := func(method, path, token, origin string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, shared.URL()+path, strings.NewReader(`{"mode":"MODE_READ_ONLY","code":"x = 1"}`))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	tok := shared.Token()
	tests := []struct {
		name, method, path, token, origin string
		status                            int
		allowOrigin                       string
	}{
		{"no token", http.MethodGet, "/v1/info", "", "", 401, ""},
		{"wrong token", http.MethodPost, "/v1/execute", tok + "x", "", 401, ""},
		{"token", http.MethodPost, "/v1/execute", tok, "", 200, ""},
		{"other origin with token", http.MethodPost, "/v1/execute", tok, "http://evil.example", 403, ""},
		{"gateway origin", http.MethodGet, "/v1/info", tok, testOrigin, 200, testOrigin},
		{"preflight from gateway", http.MethodOptions, "/v1/execute", "", testOrigin, 204, testOrigin},
		{"preflight from other origin", http.MethodOptions, "/v1/execute", "", "http://evil.example", 403, ""},
		{"unknown path", http.MethodGet, "/v1/nothing", tok, "", 404, ""},
		{"wrong method", http.MethodGet, "/v1/execute", tok, "", 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do(tt.method, tt.path, tt.token, tt.origin)
			if resp.StatusCode != tt.status {
				t.Fatalf("want %d, got %d", tt.status, resp.StatusCode)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tt.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tt.allowOrigin)
			}
		})
	}
	t.Run("client reports refusals", func(t *testing.T) {
		c := *shared.Client
		c.Token = "nope"
		_, err := c.Info(context.Background())
		var se *hostclient.StatusError
		if !errors.As(err, &se) || se.Code != 401 || !strings.Contains(se.Message, "pairing token") {
			t.Fatalf("want a 401 naming the pairing token, got %v", err)
		}
	})
	t.Run("bad requests name the problem", func(t *testing.T) {
		_, err := shared.Client.Execute(context.Background(), &hostv1.ExecuteRequest{Code: "x = 1"})
		if err == nil || !strings.Contains(err.Error(), "mode must be MODE_READ_ONLY, MODE_TRANSACTION or MODE_PREVIEW") {
			t.Fatalf("want a mode error, got %v", err)
		}
		_, err = shared.Client.Execute(context.Background(), &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: "x = 1", TimeoutMs: 99999999})
		if err == nil || !strings.Contains(err.Error(), "timeoutMs must be between 1 and 3600000") {
			t.Fatalf("want a timeout limit error, got %v", err)
		}
	})
}

func TestInfoAndExportView(t *testing.T) {
	freshDocument(t)
	if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: storeysScript}); res.GetError() != nil {
		t.Fatal(res.GetError())
	}
	info, err := shared.Client.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.GetHostApp() != "freecad" || !strings.HasPrefix(installedFreeCAD(t), info.GetHostVersion()) || info.GetDocument() != "Nexus" {
		t.Fatalf("unexpected info %v", info)
	}
	res, err := shared.Client.ExportView(context.Background(), &hostv1.ExportViewRequest{View: "plan", MaxPx: 400})
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, res.GetImages(), "plan")
}

// TestGUIRender starts the FreeCAD GUI (under xvfb-run without a DISPLAY) and
// checks that a committed transaction comes back with a real 3D render.
func TestGUIRender(t *testing.T) {
	ctx := context.Background()
	started := time.Now()
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0", GUI: true, StartTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rt.Stop() }()
	t.Logf("freecad gui runtime started in %s", time.Since(started).Round(time.Millisecond))
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	res, err := rt.Client.Execute(cctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: storeysScript,
		Capture: &hostv1.Capture{View: "isometric", MaxPx: 640}})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetError() != nil || !res.GetCommitted() {
		t.Fatalf("want a commit, got %v", res.GetError())
	}
	checkImage(t, res.GetImages(), "isometric")
}

func TestStartRefusesNonLoopback(t *testing.T) {
	_, err := launcher.Start(context.Background(), launcher.Options{Addr: "0.0.0.0:7723"})
	if err == nil || !strings.Contains(err.Error(), "not loopback") {
		t.Fatalf("want a loopback error, got %v", err)
	}
}

func BenchmarkExecuteTrivial(b *testing.B) {
	req := &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: "print(len(doc.Objects))\n"}
	for b.Loop() {
		execute(b, req)
	}
}

func BenchmarkStartup(b *testing.B) {
	for b.Loop() {
		rt, err := launcher.Start(context.Background(), launcher.Options{Addr: "127.0.0.1:0"})
		if err != nil {
			b.Fatal(err)
		}
		_ = rt.Stop()
	}
}

// installedFreeCAD is the upstream version of the FreeCAD package make test
// installed, e.g. "0.20.2" of "0.20.2+dfsg1-1", so expectations follow the
// machine's FreeCAD instead of a literal.
func installedFreeCAD(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "freecad").Output()
	if err != nil {
		t.Fatalf("read the installed FreeCAD version (make test installs the freecad package): %v", err)
	}
	v := strings.TrimSpace(string(out))
	if i := strings.Index(v, ":"); i >= 0 {
		v = v[i+1:]
	}
	return strings.FieldsFunc(v, func(r rune) bool { return r == '+' || r == '-' || r == '~' })[0]
}
