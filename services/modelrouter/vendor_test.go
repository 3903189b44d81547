package modelrouter_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/modelrouter/routertest"
)

// reply is one canned vendor answer.
type reply struct {
	status int
	header map[string]string
	file   string // a recorded stream under testdata/
	body   string // used when file is empty
	stall  bool   // keep the stream open after the payload, sending nothing
}

// recorded is one request as the vendor server received it.
type recorded struct {
	path   string
	query  string
	header http.Header
	body   []byte
}

// vendorServer is a loopback vendor that answers requests in order with
// recorded wire-format streams and keeps every request it received.
type vendorServer struct {
	t       *testing.T
	mu      sync.Mutex
	replies []reply
	reqs    []recorded
	url     string
}

func newVendor(t *testing.T, replies ...reply) *vendorServer {
	t.Helper()
	v := &vendorServer{t: t, replies: replies}
	srv := httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(srv.Close)
	v.url = srv.URL
	return v
}

func (v *vendorServer) serve(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	v.mu.Lock()
	v.reqs = append(v.reqs, recorded{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body.Bytes()})
	if len(v.replies) == 0 {
		v.mu.Unlock()
		http.Error(w, `{"error":{"message":"the test vendor has no more replies"}}`, http.StatusTeapot)
		return
	}
	rep := v.replies[0]
	v.replies = v.replies[1:]
	v.mu.Unlock()
	payload := []byte(rep.body)
	if rep.file != "" {
		var err error
		if payload, err = os.ReadFile(filepath.Join("testdata", rep.file)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	for k, val := range rep.header {
		w.Header().Set(k, val)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(payload)
	if rep.stall {
		// A vendor that goes quiet mid-stream: hold the connection open.
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// requests returns what the vendor received so far.
func (v *vendorServer) requests() []recorded {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]recorded(nil), v.reqs...)
}

// json decodes request i's body.
func (v *vendorServer) json(i int) map[string]any {
	v.t.Helper()
	reqs := v.requests()
	if i >= len(reqs) {
		v.t.Fatalf("vendor received %d requests, want at least %d", len(reqs), i+1)
	}
	var m map[string]any
	if err := json.Unmarshal(reqs[i].body, &m); err != nil {
		v.t.Fatalf("request %d body is not JSON: %v\n%s", i, err, reqs[i].body)
	}
	return m
}

// at walks a decoded JSON value by keys and indexes, failing the test with
// the path when something is missing.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	cur := v
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %v is not an object", path[:i+1], cur)
			}
			if cur, ok = m[k]; !ok {
				t.Fatalf("at %v: no key %q in %v", path[:i+1], k, keys(m))
			}
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) || k < -len(l) {
				t.Fatalf("at %v: %v has no index %d", path[:i+1], cur, k)
			}
			if k < 0 {
				k += len(l)
			}
			cur = l[k]
		}
	}
	return cur
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func str(t *testing.T, v any, path ...any) string {
	t.Helper()
	s, ok := at(t, v, path...).(string)
	if !ok {
		t.Fatalf("at %v: %v is not a string", path, at(t, v, path...))
	}
	return s
}

func length(t *testing.T, v any, path ...any) int {
	t.Helper()
	l, ok := at(t, v, path...).([]any)
	if !ok {
		t.Fatalf("at %v: not a list", path)
	}
	return len(l)
}

// wideImage is a 4000 x 2500 PNG, larger than every vendor's vision limit.
func wideImage(t *testing.T) *modelv1.ImageBlock {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4000, 2500))
	for i := 0; i < len(img.Pix); i += 4 {
		px := i / 4
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = uint8(px%4000), uint8(px/4000), 128, 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return &modelv1.ImageBlock{MimeType: "image/png", Data: buf.Bytes()}
}

// imageSize decodes a base64 image (or a data URL) and returns its size.
func imageSize(t *testing.T, b64 string) (int, int) {
	t.Helper()
	if _, after, ok := strings.Cut(b64, ";base64,"); ok {
		b64 = after
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("image is not base64: %v", err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("decode image: %v", err)
	}
	return cfg.Width, cfg.Height
}

const toolSchema = `{"type":"object","properties":{"description":{"type":"string"},"code":{"type":"string"}},"required":["description"]}`

func tools() []*modelv1.ToolSpec {
	return []*modelv1.ToolSpec{
		{Name: "execute_data_collection", Description: "Run a read-only script", InputSchemaJson: `{"type":"object","properties":{"code":{"type":"string"},"description":{"type":"string"}},"required":["code","description"]}`},
		{Name: "execute_task_automation", Description: "Run a script in one transaction", InputSchemaJson: toolSchema},
	}
}

func userText(s string) *modelv1.Message {
	return &modelv1.Message{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: s}}}}}
}

func toolResult(id, name, text string, images ...*modelv1.ImageBlock) *modelv1.Message {
	return &modelv1.Message{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{{Block: &modelv1.ContentBlock_ToolResult{ToolResult: &modelv1.ToolResultBlock{
		ToolUseId: id, Name: name, Text: text, Images: images}}}}}
}

// firstToolUse returns the tool call of an assistant message.
func firstToolUse(t *testing.T, m *modelv1.Message) *modelv1.ToolUseBlock {
	t.Helper()
	for _, b := range m.GetContent() {
		if tu := b.GetToolUse(); tu != nil {
			return tu
		}
	}
	t.Fatalf("no tool_use in %v", m)
	return nil
}

// kinds compresses a turn's events into the sequence of their kinds.
func kinds(evs []*modelv1.StreamTurnResponse) []string {
	var out []string
	for _, ev := range evs {
		var k string
		switch ev.GetEvent().(type) {
		case *modelv1.StreamTurnResponse_Thinking:
			k = "thinking"
		case *modelv1.StreamTurnResponse_Text:
			k = "text"
		case *modelv1.StreamTurnResponse_ToolInputDelta:
			k = "tool_input"
		case *modelv1.StreamTurnResponse_End:
			k = "end"
		case *modelv1.StreamTurnResponse_Error:
			k = "error"
		case *modelv1.StreamTurnResponse_Compacted:
			k = "compacted"
		}
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

func countKind(evs []*modelv1.StreamTurnResponse, kind string) int {
	n := 0
	for _, ev := range evs {
		if _, ok := ev.GetEvent().(*modelv1.StreamTurnResponse_ToolInputDelta); ok && kind == "tool_input" {
			n++
		}
	}
	return n
}

// testCtx bounds a test generously: a loaded machine must not make it flaky.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("JSON = %s, want %s", gb, wb)
	}
}

func start(t *testing.T, env map[string]string) *routertest.Router {
	t.Helper()
	if env["NEXUS_LOG_LEVEL"] == "" {
		env["NEXUS_LOG_LEVEL"] = "warn"
	}
	return routertest.Start(t, env)
}
