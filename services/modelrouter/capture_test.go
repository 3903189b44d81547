package modelrouter_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/png"
	"strings"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/services/modelrouter/routertest"
)

// pngIn finds the one PNG a vendor request carries, whatever the vendor's
// wire format, and answers its size.
func pngIn(t *testing.T, body []byte) (int, int) {
	t.Helper()
	const magic = "iVBORw0KGgo"
	s := string(body)
	i := strings.Index(s, magic)
	if i < 0 || strings.Count(s, magic) != 1 {
		t.Fatalf("want one PNG in the vendor request, found %d", strings.Count(s, magic))
	}
	end := strings.IndexByte(s[i:], '"')
	raw, err := base64.StdEncoding.DecodeString(s[i : i+end])
	if err != nil {
		t.Fatalf("the image is not base64: %v", err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("decode the image: %v", err)
	}
	return cfg.Width, cfg.Height
}

// boxScript replaces the document with one flat box of length x width mm,
// so its plan view has that aspect.
const boxScript = `for o in list(App.ActiveDocument.Objects):
    App.ActiveDocument.removeObject(o.Name)
b = App.ActiveDocument.addObject("Part::Box", "Slab")
b.Length, b.Width, b.Height = %d, %d, 100
`

// TestCaptureAtEachModelsRule renders real FreeCAD plan views of a 16:10, a
// 1:1 and a 9:16 document at each model's image rule from the catalog, as the
// orchestrator asks for them (the rule's fields copied into the capture), and
// checks the size the host rendered and the size of the PNG that reaches each
// loopback vendor against the rule's own figures: the size the vendor keeps,
// never scaled again on the way. OpenAI requests say the detail the image was
// sized for, and Gemini 3's request sets media_resolution.
func TestCaptureAtEachModelsRule(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0", StartTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	docs := []struct {
		aspect        string
		length, width int
	}{{"16:10", 16000, 10000}, {"1:1", 10000, 10000}, {"9:16", 9000, 16000}}
	byVendor := map[string]vendorCase{}
	for _, tc := range vendorCases(t) {
		byVendor[tc.name] = tc
	}
	// The sizes each vendor keeps, per aspect (see TestImageRulePerModel for
	// the rules' arithmetic); qwen3:8b's rule comes from the test catalog
	// file (a 1024 px long side).
	models := []struct {
		vendor, model string
		sizes         [3]string
		wire          []string // what the request that carries the image must say
	}{
		{"anthropic", "anthropic/claude-sonnet-4-5", [3]string{"1356x848", "1072x1072", "804x1430"}, nil},
		{"openai", "openai/gpt-5", [3]string{"1229x768", "768x768", "768x1365"}, []string{`"detail":"high"`}},
		{"openai", "openai/gpt-5-mini", [3]string{"1568x980", "1248x1248", "928x1650"}, []string{`"detail":"high"`}},
		{"gemini", "gemini/gemini-2.5-pro", [3]string{"3072x1920", "3072x3072", "1728x3072"}, nil},
		{"gemini", "gemini/gemini-3-pro-preview", [3]string{"3072x1920", "3072x3072", "1728x3072"}, []string{`"mediaResolution":"MEDIA_RESOLUTION_HIGH"`}},
		{"openai-compat", "openai-compat/qwen3:8b", [3]string{"1024x640", "1024x1024", "576x1024"}, nil},
	}
	for i, doc := range docs {
		if res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: fmt.Sprintf(boxScript, doc.length, doc.width)}); err != nil || res.GetError() != nil {
			t.Fatalf("build the %s document: %v %v", doc.aspect, err, res.GetError())
		}
		for _, m := range models {
			t.Run(doc.aspect+"/"+m.model, func(t *testing.T) {
				tc := byVendor[m.vendor]
				v := newVendor(t, reply{file: tc.first}, reply{file: tc.second})
				r := start(t, tc.env(v.url))
				list, err := r.Client.ListModels(ctx, &modelv1.ListModelsRequest{})
				if err != nil {
					t.Fatal(err)
				}
				var info *modelv1.ModelInfo
				for _, x := range list.GetModels() {
					if x.GetId() == m.model {
						info = x
					}
				}
				if info == nil || info.GetVisionMaxPx() <= 0 {
					t.Fatalf("no image rule for %s in the catalog: %v", m.model, info)
				}
				res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: "pass",
					Capture: &hostv1.Capture{View: "plan", MaxPx: info.GetVisionMaxPx(), MaxPixels: info.GetVisionMaxPixels(),
						MaxShortPx: info.GetVisionMaxShortPx(), PatchPx: info.GetVisionPatchPx(), MaxPatches: info.GetVisionMaxPatches()}})
				if err != nil || len(res.GetImages()) != 1 {
					t.Fatalf("capture: %v %v", err, res)
				}
				img := res.GetImages()[0]
				rendered := fmt.Sprintf("%dx%d", img.GetWidth(), img.GetHeight())

				req := &modelv1.StreamTurnRequest{Model: m.model, System: "You automate FreeCAD.", Tools: tools(), MaxTokens: 8000, SessionId: "session-1",
					Messages: []*modelv1.Message{userText("Add a 4 m wall.")}}
				turn, err := routertest.Collect(ctx, r.Client, req)
				if err != nil || turn.End == nil {
					t.Fatalf("first turn: %v %v", err, turn.Error)
				}
				call := firstToolUse(t, turn.End.Message)
				req.Messages = append(req.Messages, turn.End.Message, toolResult(call.Id, call.Name, "Wall added.",
					&modelv1.ImageBlock{MimeType: img.GetMimeType(), Data: img.GetData()}))
				if _, err := routertest.Collect(ctx, r.Client, req); err != nil {
					t.Fatalf("second turn: %v", err)
				}
				body := v.requests()[1].body
				w, h := pngIn(t, body)
				sent := fmt.Sprintf("%dx%d", w, h)
				t.Logf("%s %s: rule %d px long, %d px short, %d pixels, %d patches of %d px; host rendered %s; vendor got %s",
					m.model, doc.aspect, info.GetVisionMaxPx(), info.GetVisionMaxShortPx(), info.GetVisionMaxPixels(),
					info.GetVisionMaxPatches(), info.GetVisionPatchPx(), rendered, sent)
				if rendered != m.sizes[i] {
					t.Errorf("the host rendered %s, want %s: the size %s keeps", rendered, m.sizes[i], m.model)
				}
				if sent != m.sizes[i] {
					t.Errorf("the vendor got %s, want %s", sent, m.sizes[i])
				}
				compact := strings.ReplaceAll(string(body), " ", "")
				for _, want := range m.wire {
					if !strings.Contains(compact, want) {
						t.Errorf("the request lacks %s", want)
					}
				}
			})
		}
	}
}
