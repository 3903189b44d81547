package gateway

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/rpc"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// anthropicRequestLimit is the largest request body the Messages API takes.
const anthropicRequestLimit = 32 << 20

// noiseView is a PNG of random pixels, which does not compress: 620 x 620
// RGB is about 1.15 MB, the size of a large render.
func noiseView(t *testing.T, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	img := image.NewNRGBA(image.Rect(0, 0, 620, 620))
	for i := range img.Pix {
		if i%4 == 3 {
			img.Pix[i] = 255
		} else {
			img.Pix[i] = uint8(rng.UintN(256))
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// runOnce starts a run, answers its one tool call with result, and reads it
// to the end; it answers the tool call and the run's event kinds.
func runOnce(t *testing.T, base, session string, result *hostv1.HostResult) (*agentv1.ToolCall, []string) {
	t.Helper()
	resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"add a box"}`)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("run: %d %s", resp.StatusCode, b)
	}
	rd := newSSEReader(resp.Body)
	var call *agentv1.ToolCall
	var kinds []string
	for {
		f, err := rd.next()
		if err == io.EOF {
			return call, kinds
		}
		if err != nil {
			t.Fatal(err)
		}
		if f.comment != "" {
			continue
		}
		c := &agentv1.StreamChunk{}
		if err := protojson.Unmarshal([]byte(f.data), c); err != nil {
			t.Fatalf("data %q: %v", f.data, err)
		}
		kinds = append(kinds, f.event)
		if e := c.GetError(); e != nil {
			t.Fatalf("run failed: %v", e)
		}
		if tc := c.GetToolCall(); tc != nil {
			call = tc
			body, err := protojson.Marshal(&agentv1.SubmitToolResultRequest{ToolCallId: tc.GetToolCallId(), ResultToken: tc.GetResultToken(), Result: result})
			if err != nil {
				t.Fatal(err)
			}
			r := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/tool-results", aliceKey, string(body))
			if r.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(r.Body)
				t.Fatalf("tool result of %d bytes: %d %s", len(body), r.StatusCode, b)
			}
		}
	}
}

// TestSizesThroughTheRealServices drives one session through the gateway,
// the real orchestrator, model router and capability service and a loopback
// Anthropic server: a 6 MiB result, then twenty results with two large
// views each, then more runs. Every run must work and no request to the
// vendor may pass its limit.
func TestSizesThroughTheRealServices(t *testing.T) {
	t.Parallel()
	const viewRuns, laterRuns = 20, 2
	runs := 1 + viewRuns + laterRuns
	var turns []ot.Turn
	for i := range runs {
		turns = append(turns,
			ot.Turn{Blocks: []ot.Block{ot.ToolUse(fmt.Sprintf("toolu_%02d", i), "execute_task_automation", map[string]any{
				"description": "Add a box", "code": "doc.addObject('Part::Box', 'Box')\n"})}},
			ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}})
	}
	vendor := ot.NewAnthropic(t, turns...)
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_RATE_LIMIT_RPS", "0"))
	session := createSession(t, base, aliceKey)

	t.Run("a 6 MiB result is accepted", func(t *testing.T) {
		big := &hostv1.HostResult{Committed: true, Stdout: strings.Repeat("wall 0123456789 ok\n", (6<<20)/19+1)}
		call, kinds := runOnce(t, base, session, big)
		if call == nil || !strings.Contains(strings.Join(kinds, " "), "complete") {
			t.Fatalf("the run did not complete: %v", kinds)
		}
		// The orchestrator asks the host with the configured script timeout
		// and at the model's own image ceiling.
		ex := call.GetExecute()
		if ex.GetTimeoutMs() != 300000 || ex.GetCapture().GetMaxPx() != 1568 || ex.GetCapture().GetMaxPixels() != 1150000 ||
			ex.GetCapture().GetFraming() == nil {
			t.Errorf("execute request: timeout %d ms, capture %v; want 300000 ms and 1568 px, 1150000 pixels, with framing rules",
				ex.GetTimeoutMs(), ex.GetCapture())
		}
	})
	t.Run("twenty results of two large views, then more runs", func(t *testing.T) {
		for i := range viewRuns + laterRuns {
			res := &hostv1.HostResult{Committed: true, Stdout: fmt.Sprintf("run %d", i)}
			if i < viewRuns {
				for k := range 2 {
					res.Images = append(res.Images, &hostv1.Image{MimeType: "image/png", Data: noiseView(t, uint64(2*i+k)), View: "isometric", Width: 620, Height: 620})
				}
			}
			if _, kinds := runOnce(t, base, session, res); !strings.Contains(strings.Join(kinds, " "), "complete") {
				t.Fatalf("run %d did not complete: %v", i+2, kinds)
			}
		}
	})
	reqs := vendor.Requests()
	if len(reqs) != 2*runs {
		t.Fatalf("the vendor saw %d requests, want %d", len(reqs), 2*runs)
	}
	largest, lastImages := 0, 0
	for i, r := range reqs {
		largest = max(largest, len(r.Raw))
		if len(r.Raw) > anthropicRequestLimit {
			t.Errorf("request %d is %d bytes, over the vendor's %d", i+1, len(r.Raw), anthropicRequestLimit)
		}
		images := 0
		for _, m := range r.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_result" {
					_, n := b.ToolResultText()
					images += n
				}
			}
		}
		if images > 2 {
			t.Errorf("request %d carries %d views, want the newest 2 at most", i+1, images)
		}
		lastImages = images
	}
	if lastImages != 2 {
		t.Errorf("the last request carries %d views, want the newest 2", lastImages)
	}
	t.Logf("%d vendor requests, the largest %d bytes (limit %d)", len(reqs), largest, anthropicRequestLimit)
}

func TestSizeRefusalIs413(t *testing.T) {
	rec := httptest.NewRecorder()
	writeStatusError(t.Context(), rec, status.Error(codes.ResourceExhausted, "grpc: received message larger than max (70000000 vs. 67108864)"))
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", rec.Code)
	}
	body := rec.Body.String()
	if !strings.Contains(body, `"max":67108864`) || !strings.Contains(body, `"actual":70000000`) || !strings.Contains(body, "message_bytes") {
		t.Fatalf("the refusal does not name the limit: %s", body)
	}
	rec = httptest.NewRecorder()
	writeStatusError(t.Context(), rec, status.Error(codes.ResourceExhausted, "quota spent"))
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a quota is still 429, got %d", rec.Code)
	}
}

func TestMeshLimitsChecked(t *testing.T) {
	c := Config{SSEKeepalive: 1, Limits: Limits{MaxToolResultBytes: rpc.MaxToolResultBytes + 1}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "NEXUS_MAX_TOOL_RESULT_BYTES") {
		t.Fatalf("want an error naming NEXUS_MAX_TOOL_RESULT_BYTES, got %v", err)
	}
}
