package eval

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"nexus.local/hosts/revit"
	"nexus.local/platform/hostclient"
)

// TestCheckersOnRevit holds the Revit tasks to what TestCheckersOnFreeCAD
// holds the FreeCAD ones: on the add-in's runtime on the Revit double, each
// reference passes its checker and each wrong solution fails it.
func TestCheckersOnRevit(t *testing.T) {
	tasks, err := Load(Builtin())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	p, err := revit.Start(ctx, revit.Options{Addr: "127.0.0.1:0", Token: "eval-test"})
	if err != nil {
		t.Fatalf("start the revit runtime on the double: %v", err)
	}
	t.Cleanup(p.Stop)
	checkTasks(ctx, t, tasks, HostRevit, &hostclient.Client{URL: p.URL, Token: p.Token, HTTP: &http.Client{Timeout: 2 * time.Minute}})
}

// TestTaskHostIsNamed: a task.json without a host is FreeCAD's, "revit"
// is Revit's, and any other host is refused by name.
func TestTaskHostIsNamed(t *testing.T) {
	task := func(host string) fstest.MapFS {
		return fstest.MapFS{
			"lib.py": {Data: []byte("")}, "lib_revit.py": {Data: []byte("")},
			"tasks/01-a/task.json":       {Data: []byte(`{"prompt": "p", "kind": "create"` + host + `}`)},
			"tasks/01-a/check.py":        {Data: []byte("expect(True, '')")},
			"tasks/01-a/reference/01.py": {Data: []byte("pass")},
			"tasks/01-a/wrong/none.py":   {Data: []byte("pass")},
		}
	}
	for host, want := range map[string]Host{"": HostFreeCAD, `, "host": "freecad"`: HostFreeCAD, `, "host": "revit"`: HostRevit} {
		got, err := Load(task(host))
		if err != nil || got[0].Host != want {
			t.Errorf("task.json%s: host %v, %v; want %v", host, got, err, want)
		}
	}
	if _, err := Load(task(`, "host": "archicad"`)); err == nil || !strings.Contains(err.Error(), `host "archicad" is not freecad or revit`) {
		t.Errorf("an unknown host: %v", err)
	}
}
