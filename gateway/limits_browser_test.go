package gateway

import (
	"os"
	"testing"

	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestBrowserStreamLimit is the refusal a person meets when they follow as
// many runs as the gateway lets one user (NEXUS_MAX_STREAMS_PER_USER, here
// 1): in Chromium at 1280 and 390 px, a second tab's prompt stays in its
// input, the limit is said in words where the person looks, nothing spins,
// and no session is left for the refused prompt (web/e2e/limits.e2e.mjs).
func TestBrowserStreamLimit(t *testing.T) {
	t.Parallel()
	webDir, artifacts := browserSetup(t, "limits")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	// One run holds the one stream: it inspects, and the inspection waits
	// for review until the test cancels it.
	stack := ot.Start(t, ot.NewAnthropic(t, ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_look", "execute_data_collection", map[string]any{
		"description": "List the objects", "code": "print(len(App.ActiveDocument.Objects))\n"})}}).URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	gwLis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	gwAddr := gwLis.Addr().String()
	gwLis.Close()
	hostURL, _ := startHost(t, "pair-limits", "http://"+gwAddr)
	env := realGatewayEnv(stack, "NEXUS_HTTP_ADDR", gwAddr, "NEXUS_DEV_MODE", "true", "NEXUS_MAX_STREAMS_PER_USER", "1",
		"NEXUS_CORS_ORIGINS", "http://"+gwAddr, "NEXUS_DEV_HOST_URL", hostURL, "NEXUS_DEV_HOST_TOKEN", "pair-limits",
		"NEXUS_DEV_PAIRING_SECRET", e2ePairingSecret)
	delete(env, "NEXUS_API_KEYS")
	base := startGatewayAt(t, env, gwAddr)

	runE2E(t, webDir, "e2e/limits.e2e.mjs", base, e2ePairingSecret, artifacts, 3*testTimeout)
}
