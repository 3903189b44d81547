package gateway

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/hostclient"
	"nexus.local/platform/proctest"
)

// roomCensus prints how many Arch walls and windows (a door is one) the
// document holds, and how many levels are labelled as the demo labels its.
const roomCensus = `kinds = {}
for o in doc.Objects:
    t = getattr(getattr(o, "Proxy", None), "Type", "")
    if t in ("Wall", "Window"):
        kinds[t] = kinds.get(t, 0) + 1
print(" ".join("%s=%d" % (k, kinds[k]) for k in sorted(kinds)), "levels=%d" % len(doc.getObjectsByLabel("Ground level")))
`

// TestBrowserReloadDemo is a person reloading the page in the middle of the
// demo: `make run`'s stack (nexus dev, the demo model, the real FreeCAD
// runtime) as its own process, driven by headless Chromium through the web
// UI. The page is reloaded while the demo's automation awaits review; the
// reloaded page shows the prompt, what the run streamed and the pending
// review; approving it finishes the run, and the room is in the FreeCAD
// document exactly once. Screenshots land in test-artifacts/reload.
func TestBrowserReloadDemo(t *testing.T) {
	t.Parallel()
	webDir, artifacts := browserSetup(t, "reload")
	bin, err := proctest.Build("nexus.local/cmd/nexus", filepath.Join(t.TempDir(), "nexus"))
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := proctest.FreeAddr(t)
	base := "http://" + httpAddr
	statePath := filepath.Join(t.TempDir(), "dev.json")
	proctest.Start(t, bin, "nexus dev", []string{
		"NEXUS_DEV_STATE=" + statePath,
		"NEXUS_HTTP_ADDR=" + httpAddr,
		"NEXUS_ORCHESTRATOR_ADDR=" + proctest.FreeAddr(t),
		"NEXUS_MODEL_ROUTER_ADDR=" + proctest.FreeAddr(t),
		"NEXUS_CAPABILITY_ADDR=" + proctest.FreeAddr(t),
		"NEXUS_HOST_ADDR=" + proctest.FreeAddr(t),
		"NEXUS_REDIS_URL=",
	}, "dev")
	pairing := waitDevPairing(t, base, statePath)

	runE2E(t, webDir, "e2e/reload.e2e.mjs", base, pairing.secret, artifacts, 5*time.Minute)

	// The approved script committed once on the real FreeCAD document: four
	// walls on one level, a door and a window (both Arch windows).
	host := hostclient.Client{URL: pairing.HostURL, Token: pairing.HostToken}
	res, err := host.Execute(t.Context(), &hostv1.ExecuteRequest{ToolCallId: "check", Mode: hostv1.Mode_MODE_READ_ONLY, Code: roomCensus})
	if err != nil || res.GetError() != nil {
		t.Fatalf("read the document: %v %v", err, res.GetError())
	}
	if got, want := strings.TrimSpace(res.GetStdout()), "Wall=4 Window=2 levels=1"; got != want {
		t.Errorf("the FreeCAD document holds %q, want %q", got, want)
	}
}

// devPairing is what nexus dev's gateway says about the host runtime it
// started, and the secret that asks it (from the state file nexus dev writes
// for its owner).
type devPairing struct {
	HostURL   string `json:"hostUrl"`
	HostToken string `json:"hostToken"`
	secret    string
}

// waitDevPairing waits until nexus dev serves and its FreeCAD runtime is up.
func waitDevPairing(t *testing.T, base, statePath string) devPairing {
	t.Helper()
	deadline := time.Now().Add(3 * testTimeout)
	for time.Now().Before(deadline) {
		if p, ok := askDevPairing(base, statePath); ok {
			return p
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("nexus dev at %s paired no host runtime within %v", base, 3*testTimeout)
	return devPairing{}
}

func askDevPairing(base, statePath string) (devPairing, bool) {
	var st struct {
		PairingSecret string `json:"pairingSecret"`
	}
	b, err := os.ReadFile(statePath)
	if err != nil || json.Unmarshal(b, &st) != nil || st.PairingSecret == "" {
		return devPairing{}, false
	}
	req, err := http.NewRequest(http.MethodGet, base+"/v1/dev/host-pairing", nil)
	if err != nil {
		return devPairing{}, false
	}
	req.Header.Set("X-Nexus-Pairing-Secret", st.PairingSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return devPairing{}, false
	}
	defer resp.Body.Close()
	p := devPairing{secret: st.PairingSecret}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&p) != nil || p.HostURL == "" {
		return devPairing{}, false
	}
	return p, true
}
