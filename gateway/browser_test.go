package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

const chromiumPath = "/usr/bin/chromium"

// disconnectProxy forwards TCP to the gateway and cuts the first event
// stream right after its third complete event, the way a proxy restart
// would. It records the Last-Event-ID of later stream requests, and every
// request's head as a proxy's access log would.
type disconnectProxy struct {
	lis    net.Listener
	target string
	// retryMillis, when set, is sent as a retry field just before the cut.
	retryMillis int

	mu           sync.Mutex
	cut          bool
	cutAt        time.Time
	rejoinAt     time.Time
	lastEventIDs []string
	heads        []string
}

func startDisconnectProxy(t *testing.T, target string) *disconnectProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &disconnectProxy{lis: lis, target: target}
	go p.serve()
	t.Cleanup(func() { lis.Close() })
	return p
}

func (p *disconnectProxy) url() string { return "http://" + p.lis.Addr().String() }

func (p *disconnectProxy) serve() {
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *disconnectProxy) handle(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	// Read the request head to learn whether this is an event stream.
	br := bufio.NewReader(client)
	var head bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		head.WriteString(line)
		if err != nil || line == "\r\n" {
			break
		}
	}
	head = closeAfter(head)
	isEvents := strings.Contains(strings.SplitN(head.String(), "\r\n", 2)[0], "/events")
	cutThis := false
	p.mu.Lock()
	p.heads = append(p.heads, head.String())
	if isEvents {
		if !p.cut {
			p.cut, cutThis = true, true
		} else {
			id := ""
			for _, l := range strings.Split(head.String(), "\r\n") {
				if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Last-Event-ID") {
					id = strings.TrimSpace(v)
				}
			}
			p.lastEventIDs = append(p.lastEventIDs, id)
			if p.rejoinAt.IsZero() {
				p.rejoinAt = time.Now()
			}
		}
	}
	p.mu.Unlock()
	if _, err := server.Write(head.Bytes()); err != nil {
		return
	}
	go func() { _, _ = io.Copy(server, br) }()
	if !cutThis {
		_, _ = io.Copy(client, server)
		return
	}
	// Forward up to the blank line that ends the third event, then end the
	// body there and close. The body is re-chunked on the way: the server
	// may batch several events into one chunk, and ending a chunk short of
	// its declared size is a broken response after which the browser may
	// drop events it already received. A whole last chunk and the zero
	// chunk give it the three events and a clean end of the stream, which it
	// retries with Last-Event-ID.
	// The body is never closed: closing it would read the rest of a stream
	// that does not end; closing the connections ends it.
	resp, err := http.ReadResponse(bufio.NewReader(server), nil)
	if err != nil {
		return
	}
	resp.Header.Del("Content-Length")
	resp.Header.Set("Transfer-Encoding", "chunked")
	var out bytes.Buffer
	out.WriteString("HTTP/1.1 " + resp.Status + "\r\n")
	_ = resp.Header.Write(&out)
	out.WriteString("\r\n")
	if _, err := client.Write(out.Bytes()); err != nil {
		return
	}
	chunk := func(b []byte) error {
		_, err := fmt.Fprintf(client, "%x\r\n%s\r\n", len(b), b)
		return err
	}
	var seen []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			start := len(seen)
			seen = append(seen, buf[:n]...)
			if end := endOfNthEvent(seen, 3); end >= 0 {
				last := seen[start:end]
				if p.retryMillis > 0 {
					last = append(append([]byte(nil), last...), fmt.Sprintf("retry: %d\n\n", p.retryMillis)...)
				}
				if chunk(last) == nil {
					_, _ = client.Write([]byte("0\r\n\r\n"))
				}
				p.mu.Lock()
				p.cutAt = time.Now()
				p.mu.Unlock()
				return
			}
			if chunk(buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// closeAfter asks the gateway to close the connection after answering the
// request of head, so a browser opens a new one for its next request and the
// proxy sees each request's head.
func closeAfter(head bytes.Buffer) bytes.Buffer {
	var out bytes.Buffer
	for _, l := range strings.SplitAfter(head.String(), "\r\n") {
		if k, _, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Connection") {
			continue
		}
		if l == "\r\n" {
			out.WriteString("Connection: close\r\n")
		}
		out.WriteString(l)
	}
	return out
}

