package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"nexus.local/platform/app"
	"nexus.local/platform/config"
)

// The attacks of issue 11, replayed against the gateway serving for real.

// TestRebindingHostRefused: a page on evil.example whose name was rebound to
// a loopback nexus dev gets neither the host runtime's pairing token nor the
// local user's sessions; the loopback names still work, and the pairing still
// needs the secret nexus dev printed.
func TestRebindingHostRefused(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	env := gatewayEnv(orch, "NEXUS_DEV_MODE", "true", "NEXUS_DEV_HOST_URL", "http://127.0.0.1:7300",
		"NEXUS_DEV_HOST_TOKEN", "pair-1", "NEXUS_DEV_PAIRING_SECRET", "s3cret")
	delete(env, "NEXUS_API_KEYS")
	base := startGateway(t, env)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	evil := "evil.example:" + port

	attacks := []struct {
		name, method, path, body string
	}{
		{"pairing token", http.MethodGet, "/v1/dev/host-pairing", ""},
		{"create a session", http.MethodPost, "/v1/sessions", `{"hostApp":"freecad"}`},
		{"list sessions", http.MethodGet, "/v1/sessions", ""},
		{"metrics", http.MethodGet, "/metrics", ""},
		{"web ui", http.MethodGet, "/", ""},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			resp := request(t, a.method, base+a.path, "", a.body, "Host", evil, "Origin", "http://"+evil,
				"X-Nexus-Pairing-Secret", "s3cret")
			e := apiErrorOf(t, resp)
			if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(e.Message, "NEXUS_PUBLIC_HOSTS") {
				t.Errorf("status %d %q, want 421 naming NEXUS_PUBLIC_HOSTS", resp.StatusCode, e.Message)
			}
		})
	}
	if n := orch.calls.Load(); n != 0 {
		t.Errorf("%d calls reached the orchestrator, want none", n)
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port} {
		if resp := request(t, http.MethodGet, base+"/healthz", "", "", "Host", host); resp.StatusCode != http.StatusOK {
			t.Errorf("Host %s: status %d, want 200", host, resp.StatusCode)
		}
	}
	if resp := request(t, http.MethodGet, base+"/v1/dev/host-pairing", "", ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("pairing without the secret from loopback: status %d, want 403", resp.StatusCode)
	}

	t.Run("configured public names are served", func(t *testing.T) {
		env := gatewayEnv(orch, "NEXUS_PUBLIC_HOSTS", "nexus.example.com")
		base := startGateway(t, env)
		if resp := request(t, http.MethodGet, base+"/healthz", "", "", "Host", "nexus.example.com"); resp.StatusCode != http.StatusOK {
			t.Errorf("configured name: status %d, want 200", resp.StatusCode)
		}
		if resp := request(t, http.MethodGet, base+"/healthz", "", "", "Host", "localhost"); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("localhost outside dev mode: status %d, want 421", resp.StatusCode)
		}
	})
}

