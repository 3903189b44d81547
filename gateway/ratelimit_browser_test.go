package gateway

import (
	"os"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/identity"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestBrowserRateLimit is the refusal a person meets when they send more
// requests than the gateway lets one user (NEXUS_RATE_LIMIT_RPS and
// NEXUS_RATE_LIMIT_BURST): in Chromium at 1280 and 390 px, the prompt sent
// once the bucket is empty stays in its input, the limit is said in words
// where the person looks, nothing spins, and no run and no session are made
// for it (web/e2e/ratelimit.e2e.mjs).
func TestBrowserRateLimit(t *testing.T) {
	webDir, artifacts := browserSetup(t, "ratelimit")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	// No turns: a run that reached the model would be a refusal missed.
	vendor := ot.NewAnthropic(t)
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	gwLis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	gwAddr := gwLis.Addr().String()
	gwLis.Close()
	hostURL, _ := startHost(t, "pair-ratelimit", "http://"+gwAddr)
	// The burst covers both pages' startup; the rate refills one request in
	// 1000 s, so once the e2e test empties the bucket it stays empty for the
	// test's length however slow the machine is.
	env := realGatewayEnv(stack, "NEXUS_HTTP_ADDR", gwAddr, "NEXUS_DEV_MODE", "true",
		"NEXUS_RATE_LIMIT_RPS", "0.001", "NEXUS_RATE_LIMIT_BURST", "30",
		"NEXUS_CORS_ORIGINS", "http://"+gwAddr, "NEXUS_DEV_HOST_URL", hostURL, "NEXUS_DEV_HOST_TOKEN", "pair-ratelimit",
		"NEXUS_DEV_PAIRING_SECRET", e2ePairingSecret)
	delete(env, "NEXUS_API_KEYS")
	base := startGatewayAt(t, env, gwAddr)

	runE2E(t, webDir, "e2e/ratelimit.e2e.mjs", base, e2ePairingSecret, artifacts, 3*testTimeout)

	// The gateway lists nothing while the bucket is empty, so the sessions
	// are read from the orchestrator itself, as the person the pages were.
	list, err := stack.Client.ListSessions(ot.As(t.Context(), identity.LocalUser), &agentv1.ListSessionsRequest{PageSize: 10})
	if err != nil {
		t.Fatalf("list sessions: %v", err)
	}
	if n := len(list.GetSessions()); n != 0 {
		t.Errorf("the refused prompts left %d sessions behind: %v", n, list.GetSessions())
	}
	if n := len(vendor.Requests()); n != 0 {
		t.Errorf("the refused prompts reached the model %d times", n)
	}
}