// endOfNthEvent returns the index after the blank line ending the nth event
// with an id in b, or -1.
func endOfNthEvent(b []byte, n int) int {
	count := 0
	for i := 0; i < len(b); {
		j := bytes.Index(b[i:], []byte("\n\n"))
		if j < 0 {
			return -1
		}
		if bytes.Contains(b[i:i+j], []byte("\nid: ")) {
			count++
			if count == n {
				return i + j + 2
			}
		}
		i += j + 2
	}
	return -1
}

func (p *disconnectProxy) report() (bool, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut, append([]string(nil), p.lastEventIDs...)
}

// accessLog is the head of every request the proxy forwarded, and how long
// after the cut the first rejoin came.
func (p *disconnectProxy) accessLog() (heads []string, rejoinAfter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cutAt.IsZero() && !p.rejoinAt.IsZero() {
		rejoinAfter = p.rejoinAt.Sub(p.cutAt)
	}
	return append([]string(nil), p.heads...), rejoinAfter
}

// startHost starts the real FreeCAD host runtime (headless, a new empty
// document) paired with token and allowing the gateway's origin. It returns
// the runtime's URL and a function that lists the boxes in its document.
func startHost(t *testing.T, token, origin string) (string, func() string) {
	t.Helper()
	rt, err := launcher.Start(t.Context(), launcher.Options{Addr: "127.0.0.1:0", Token: token, AllowedOrigin: origin})
	if err != nil {
		t.Fatalf("start the freecad runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	return rt.URL(), func() string {
		res, err := rt.Client.Execute(context.Background(), &hostv1.ExecuteRequest{ToolCallId: "check", Mode: hostv1.Mode_MODE_READ_ONLY,
			Code: "for o in doc.Objects:\n    if o.TypeId == 'Part::Box':\n        print(o.Name, float(o.Length))\n"})
		if err != nil || res.GetError() != nil {
			t.Fatalf("read the document: %v %v", err, res.GetError())
		}
		return res.GetStdout()
	}
}

// TestBrowser runs the browser tests in web/e2e against this gateway in real
// headless Chromium: a browser EventSource on the rejoin endpoint gets every
// event once and in order across a forced disconnect, keepalive comments
// arrive while the run waits on its host, and the web UI runs a prompt end to
// end, carrying the tool call to a host runtime and showing what came back.
// e2ePairingSecret is the host pairing secret of the browser tests' gateway,
// which the pages get from the URL as nexus dev's printed URL carries it.
const e2ePairingSecret = "e2e-pairing-secret"

// browserSetup checks what the browser tests need (make deps installs it;
// they fail, never skip, without it) and returns the web folder and the
// folder their screenshots go to.
func browserSetup(t *testing.T, artifactsName string) (webDir, artifacts string) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("browser tests need Chromium at %s (make deps installs it): %v", chromiumPath, err)
	}
	webDir, err := filepath.Abs("web")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(webDir, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("web/node_modules lacks playwright-core: run scripts/build-web.sh (npm ci in gateway/web): %v", err)
	}
	artifacts, err = filepath.Abs(filepath.Join("..", "test-artifacts", artifactsName))
	if err != nil {
		t.Fatal(err)
	}
	return webDir, artifacts
}

// runE2E runs one e2e file of web/ with node --test against the gateway at
// base, paired with secret, with env added to node's environment, and fails
// the test when it fails. The environment is node's alone, never the test
// process's, so browser tests can run side by side.
func runE2E(t *testing.T, webDir, file, base, secret, artifacts string, timeout time.Duration, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", file)
	cmd.Dir = webDir
	cmd.Env = append(os.Environ(),
		"NEXUS_GATEWAY_URL="+base,
		"NEXUS_PAIRING_SECRET="+secret,
		"NEXUS_ARTIFACTS="+artifacts,
		"CHROMIUM_PATH="+chromiumPath,
	)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s:\n%s", file, out)
	if err != nil {
		t.Fatalf("browser tests failed: %v", err)
	}
}