// TestHostLabelFlood: 3,000 requests with distinct Host headers are refused
// before anything is measured, so the metrics do not grow with them.
func TestHostLabelFlood(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	ctx := t.Context()
	l := config.Map(withInternalKey(gatewayEnv(orch)))
	env, err := app.NewEnv(ctx, ServiceName, l)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(env.Context(ctx), env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	metrics := func() string {
		rec := httptest.NewRecorder()
		env.Tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	// A few good requests first, so the series that exist are measured.
	for range 5 {
		request(t, http.MethodGet, srv.URL+"/healthz", "", "")
	}
	before := len(metrics())
	refused := 0
	for i := range 3000 {
		resp := request(t, http.MethodGet, srv.URL+"/healthz", "", "", "Host", fmt.Sprintf("h%d.flood.example", i))
		if resp.StatusCode == http.StatusMisdirectedRequest {
			refused++
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	text := metrics()
	after := len(text)
	t.Logf("metrics %d bytes before, %d after 3000 distinct Host headers (%d refused)", before, after, refused)
	if refused != 3000 {
		t.Errorf("%d of 3000 refused, want all", refused)
	}
	if after-before > 16<<10 {
		t.Errorf("metrics grew by %d bytes, want under 16 KiB", after-before)
	}
	if strings.Contains(text, "flood.example") {
		t.Errorf("a refused Host reached the metrics")
	}
}

// trickle opens a connection, sends head and then one byte of more every
// interval until the server closes; it returns the status line the server
// answered (empty if none) and how long until the server closed.
func trickle(ctx context.Context, addr, head string, interval time.Duration) (string, time.Duration, error) {
	start := time.Now()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		return "", 0, err
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if _, err := conn.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	deadline, _ := ctx.Deadline()
	_ = conn.SetReadDeadline(deadline)
	rd := bufio.NewReader(conn)
	line, _ := rd.ReadString('\n')
	_, err = io.Copy(io.Discard, rd)
	// A reset is the server closing with our trickled bytes unread.
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		return strings.TrimSpace(line), time.Since(start), fmt.Errorf("not closed by the server: %w", err)
	}
	return strings.TrimSpace(line), time.Since(start), nil
}

// TestTricklingConnectionsClosed: 300 unauthenticated connections trickling
// a body are answered at once and closed; authenticated ones trickling a
// body, and ones trickling their headers, are closed by the body and header
// timeouts. None is held open.
func TestTricklingConnectionsClosed(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	ctx, cancel := context.WithTimeout(t.Context(), 2*testTimeout)
	defer cancel()
	body := "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n"
	groups := []struct {
		name       string
		n          int
		head       string
		wantStatus []string
	}{
		{"unauthenticated body", 300, body + "\r\n{", []string{"401", "429"}},
		{"authenticated body", 50, body + "Authorization: Bearer " + aliceKey + "\r\n\r\n{", []string{"408", "reset"}},
		{"headers", 50, "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", []string{""}},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			// Each group meets a fresh gateway, so one group's failed
			// authentications do not throttle the next.
			base := startGateway(t, gatewayEnv(orch, "NEXUS_HTTP_BODY_TIMEOUT", "2s", "NEXUS_HTTP_READ_HEADER_TIMEOUT", "2s",
				"NEXUS_RATE_LIMIT_RPS", "0"))
			addr := strings.TrimPrefix(base, "http://")
			var wg sync.WaitGroup
			var mu sync.Mutex
			statuses := map[string]int{}
			var longest time.Duration
			for range g.n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					line, d, err := trickle(ctx, addr, g.head, 200*time.Millisecond)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Error(err)
						return
					}
					code := ""
					if f := strings.Fields(line); len(f) > 1 {
						code = f[1]
					} else if g.wantStatus[0] != "" {
						// The reset came before the answer could be read.
						code = "reset"
					}
					statuses[code]++
					longest = max(longest, d)
				}()
			}
			wg.Wait()
			t.Logf("%d connections: answers %v, all closed by the server, the last after %v", g.n, statuses, longest.Round(time.Millisecond))
			for code, n := range statuses {
				ok := false
				for _, w := range g.wantStatus {
					ok = ok || code == w
				}
				if !ok {
					t.Errorf("%d connections answered %q, want one of %q", n, code, g.wantStatus)
				}
			}
		})
	}
	if n := orch.calls.Load(); n != 0 {
		t.Errorf("%d calls reached the orchestrator, want none", n)
	}
}

