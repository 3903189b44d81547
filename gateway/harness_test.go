package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/config"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// testTimeout bounds every wait in these tests; it is generous so a loaded
// machine never fails them, and only a real hang reaches it.
const testTimeout = 60 * time.Second

// testInternalKey is the internal key the test gateways and orchestrators share.
const testInternalKey = ot.InternalKey

// withInternalKey returns env with NEXUS_INTERNAL_KEY set unless it is.
func withInternalKey(env map[string]string) map[string]string {
	out := map[string]string{"NEXUS_INTERNAL_KEY": testInternalKey}
	maps.Copy(out, env)
	return out
}

// startGateway serves the gateway through ServeOn with env on loopback and
// returns its base URL; it stops when the test ends.
func startGateway(t testing.TB, env map[string]string) string {
	t.Helper()
	return startGatewayAt(t, env, "127.0.0.1:0")
}

// startGatewayAt is startGateway on a given address.
func startGatewayAt(t testing.TB, env map[string]string, addr string) string {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	env = withInternalKey(env)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ServeOn(ctx, config.Map(env), lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("gateway: %v", err)
		}
	})
	return "http://" + lis.Addr().String()
}

// request sends method url with an optional JSON body and API key.
func request(t testing.TB, method, url, key, body string, header ...string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// decodeJSON reads resp's body as JSON into a map.
func decodeJSON(t testing.TB, resp *http.Response) map[string]any {
	t.Helper()
	var v map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body %q is not JSON: %v", b, err)
	}
	return v
}

// errorBody is what the tests read of a gateway error: the problem's
// status, its gRPC code name, its detail, its limit and its reason.
type errorBody struct {
	Code    int
	Status  string
	Message string
	Limit   *limitInfo
	Reason  string
}

// apiErrorOf reads a gateway error body: an RFC 9457 problem with a reason.
func apiErrorOf(t *testing.T, resp *http.Response) errorBody {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, problemContentType) {
		t.Errorf("error Content-Type = %q, want %s", ct, problemContentType)
	}
	var p problem
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("error body %q is not JSON: %v", b, err)
	}
	if p.Status != resp.StatusCode {
		t.Errorf("error body status %d, HTTP status %d", p.Status, resp.StatusCode)
	}
	if p.Type != problemType || p.Title != http.StatusText(resp.StatusCode) {
		t.Errorf("problem type %q title %q, want %q and %q", p.Type, p.Title, problemType, http.StatusText(resp.StatusCode))
	}
	if _, ok := agentv1.RefusalReason_value[p.Reason]; !ok || p.Reason == agentv1.RefusalReason_REFUSAL_REASON_UNSPECIFIED.String() {
		t.Errorf("problem reason %q is not a RefusalReason", p.Reason)
	}
	return errorBody{Code: p.Status, Status: p.Code, Message: p.Detail, Limit: p.Limit, Reason: p.Reason}
}

// sseFrame is one parsed server-sent event or comment.
type sseFrame struct {
	event, id, data, comment string
}

// sseReader parses frames from an event stream.
type sseReader struct{ sc *bufio.Scanner }

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	return &sseReader{sc: sc}
}

// next returns the next frame, or io.EOF when the stream ended.
func (s *sseReader) next() (sseFrame, error) {
	var f sseFrame
	seen := false
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "" {
			if seen {
				return f, nil
			}
			continue
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			f.comment = value
		case "event":
			f.event = value
		case "id":
			f.id = value
		case "data":
			f.data += value
		}
	}
	if err := s.sc.Err(); err != nil {
		return f, err
	}
	if seen {
		return f, errors.New("stream ended inside a frame")
	}
	return f, io.EOF
}

// each hands every frame of the stream to fn until the stream ends, failing
// the test on a read error; fn may act on the run while it goes on.
func (s *sseReader) each(t testing.TB, fn func(sseFrame)) {
	t.Helper()
	for {
		f, err := s.next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(f)
	}
}

// lastEvent reads the stream to its end and returns its last event other
// than usage, which may follow the event that ended the run.
func (s *sseReader) lastEvent(t testing.TB) sseFrame {
	t.Helper()
	var last sseFrame
	s.each(t, func(f sseFrame) {
		if f.event != "" && f.event != "usage" {
			last = f
		}
	})
	return last
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func mustHostResult(t *testing.T, js string) *hostv1.HostResult {
	t.Helper()
	var r hostv1.HostResult
	if err := protojson.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// startRunToToolCall creates a session of alice's under policy, starts the
// demo-sized run "add a 20 mm box" on it and reads the run's stream up to its
// first tool call: the state most error and review tests start from. The
// reader goes on with the rest of the run.
func startRunToToolCall(t testing.TB, base, policy string) (session string, rd *sseReader, call *agentv1.ToolCall) {
	t.Helper()
	resp := request(t, http.MethodPost, base+"/v1/sessions", aliceKey, `{"hostApp":"freecad","reviewPolicy":"`+policy+`"}`)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("create session: %d %s", resp.StatusCode, b)
	}
	session, _ = decodeJSON(t, resp)["sessionId"].(string)
	run := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"add a 20 mm box"}`)
	if run.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(run.Body)
		t.Fatalf("run: %d %s", run.StatusCode, b)
	}
	rd = newSSEReader(run.Body)
	for call == nil {
		f, err := rd.next()
		if err != nil {
			t.Fatalf("the run ended before its tool call: %v", err)
		}
		if f.event == "tool_call" {
			var c agentv1.StreamChunk
			if err := protojson.Unmarshal([]byte(f.data), &c); err != nil {
				t.Fatal(err)
			}
			call = c.GetToolCall()
		}
	}
	return session, rd, call
}
