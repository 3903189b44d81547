package modelrouter_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	_ "image/png"
	"strings"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/capability/hostrt"
	"nexus.local/services/modelrouter/routertest"
)

const wallsScript = `import Arch
for i in range(40):
    w = Arch.makeWall(None, length=1000, width=200, height=2500)
    w.Placement = App.Placement(App.Vector((i % 8) * 1500, (i // 8) * 1500, 0), App.Rotation())
`

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

// TestCaptureAtEachModelsCeiling renders a real FreeCAD view at each
// model's ceiling from the catalog, as the orchestrator asks for it, and
// checks the PNG that reaches each loopback vendor: the same size (the router
// did not scale it again), at the ceiling and within it.
func TestCaptureAtEachModelsCeiling(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rt, err := hostrt.Start(ctx, hostrt.Options{Addr: "127.0.0.1:0", StartTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	if res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: wallsScript}); err != nil || res.GetError() != nil {
		t.Fatalf("build the model: %v %v", err, res.GetError())
	}
	for _, tc := range vendorCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			v := newVendor(t, reply{file: tc.first}, reply{file: tc.second})
			r := start(t, tc.env(v.url))
			models, err := r.Client.ListModels(ctx, &modelv1.ListModelsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var info *modelv1.ModelInfo
			for _, m := range models.GetModels() {
				if m.GetId() == tc.model {
					info = m
				}
			}
			if info == nil || info.GetVisionMaxPx() <= 0 {
				t.Fatalf("no vision ceiling for %s in the catalog: %v", tc.model, info)
			}
			res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: "pass",
				Capture: &hostv1.Capture{View: "isometric", MaxPx: info.GetVisionMaxPx(), MaxPixels: info.GetVisionMaxPixels()}})
			if err != nil || len(res.GetImages()) != 1 {
				t.Fatalf("capture: %v %v", err, res)
			}
			img := res.GetImages()[0]

			req := &modelv1.StreamTurnRequest{Model: tc.model, System: "You automate FreeCAD.", Tools: tools(), MaxTokens: 8000, SessionId: "session-1",
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
			w, h := pngIn(t, v.requests()[1].body)
			maxPx, maxPixels := int(info.GetVisionMaxPx()), int(info.GetVisionMaxPixels())
			t.Logf("%s: ceiling %d px, %d pixels; runtime rendered %dx%d; vendor got %dx%d (%d pixels)",
				tc.model, maxPx, maxPixels, img.GetWidth(), img.GetHeight(), w, h, w*h)
			if w != int(img.GetWidth()) || h != int(img.GetHeight()) {
				t.Errorf("the router scaled the capture again: %dx%d became %dx%d", img.GetWidth(), img.GetHeight(), w, h)
			}
			if max(w, h) > maxPx || (maxPixels > 0 && w*h > maxPixels) {
				t.Errorf("%dx%d is over the ceiling of %d px and %d pixels", w, h, maxPx, maxPixels)
			}
			atSide := max(w, h) == maxPx
			atArea := maxPixels > 0 && float64(w*h) >= 0.98*float64(maxPixels)
			if !atSide && !atArea {
				t.Errorf("%dx%d is under the ceiling of %d px and %d pixels: detail was thrown away", w, h, maxPx, maxPixels)
			}
		})
	}
}
