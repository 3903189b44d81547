package gateway

import (
	"context"
	"io"
	"net/http"
	"testing"

	"nexus.local/platform/config"
)

// TestShutdownEndsStreams shows ServeOn returning cleanly when its context
// ends while a run's stream is open and waiting for its host: the stream is
// closed rather than holding the shutdown.
func TestShutdownEndsStreams(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	lis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- ServeOn(ctx, config.Map(gatewayEnv(orch)), lis) }()
	base := "http://" + lis.Addr().String()

	session := createSession(t, base, aliceKey)
	resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"add a box"}`)
	rd := newSSEReader(resp.Body)
	for {
		f, err := rd.next()
		if err != nil {
			t.Fatalf("stream ended before the tool call: %v", err)
		}
		if f.event == "tool_call" {
			break
		}
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("ServeOn: %v", err)
	}
	// A stream that ended with the shutdown closes cleanly; one that held
	// the shutdown until its timeout is cut when the server gives up, and the
	// reader sees a broken response rather than its end.
	for {
		if _, err := rd.next(); err != nil {
			if err != io.EOF {
				t.Fatalf("the stream was cut (%v) instead of ended by the shutdown: it held the server until the shutdown timeout", err)
			}
			break
		}
	}
}