func TestBrowser(t *testing.T) {
	t.Parallel()
	webDir, artifacts := browserSetup(t, "gateway")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}

	// Three runs, in the order the browser tests start them: each writes a script, waits
	// for the host, then answers.
	turns := []ot.Turn{}
	for range 3 {
		turns = append(turns,
			ot.Turn{Blocks: []ot.Block{ot.Thinking("One Part::Box will do."), ot.Text("Adding the box."),
				ot.ToolUse("toolu_box", "execute_task_automation", map[string]any{
					"description": "Add a 20 mm box",
					"code":        "import FreeCAD\ndoc = FreeCAD.ActiveDocument\nbox = doc.addObject(\"Part::Box\", \"Box\")\nbox.Length = 20\n",
				})}, InputTokens: 1200, OutputTokens: 300},
			ot.Turn{Blocks: []ot.Block{ot.Text("I added **one box**, 20 mm long.")}})
	}
	// A fourth run writes a script the person cancels while reviewing it.
	turns = append(turns, ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_box", "execute_task_automation", map[string]any{
		"description": "Add a third box", "code": "import FreeCAD\n"})}})
	stack := ot.Start(t, ot.NewAnthropic(t, turns...).URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	gwLis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	gwAddr := gwLis.Addr().String()
	gwLis.Close()
	proxy := startDisconnectProxy(t, gwAddr)
	hostURL, hostBoxes := startHost(t, "pair-e2e", "http://"+gwAddr)
	env := realGatewayEnv(stack, "NEXUS_HTTP_ADDR", gwAddr, "NEXUS_DEV_MODE", "true",
		"NEXUS_SSE_KEEPALIVE", "100ms", "NEXUS_CORS_ORIGINS", "http://"+gwAddr,
		"NEXUS_DEV_HOST_URL", hostURL, "NEXUS_DEV_HOST_TOKEN", "pair-e2e", "NEXUS_DEV_PAIRING_SECRET", e2ePairingSecret)
	delete(env, "NEXUS_API_KEYS")
	base := startGatewayAt(t, env, gwAddr)

	// Start a run and keep its stream open (the orchestrator stops a run
	// whose starting client goes away) while the browser rejoins it. The
	// EventSource test carries its call blindly, so nothing awaits review.
	resp0 := request(t, http.MethodPost, base+"/v1/sessions", "", `{"hostApp":"freecad","reviewPolicy":"REVIEW_POLICY_NONE"}`)
	session, _ := decodeJSON(t, resp0)["sessionId"].(string)
	if resp0.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("create an unreviewed session: %d", resp0.StatusCode)
	}
	resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", "", `{"prompt":"add a box"}`)
	starter := newSSEReader(resp.Body)
	first, err := starter.next()
	if err != nil {
		t.Fatal(err)
	}
	starterDone := make(chan error, 1)
	starterEvents := []string{first.id + " " + first.event}
	go func() {
		for {
			f, err := starter.next()
			if err != nil {
				starterDone <- err
				return
			}
			if f.id != "" {
				starterEvents = append(starterEvents, f.id+" "+f.event)
			}
		}
	}()
	var c agentv1.StreamChunk
	if err := protojson.Unmarshal([]byte(first.data), &c); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*testTimeout)
	defer cancel()
	// One file at a time: the model server answers the runs' turns in order.
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-concurrency=1", "--test-reporter=spec", "e2e/")
	cmd.Dir = webDir
	cmd.Env = append(os.Environ(),
		"NEXUS_GATEWAY_URL="+base,
		"NEXUS_PAIRING_SECRET="+e2ePairingSecret,
		"NEXUS_PROXY_URL="+proxy.url(),
		"NEXUS_RUN_ID="+c.GetRunId(),
		"NEXUS_SESSION_ID="+session,
		"NEXUS_ARTIFACTS="+artifacts,
		"CHROMIUM_PATH="+chromiumPath,
		"NEXUS_DEFAULT_MODEL="+ot.Model,
	)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test e2e/:\n%s", out)
	if err != nil {
		t.Fatalf("browser tests failed: %v", err)
	}
	if err := <-starterDone; err != io.EOF {
		t.Errorf("the starting stream ended with %v, want the end of the run", err)
	}
	// The browser saw exactly what the starting client saw.
	seen, err := os.ReadFile(filepath.Join(artifacts, "eventsource-events.json"))
	if err != nil {
		t.Fatal(err)
	}
	var browserEvents []string
	if err := json.Unmarshal(seen, &browserEvents); err != nil {
		t.Fatal(err)
	}
	if strings.Join(browserEvents, ",") != strings.Join(starterEvents, ",") {
		t.Errorf("browser events\n %v\nstarting stream\n %v", browserEvents, starterEvents)
	}
	cut, ids := proxy.report()
	if !cut {
		t.Error("the proxy never cut an event stream")
	}
	if len(ids) == 0 || ids[0] != "3" {
		t.Errorf("reconnects carried Last-Event-ID %q, want the first to be 3", ids)
	}
	// The UI carried the one approved script to the host, where it committed;
	// the declined and cancelled ones never ran.
	if got := hostBoxes(); got != "Box 20.0\n" {
		t.Errorf("the host's document holds boxes %q, want one Box of 20 mm", got)
	}
}

