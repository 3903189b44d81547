package conformance

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"nexus.local/hosts/freecad"
	"nexus.local/hosts/revit"
)

// host is one runtime under test and the scripts, in its own API, the suite
// runs on it.
type host struct {
	app string
	url string
	// create adds one element; %d makes each call's element its own.
	create string
	// dump prints the whole document as one line, to compare documents.
	dump string
	// count prints how many elements the document has.
	count string
	// view is a view name the runtime exports.
	view string
}

const freecadCreate = `box = doc.addObject("Part::Box", "Conformance%d")
box.Length = 10
`

const freecadDump = `import json
out = {}
for o in doc.Objects:
    props = {}
    for p in o.PropertiesList:
        if p in ("Proxy", "Shape"):
            continue
        try:
            r = repr(getattr(o, p))
        except Exception as e:
            r = "error:" + type(e).__name__
        props[p] = r if " at 0x" not in r else "object"
    out[o.Name] = [o.Label, o.TypeId, props]
print(json.dumps(out, sort_keys=True))
`

const revitCreate = `from Autodesk.Revit.DB import FilteredElementCollector, Level, Line, Wall, XYZ
level = [l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1"][0]
Wall.Create(doc, Line.CreateBound(XYZ(0, 20 * %d, 0), XYZ(10, 20 * %[1]d, 0)), level.Id, False)
`

const revitDump = `import json
from Autodesk.Revit.DB import FilteredElementCollector
out = {}
for c in (FilteredElementCollector(doc).WhereElementIsNotElementType(), FilteredElementCollector(doc).WhereElementIsElementType()):
    for e in c:
        out[str(e.Id.Value)] = [type(e).__name__, e.Name, sorted((p.Definition.Name, str(p.AsValueString())) for p in e.Parameters)]
print(json.dumps(out, sort_keys=True))
`

const revitCount = `from Autodesk.Revit.DB import FilteredElementCollector
print(FilteredElementCollector(doc).WhereElementIsNotElementType().GetElementCount())
`

// startFreeCAD runs FreeCAD's runtime on headless freecadcmd, from the
// files its package writes, as the launcher would.
func startFreeCAD(t *testing.T, token string) *host {
	t.Helper()
	bin, err := exec.LookPath("freecadcmd")
	if err != nil {
		t.Fatal("freecadcmd is required (./scripts/install-deps.sh installs FreeCAD): ", err)
	}
	dir := t.TempDir()
	entry, err := freecad.WriteRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, entry)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "NEXUS_HOST_ADDR=127.0.0.1:0", "NEXUS_HOST_TOKEN="+token,
		"NEXUS_HOST_CHECKPOINT_DIR="+filepath.Join(dir, "checkpoints"), fmt.Sprintf("NEXUS_HOST_PARENT_PID=%d", os.Getpid()))
	url := serve(t, cmd)
	return &host{app: "freecad", url: url, create: freecadCreate, dump: freecadDump,
		count: "print(len(doc.Objects))\n", view: "isometric"}
}

// startRevit runs Revit's runtime (the pyRevit extension's adapter) on the
// Revit API double under python3.
func startRevit(t *testing.T, token string) *host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := revit.Start(ctx, revit.Options{Addr: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &host{app: "revit", url: p.URL, create: revitCreate, dump: revitDump, count: revitCount, view: "3d"}
}

// serve starts cmd and answers the URL it prints once it serves.
func serve(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var tail strings.Builder
	cmd.Stderr = &tail
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "NEXUS_RUNTIME_READY "); ok {
				ready <- strings.TrimSpace(u)
			}
		}
		close(ready)
	}()
	select {
	case u, ok := <-ready:
		if !ok {
			t.Fatalf("the runtime exited before serving: %s", tail.String())
		}
		return u
	case <-time.After(3 * time.Minute):
		t.Fatalf("the runtime did not serve within 3 minutes: %s", tail.String())
	}
	return ""
}
