package modelrouter_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/modelrouter/routertest"
)

// TestVendorConnectionsAreReused runs two waves of concurrent turns against
// one vendor and counts the connections the vendor accepted: the second
// wave rides the first wave's connections. Each new connection to a real
// vendor is a TCP and TLS handshake; with Go's default transport (two idle
// connections a host) a busy router dialled again for almost every turn.
func TestVendorConnectionsAreReused(t *testing.T) {
	payload, err := os.ReadFile(filepath.Join("testdata", "anthropic_text.sse"))
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(payload)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	r := start(t, map[string]string{"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "sk-ant-test"})
	ctx := testCtx(t)
	const wave = 16
	turns := func() {
		var wg sync.WaitGroup
		errs := make([]error, wave)
		for i := range wave {
			wg.Go(func() {
				req := &modelv1.StreamTurnRequest{
					Model: "anthropic/claude-sonnet-4-5", System: "You automate FreeCAD.", MaxTokens: 8000, SessionId: "session-1",
					Messages: []*modelv1.Message{userText("Add a 4 m wall.")},
				}
				turn, err := routertest.Collect(ctx, r.Client, req)
				if err == nil && turn.End == nil {
					err = fmt.Errorf("the turn ended without its end: %v", turn.Error)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("turn %d: %v", i, err)
			}
		}
	}
	turns()
	first := accepted.Load()
	turns()
	if got := accepted.Load(); got != first {
		t.Errorf("the vendor accepted %d connections for the first %d turns and %d more for the next %d, want none more", first, wave, got-first, wave)
	}
	if first > wave {
		t.Errorf("the vendor accepted %d connections for %d concurrent turns", first, wave)
	}
}
