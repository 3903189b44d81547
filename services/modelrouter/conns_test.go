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
	// More turns at once than Go's default transport keeps idle over all
	// hosts (100), as a busy replica has.
	const wave = 128
	// The vendor answers a wave's requests only once all of them arrived,
	// so the first wave needs a connection for each turn.
	var mu sync.Mutex
	arrived := 0
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	var accepted atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gate := gates[min(arrived/wave, len(gates)-1)]
		arrived++
		if arrived%wave == 0 && arrived <= wave*len(gates) {
			close(gate)
		}
		mu.Unlock()
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
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
	if first != wave {
		t.Fatalf("the vendor accepted %d connections for %d turns held open together, want one each", first, wave)
	}
	turns()
	// A connection is back in the pool a moment after its turn's last
	// byte, so a turn of the second wave may, rarely, start before it is.
	// Go's default pool keeps 2 of the 128 (126 more), and with only its
	// bound of 100 over all hosts lifted, 100 (28 more).
	if more := accepted.Load() - first; more > wave/8 {
		t.Errorf("the vendor accepted %d more connections for the next %d turns, want at most %d: the first wave's were not kept", more, wave, wave/8)
	}
}
