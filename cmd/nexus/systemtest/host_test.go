package systemtest

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHostRuntimeEndsWithItsLauncher kills `nexus host freecad` the way a
// crash would, with no chance to clean up, and checks that the FreeCAD
// runtime it started goes away too instead of holding its port.
func TestHostRuntimeEndsWithItsLauncher(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	addr := freeAddr(t)
	p := start(t, bin, []string{"NEXUS_HOST_TOKEN=pair-1"}, "host", "freecad", "--addr", addr)

	info := func() (int, error) {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/info", nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer pair-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(p.Output(), "FreeCAD host runtime at http://"+addr) {
		if time.Now().After(deadline) || !p.Running() {
			t.Fatalf("the runtime did not start:\n%s", p.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, err := info(); err != nil || code != http.StatusOK {
		t.Fatalf("GET /v1/info = %d, %v; want 200", code, err)
	}

	p.Kill()
	deadline = time.Now().Add(time.Minute)
	for {
		if _, err := info(); err != nil {
			return // nothing listens any more
		}
		if time.Now().After(deadline) {
			t.Fatal("the FreeCAD runtime still answers a minute after its launcher was killed")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
