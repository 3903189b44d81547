package gateway

import (
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestBrowserFraming is the clickjacking attack in Chromium: a page served
// from another origin frames the web UI where a person's session would be,
// and finds nothing in the frame to click, since the UI refuses to be
// framed; the UI's own use meets no violation of its Content-Security-Policy
// (web/e2e/frame.e2e.mjs).
func TestBrowserFraming(t *testing.T) {
	t.Parallel()
	webDir, artifacts := browserSetup(t, "frame")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	stack := ot.Start(t, ot.NewAnthropic(t, ot.Turn{Blocks: []ot.Block{ot.Text("I say **hello**.")}}).URL,
		map[string]string{"NEXUS_LOG_LEVEL": "error"})
	gwLis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	gwAddr := gwLis.Addr().String()
	gwLis.Close()
	// The real runtime the page checks and would carry to: a fetch to
	// another loopback origin the policy must allow.
	hostURL, _ := startHost(t, "pair-frame", "http://"+gwAddr)
	env := realGatewayEnv(stack, "NEXUS_HTTP_ADDR", gwAddr, "NEXUS_DEV_MODE", "true", "NEXUS_CORS_ORIGINS", "http://"+gwAddr,
		"NEXUS_DEV_HOST_URL", hostURL, "NEXUS_DEV_HOST_TOKEN", "pair-frame", "NEXUS_DEV_PAIRING_SECRET", e2ePairingSecret)
	delete(env, "NEXUS_API_KEYS")
	base := startGatewayAt(t, env, gwAddr)

	// The framing page is another origin: localhost and another port.
	framer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.URL.Query().Get("target")
		if !strings.HasPrefix(target, base+"/") {
			http.Error(w, "unknown target", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>prize</title><p>Click the button to win!</p>
<iframe id="victim" src="%s" width="1200" height="800" onload="window.frameLoaded = true"></iframe>`, html.EscapeString(target))
	}))
	lis, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	framer.Listener = lis
	framer.Start()
	t.Cleanup(framer.Close)
	_, port, _ := net.SplitHostPort(lis.Addr().String())

	runE2E(t, webDir, "e2e/frame.e2e.mjs", base, e2ePairingSecret, artifacts, 3*testTimeout,
		"NEXUS_FRAMER_URL=http://localhost:"+port)
}
