package gateway

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"nexus.local/platform/proctest"
)

// randomHostToken is a made-up host token: the prefix of a real one and 32
// random hex digits.
func randomHostToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hostTokenPrefix + hex.EncodeToString(b)
}

// heapInUse reads go_memstats_heap_inuse_bytes from the metrics the
// process serves on its internal listener.
func heapInUse(t testing.TB, metricsAddr string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("read metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("go_memstats_heap_inuse_bytes %q: %v", v, err)
			}
			return int64(f)
		}
	}
	t.Fatal("no go_memstats_heap_inuse_bytes in the metrics")
	return 0
}

// TestMadeUpHostTokensRefusedBeforeTheirBodies is the campaign's memory
// attack: 20 clients at once PUT 30 MB documents with made-up host tokens.
// Each is refused 401 while its client has not sent its whole body (the
// gateway answered without reading it), and the heap the gateway's own
// metrics report stays under 100 MB throughout. The gateway runs in this
// test's process, so the figure is an upper bound of its heap.
func TestMadeUpHostTokensRefusedBeforeTheirBodies(t *testing.T) {
	const (
		clients  = 20
		bodySize = 30 << 20
		heapMax  = 100 << 20
	)
	metrics := proctest.FreeAddr(t)
	// The failure throttle is set wide open, so every client gets its
	// credential checked and answered 401 rather than 429.
	base := startGateway(t, realGatewayEnv(startRealStack(t), "NEXUS_METRICS_ADDR", metrics, "NEXUS_AUTH_FAILURE_BURST", "1000"))
	addr := strings.TrimPrefix(base, "http://")
	// The gateway opens its internal listener as it starts.
	for deadline := time.Now().Add(testTimeout); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + metrics + "/metrics"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway's metrics at %s never answered", metrics)
		}
	}
	before := heapInUse(t, metrics)

	stop := make(chan struct{})
	var peak atomic.Int64
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			if h := heapInUse(t, metrics); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	zeros := make([]byte, 256<<10)
	type answer struct {
		status int
		sent   int64
		err    error
	}
	answers := make([]answer, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.DialTimeout("tcp", addr, testTimeout)
			if err != nil {
				answers[i].err = err
				return
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(testTimeout))
			head := fmt.Sprintf("PUT /v1/sessions/s%d/document?fileName=room.FCStd HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", i, addr, randomHostToken(t), bodySize)
			if _, err := io.WriteString(conn, head); err != nil {
				answers[i].err = err
				return
			}
			// The body goes as fast as the gateway takes it, as an
			// attacker's would, while the answer is awaited.
			var sent atomic.Int64
			go func() {
				for sent.Load() < bodySize {
					n, err := conn.Write(zeros[:min(len(zeros), int(bodySize-sent.Load()))])
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			answers[i].sent = sent.Load()
			if err != nil {
				answers[i].err = err
				return
			}
			resp.Body.Close()
			answers[i].status = resp.StatusCode
		}()
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	after := heapInUse(t, metrics)
	t.Logf("heap in use: %.1f MB before, %.1f MB at the peak of %d x %d MB bodies, %.1f MB after",
		float64(before)/(1<<20), float64(peak.Load())/(1<<20), clients, bodySize>>20, float64(after)/(1<<20))
	for i, a := range answers {
		if a.err != nil {
			t.Errorf("client %d: %v", i, a.err)
			continue
		}
		if a.status != http.StatusUnauthorized {
			t.Errorf("client %d: status %d, want 401", i, a.status)
		}
		if a.sent >= bodySize {
			t.Errorf("client %d: answered after its whole body (%d bytes) was sent, want before", i, a.sent)
		}
		t.Logf("client %d: %d answered with %.1f MB of its body sent", i, a.status, float64(a.sent)/(1<<20))
	}
	if p := peak.Load(); p >= heapMax {
		t.Errorf("heap in use peaked at %.1f MB, want under %d MB", float64(p)/(1<<20), heapMax>>20)
	}
}

// TestMadeUpHostTokensThrottledByAddress: 300 host links with random host
// tokens from one address are refused 401 while the address has failures
// left (NEXUS_AUTH_FAILURE_BURST), then 429.
func TestMadeUpHostTokensThrottledByAddress(t *testing.T) {
	// A refill of one failure per thousand minutes keeps the count exact.
	base := startGateway(t, realGatewayEnv(startRealStack(t), "NEXUS_AUTH_FAILURE_BURST", "20", "NEXUS_AUTH_FAILURES_PER_MINUTE", "0.001"))
	counts := map[int]int{}
	for range 300 {
		resp := request(t, http.MethodGet, base+"/v1/host-link?hostApp=freecad", randomHostToken(t), "")
		counts[resp.StatusCode]++
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	t.Logf("300 links with made-up host tokens: %v", counts)
	if counts[http.StatusUnauthorized] != 20 || counts[http.StatusTooManyRequests] != 280 {
		t.Errorf("answers %v, want 20 x 401 then 280 x 429", counts)
	}
}

// TestValidKeyNotThrottledForOthersFailures: an address sends a wrong key
// between every two requests of a person's right key (behind one proxy,
// say). The wrong keys are throttled once the address's failures run out;
// the right key is answered every time.
func TestValidKeyNotThrottledForOthersFailures(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	base := startGateway(t, gatewayEnv(orch, "NEXUS_AUTH_FAILURE_BURST", "3", "NEXUS_AUTH_FAILURES_PER_MINUTE", "0.001"))
	valid, wrong := map[int]int{}, map[int]int{}
	for i := range 20 {
		resp := request(t, http.MethodGet, base+"/v1/models", aliceKey, "")
		valid[resp.StatusCode]++
		resp.Body.Close()
		resp = request(t, http.MethodGet, base+"/v1/models", fmt.Sprintf("wrong-%d", i), "")
		wrong[resp.StatusCode]++
		resp.Body.Close()
	}
	t.Logf("right key: %v; wrong keys: %v", valid, wrong)
	if valid[http.StatusOK] != 20 {
		t.Errorf("the right key was answered %v, want 20 x 200", valid)
	}
	if wrong[http.StatusUnauthorized] != 3 || wrong[http.StatusTooManyRequests] != 17 {
		t.Errorf("the wrong keys were answered %v, want 3 x 401 then 17 x 429", wrong)
	}
}
