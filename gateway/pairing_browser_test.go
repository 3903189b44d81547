package gateway

import (
	"os"
	"testing"

	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestBrowserPairingAsksFirst opens, in Chromium, the link a host runtime
// prints (#approve=CODE) and types a code into the host panel: each shows
// what would be linked and links it only after Approve is clicked
// (web/e2e/pairing.e2e.mjs). Then the first screen at 1280 and 390 px and
// the narrow screen's drawer, closed by Esc and by a tap outside it
// (web/e2e/drawer.e2e.mjs).
func TestBrowserPairingAsksFirst(t *testing.T) {
	t.Parallel()
	webDir, artifacts := browserSetup(t, "pairing")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	stack := ot.Start(t, ot.NewAnthropic(t).URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	gwLis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	gwAddr := gwLis.Addr().String()
	gwLis.Close()
	base := startGatewayAt(t, devGatewayEnv(stack, gwAddr, "NEXUS_RATE_LIMIT_RPS", "0"), gwAddr)
	runE2E(t, webDir, "e2e/pairing.e2e.mjs", base, e2ePairingSecret, artifacts, 3*testTimeout)
	// The same page's first screen and drawer, on the same gateway.
	runE2E(t, webDir, "e2e/drawer.e2e.mjs", base, e2ePairingSecret, artifacts, 3*testTimeout)
}
