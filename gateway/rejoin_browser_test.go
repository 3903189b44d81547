package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rejoinRetryMillis is the reconnect delay the proxy's cut stream asks for:
// twice the 3 s a reader uses before a stream sets one. A rejoin later than
// halfway between the two shows the field was honoured; the margin is for
// the browser's timer and the proxy's clock, which do not start at the same
// instant (a rejoin 2 ms short of the retry was seen).
const rejoinRetryMillis = 6000

// rejoinNoSooner is halfway between the default delay and the retry asked.
const rejoinNoSooner = (3000 + rejoinRetryMillis) / 2 * time.Millisecond

// TestBrowserRejoinCredentialInHeader is the web UI of a gateway with API
// keys, opened through a proxy that cuts the run's event stream after its
// third event and sends a retry field before the cut: the page rejoins from
// the last id, with the key in the Authorization header, no sooner than the
// retry delay; no request the proxy logged holds the key in its URL, and a
// key in the URL is refused (web/e2e/rejoin.e2e.mjs).
func TestBrowserRejoinCredentialInHeader(t *testing.T) {
	t.Parallel()
	webDir, artifacts := browserSetup(t, "rejoin")
	stack := startRealStack(t)
	gwLis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	gwAddr := gwLis.Addr().String()
	gwLis.Close()
	proxy := startDisconnectProxy(t, gwAddr)
	proxy.retryMillis = rejoinRetryMillis
	base := startGatewayAt(t, realGatewayEnv(stack, "NEXUS_HTTP_ADDR", gwAddr, "NEXUS_SSE_KEEPALIVE", "100ms"), gwAddr)

	// A run of alice's that waits for its host (none is linked), its
	// starting stream held open; the browser then opens its session.
	session, rd, call := startRunToToolCall(t, base, "REVIEW_POLICY_NONE")
	go func() {
		for {
			if _, err := rd.next(); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		// The test's context is over by now: the cancel gets one of its own.
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/v1/sessions/"+session+":cancel", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})

	// The UI reads its key from the page's settings; the e2e file sets it.
	runE2E(t, webDir, "e2e/rejoin.e2e.mjs", proxy.url(), "unused", artifacts, 3*testTimeout,
		"NEXUS_API_KEY="+aliceKey, "NEXUS_SESSION_ID="+session, "NEXUS_TOOL_CALL_ID="+call.GetToolCallId())

	cut, ids := proxy.report()
	if !cut || len(ids) == 0 {
		t.Fatalf("cut %v, rejoins %q: the page never rejoined a cut stream", cut, ids)
	}
	if ids[0] != "3" {
		t.Errorf("the rejoin carried Last-Event-ID %q, want 3 (the last id before the cut)", ids[0])
	}
	heads, after := proxy.accessLog()
	if after < rejoinNoSooner {
		t.Errorf("the page rejoined %v after the cut, sooner than %v: it did not wait the stream's retry of %d ms (the default is 3 s)", after, rejoinNoSooner, rejoinRetryMillis)
	}
	rejoins := 0
	for _, h := range heads {
		line, rest, _ := strings.Cut(h, "\r\n")
		if strings.Contains(line, aliceKey) || strings.Contains(line, "access_token") {
			t.Errorf("a request line holds the credential: %q", line)
		}
		if strings.Contains(line, "/events") {
			rejoins++
			if !strings.Contains(rest, "Authorization: Bearer "+aliceKey+"\r\n") {
				t.Errorf("an event stream request without the key in its header:\n%s", h)
			}
		}
	}
	if rejoins < 2 {
		t.Errorf("%d event stream requests, want the first and its rejoin", rejoins)
	}

	// The gateway no longer takes a key from the URL.
	run, _ := decodeJSON(t, request(t, http.MethodGet, base+"/v1/sessions/"+session, aliceKey, ""))["activeRunId"].(string)
	resp := request(t, http.MethodGet, base+"/v1/runs/"+run+"/events?access_token="+aliceKey, "", "")
	resp.Body.Close()
	if run == "" || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a key in the URL of run %q: status %d, want 401", run, resp.StatusCode)
	}
}