// TestDuplicateKeysRefused: a body that spells a limited field twice, or in
// another case, is refused as a whole: the limit is checked on what the
// route decodes, and nothing reaches the orchestrator.
func TestDuplicateKeysRefused(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	base := startGateway(t, gatewayEnv(orch))
	session := createSession(t, base, aliceKey)
	calls := orch.calls.Load()
	big := strings.Repeat("x", 900<<10)
	img := `{"mimeType":"image/png","data":"iVBORw0KGgo="}`
	six := "[" + strings.TrimSuffix(strings.Repeat(img+",", 6), ",") + "]"
	tests := []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"prompt then PROMPT", "/runs", `{"prompt":"` + big + `","PROMPT":"x"}`, 400, "PROMPT"},
		{"prompt twice", "/runs", `{"prompt":"x","prompt":"` + big + `"}`, 400, "duplicate"},
		{"session id in both spellings", "/runs", `{"session_id":"a","sessionId":"b","prompt":"` + big + `"}`, 400, "duplicate"},
		{"prompt over the limit", "/runs", `{"prompt":"` + big + `"}`, 413, "NEXUS_MAX_PROMPT_BYTES"},
		{"images then Result", "/tool-results", `{"toolCallId":"call_1","resultToken":"tok_1","result":{"images":` + six + `},"Result":{}}`, 400, "Result"},
		{"result twice", "/tool-results", `{"toolCallId":"call_1","resultToken":"tok_1","result":{"images":` + six + `},"result":{}}`, 400, "duplicate"},
		{"images in both spellings", "/tool-results", `{"tool_call_id":"call_1","toolCallId":"call_1","result":{"images":` + six + `}}`, 400, "duplicate"},
		{"six images", "/tool-results", `{"toolCallId":"call_1","resultToken":"tok_1","result":{"images":` + six + `}}`, 413, "NEXUS_MAX_IMAGES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+tt.path, aliceKey, tt.body)
			e := apiErrorOf(t, resp)
			if resp.StatusCode != tt.status || !strings.Contains(e.Message, tt.want) {
				t.Errorf("status %d %q, want %d naming %q", resp.StatusCode, e.Message, tt.status, tt.want)
			}
		})
	}
	if n := orch.calls.Load() - calls; n != 0 {
		t.Errorf("%d calls reached the orchestrator, want none", n)
	}
}

