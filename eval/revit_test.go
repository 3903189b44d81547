package eval

import (
	"context"
	"net/http"
	"testing"
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
