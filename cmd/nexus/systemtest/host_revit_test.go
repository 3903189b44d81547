package systemtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHostRevitDouble starts `nexus host revit --double`, reads the add-in's
// info over the wire, and kills the launcher the way a crash would: the
// runtime must end with it instead of holding its port.
func TestHostRevitDouble(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	addr, p := startRevitDouble(t, bin, "pair-revit")
	get := func() (map[string]any, error) {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/info", nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer pair-revit")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		return out, json.Unmarshal(raw, &out)
	}
	in, err := get()
	if err != nil || in["hostApp"] != "revit" || !strings.HasPrefix(in["hostVersion"].(string), "2026") {
		t.Fatalf("GET /v1/info = %v, %v; want the revit runtime on Revit 2026", in, err)
	}
	p.Kill()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := get(); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the revit runtime still answers a minute after its launcher was killed")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