// TestStreamCap: one user holds at most NEXUS_MAX_STREAMS_PER_USER streams;
// the 300 past it are answered 429 naming the setting, another user is not
// affected, and a closed stream frees its place.
func TestStreamCap(t *testing.T) {
	const maxStreams = 8
	orch := startTestOrchestrator(t, toolRunScript)
	base := startGateway(t, gatewayEnv(orch, "NEXUS_MAX_STREAMS_PER_USER", fmt.Sprint(maxStreams), "NEXUS_RATE_LIMIT_RPS", "0"))
	session := createSession(t, base, aliceKey)
	run := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"add a box"}`)
	if run.StatusCode != http.StatusOK {
		t.Fatalf("run: status %d", run.StatusCode)
	}
	runID := firstRunID(t, run)
	open := []*http.Response{run}
	for range maxStreams - 1 {
		resp := streamRequest(t, base+"/v1/runs/"+runID+"/events", aliceKey)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("rejoin within the cap: status %d", resp.StatusCode)
		}
		open = append(open, resp)
	}
	refused := 0
	for range 300 {
		resp := request(t, http.MethodGet, base+"/v1/runs/"+runID+"/events", aliceKey, "")
		e := apiErrorOf(t, resp)
		if resp.StatusCode == http.StatusTooManyRequests && strings.Contains(e.Message, "NEXUS_MAX_STREAMS_PER_USER") {
			refused++
		}
	}
	t.Logf("%d streams open; %d of 300 more refused", len(open), refused)
	if refused != 300 {
		t.Errorf("%d of 300 streams past the cap refused with 429 naming the setting, want all", refused)
	}
	bobSession := createSession(t, base, bobKey)
	if resp := request(t, http.MethodPost, base+"/v1/sessions/"+bobSession+"/runs", bobKey, `{"prompt":"add a box"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("another user's stream: status %d, want 200", resp.StatusCode)
	}
	open[len(open)-1].Body.Close()
	deadline := time.Now().Add(testTimeout)
	for {
		resp := streamRequest(t, base+"/v1/runs/"+runID+"/events", aliceKey)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream did not free its place: status %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// streamRequest opens an event stream and returns once its headers arrived.
func streamRequest(t *testing.T, url, key string) *http.Response {
	t.Helper()
	return request(t, http.MethodGet, url, key, "")
}

// firstRunID reads a run's stream until a chunk names its run.
func firstRunID(t *testing.T, resp *http.Response) string {
	t.Helper()
	rd := newSSEReader(resp.Body)
	for {
		f, err := rd.next()
		if err != nil {
			t.Fatalf("stream ended before naming its run: %v", err)
		}
		if i := strings.Index(f.data, `"runId":"`); i >= 0 {
			rest := f.data[i+len(`"runId":"`):]
			return rest[:strings.Index(rest, `"`)]
		}
	}
}

// TestFailedAuthThrottled: a client address that sends wrong keys in a
// burst is throttled with 429 after NEXUS_AUTH_FAILURE_BURST failures, and
// the right key from it waits too; another address is not affected.
func TestFailedAuthThrottled(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	// A refill of one failure per thousand minutes: however slowly this
	// machine sends the 2,000, the count is exact.
	base := startGateway(t, gatewayEnv(orch, "NEXUS_AUTH_FAILURE_BURST", "20", "NEXUS_AUTH_FAILURES_PER_MINUTE", "0.001"))
	counts := map[int]int{}
	for i := range 2000 {
		resp := request(t, http.MethodGet, base+"/v1/models", fmt.Sprintf("wrong-%d", i), "")
		counts[resp.StatusCode]++
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	t.Logf("2000 wrong keys: %v", counts)
	if counts[http.StatusUnauthorized] != 20 || counts[http.StatusTooManyRequests] != 1980 {
		t.Errorf("answers %v, want 20 x 401 then 1980 x 429", counts)
	}
	resp := request(t, http.MethodGet, base+"/v1/models", aliceKey, "")
	if e := apiErrorOf(t, resp); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(e.Message, "NEXUS_AUTH_FAILURES_PER_MINUTE") {
		t.Errorf("the right key from the throttled address: status %d %q, want 429 with Retry-After naming the setting", resp.StatusCode, e.Message)
	}
}

// startGatewayAlone serves a gateway whose orchestrator address answers
// nothing, and returns the gateway's base URL and that address.
func startGatewayAlone(t *testing.T) (base, dead string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead = lis.Addr().String()
	lis.Close()
	return startGateway(t, map[string]string{"NEXUS_ORCHESTRATOR_ADDR": dead, "NEXUS_API_KEYS": aliceKey + ":alice", "NEXUS_LOG_LEVEL": "error"}), dead
}

// TestClientErrorsHideInternalAddresses: with the orchestrator unreachable,
// clients are told what failed and what to do, never where it runs.
func TestClientErrorsHideInternalAddresses(t *testing.T) {
	base, dead := startGatewayAlone(t)
	_, port, _ := net.SplitHostPort(dead)
	for _, path := range []string{"/v1/models", "/v1/sessions", "/readyz"} {
		resp := request(t, http.MethodGet, base+path, aliceKey, "")
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d, want 503", path, resp.StatusCode)
		}
		if bytes.Contains(b, []byte(port)) || bytes.Contains(b, []byte("dial tcp")) {
			t.Errorf("%s tells the client an internal address: %s", path, b)
		}
		t.Logf("%s: %s", path, bytes.TrimSpace(b))
	}
}

// TestHeaderSizeLimit: headers past NEXUS_HTTP_MAX_HEADER_BYTES are refused
// with 431 before anything else reads them.
func TestHeaderSizeLimit(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	base := startGateway(t, gatewayEnv(orch, "NEXUS_HTTP_MAX_HEADER_BYTES", "8192"))
	resp := request(t, http.MethodGet, base+"/v1/models", aliceKey, "", "X-Padding", strings.Repeat("p", 64<<10))
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB of headers: status %d, want 431", resp.StatusCode)
	}
	if n := orch.calls.Load(); n != 0 {
		t.Errorf("%d calls reached the orchestrator, want none", n)
	}
}