// TestWebUnit runs the web UI's unit tests (partial JSON, Markdown,
// highlighting) with vitest.
func TestWebUnit(t *testing.T) {
	t.Parallel()
	webDir, err := filepath.Abs("web")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(webDir, "node_modules", "vitest")); err != nil {
		t.Fatalf("web/node_modules lacks vitest: run scripts/build-web.sh (npm ci in gateway/web): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", "--no-install", "vitest", "run")
	cmd.Dir = webDir
	cmd.Env = append(os.Environ(), "CI=true", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("vitest: %v\n%s", err, out)
	}
	t.Logf("vitest:\n%s", out)
}

// TestEmbeddedUI shows the committed build is whole: every script and style
// index.html names is embedded and served, and the page is served with the
// headers that keep other sites from framing or injecting into it.
func TestEmbeddedUI(t *testing.T) {
	base := startGateway(t, realGatewayEnv(startRealStack(t)))
	resp := request(t, http.MethodGet, base+"/", "", "")
	// The page refuses to be framed and holds itself to its own files.
	for k, want := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self';") {
		t.Errorf("Content-Security-Policy %q does not refuse framing and foreign scripts", csp)
	}
	b, _ := io.ReadAll(resp.Body)
	refs := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(string(b), -1)
	if len(refs) < 2 {
		t.Fatalf("index.html names %d assets, want a script and a style:\n%s", len(refs), b)
	}
	for _, m := range refs {
		r := request(t, http.MethodGet, base+m[1], "", "")
		if r.StatusCode != http.StatusOK || !strings.Contains(r.Header.Get("Cache-Control"), "immutable") {
			t.Errorf("%s: status %d, Cache-Control %q", m[1], r.StatusCode, r.Header.Get("Cache-Control"))
		}
	}
}

// runE2ECued runs one e2e file of web/ as plain node (not node --test, so
// the file's process reads this test's answers on its stdin) against the
// gateway at base: each line the file prints that names a cue runs that
// cue, whose answer goes back on the file's stdin. It fails the test when
// the file fails, and answers the file's output.
func runE2ECued(t *testing.T, webDir, file, base, artifacts string, timeout time.Duration, cues map[string]func() string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "--test-reporter=spec", file)
	node.Dir = webDir
	node.Env = append(os.Environ(), "NEXUS_GATEWAY_URL="+base, "NEXUS_PAIRING_SECRET="+e2ePairingSecret,
		"NEXUS_ARTIFACTS="+artifacts, "CHROMIUM_PATH="+chromiumPath)
	stdin, err := node.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var transcript strings.Builder
	node.Stderr = &transcript
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(&transcript, line)
		cue := cues[strings.TrimSpace(line)]
		if cue == nil {
			continue
		}
		delete(cues, strings.TrimSpace(line))
		if _, err := fmt.Fprintln(stdin, cue()); err != nil {
			t.Fatalf("answer %s: %v", line, err)
		}
		if len(cues) == 0 {
			// That was the last answer: node may end once its tests have.
			_ = stdin.Close()
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := node.Wait(); err != nil {
		t.Fatalf("node %s: %v\n%s", file, err, transcript.String())
	}
	if len(cues) > 0 {
		t.Fatalf("node %s never asked for %v\n%s", file, cues, transcript.String())
	}
	return transcript.String()
}

// devGatewayEnv is the environment of a gateway in dev mode in front of
// stack at addr: the local user without keys, the page's origin allowed and
// the e2e pairing secret, with extra key-value pairs.
func devGatewayEnv(stack *ot.Stack, addr string, extra ...string) map[string]string {
	env := realGatewayEnv(stack, append([]string{"NEXUS_HTTP_ADDR", addr, "NEXUS_DEV_MODE", "true", "NEXUS_CORS_ORIGINS", "http://" + addr,
		"NEXUS_DEV_PAIRING_SECRET", e2ePairingSecret}, extra...)...)
	delete(env, "NEXUS_API_KEYS")
	return env
}
