package modelrouter

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// aspects are the captures every rule is checked at: the size the host
// starts a render from for each (the long side at the rule's maxPx), and a
// larger image of the same aspect as a person might attach.
var aspects = []struct {
	name       string
	num, den   int // width / height
	bigW, bigH int
}{
	{"16:10", 16, 10, 3200, 2000},
	{"1:1", 1, 1, 2000, 2000},
	{"9:16", 9, 16, 1800, 3200},
}

// hostStart is the size the host runtime renders a view of aspect num:den
// from before it applies the rule: the long side at maxPx.
func hostStart(maxPx, num, den int) (int, int) {
	if num >= den {
		return maxPx, (maxPx*den + num - 1) / num
	}
	return (maxPx*num + den - 1) / den, maxPx
}

// TestImageRulePerModel holds every catalog model with vision to its
// vendor's documented rule, by the rule's own figures: the size the vendor
// keeps for a 16:10, a 1:1 and a 9:16 image. The host's capture (started at
// the rule's long side) and a larger image both fit to exactly that size,
// and an image of that size is kept as it is (never scaled twice).
func TestImageRulePerModel(t *testing.T) {
	// Anthropic: long side 1568, at most 1.15 MP. OpenAI tile models: in
	// 2048 px, short side 768. OpenAI patch models: at most 1536 patches of
	// 32 px, then whole patches across (16:10: 49x31 = 1519 patches; 1:1:
	// 39x39 = 1521; 9:16: 29x52 = 1508). Gemini: long side 3072.
	// openai-compat models the catalog does not name: long side 2048.
	anthropic := []string{"1356x848", "1072x1072", "804x1430"}
	tile := []string{"1229x768", "768x768", "768x1365"}
	patch := []string{"1568x980", "1248x1248", "928x1650"}
	gemini := []string{"3072x1920", "3072x3072", "1728x3072"}
	want := map[string]struct {
		sizes  []string
		detail string
		media  string
	}{
		"anthropic/claude-sonnet-4-5": {sizes: anthropic}, "anthropic/claude-opus-4-5": {sizes: anthropic},
		"anthropic/claude-haiku-4-5": {sizes: anthropic}, "replay/demo": {sizes: anthropic}, "replay/expert": {sizes: anthropic},
		"openai/gpt-5.1": {sizes: tile, detail: "high"}, "openai/gpt-5": {sizes: tile, detail: "high"},
		"openai/gpt-5-mini":     {sizes: patch, detail: "high"},
		"gemini/gemini-2.5-pro": {sizes: gemini}, "gemini/gemini-2.5-flash": {sizes: gemini},
		"gemini/gemini-3-pro-preview":     {sizes: gemini, media: "high"},
		"openai-compat/some-vision-model": {sizes: []string{"2048x1280", "2048x2048", "1152x2048"}},
	}
	c, err := LoadCatalog(Config{})
	if err != nil {
		t.Fatal(err)
	}
	compat, err := c.Lookup("openai-compat/some-vision-model")
	if err != nil {
		t.Fatal(err)
	}
	models := append(append([]*ModelEntry{}, c.Models...), compat)
	for _, m := range models {
		if !m.has(modelv1.ModelFeature_MODEL_FEATURE_VISION) && m.Vendor != VendorCompat {
			continue
		}
		w, ok := want[m.ID]
		if !ok {
			t.Errorf("catalog model %s has vision but no rule in this table", m.ID)
			continue
		}
		if m.VisionDetail != w.detail || m.MediaResolution != w.media {
			t.Errorf("%s: detail %q, media_resolution %q; want %q, %q", m.ID, m.VisionDetail, m.MediaResolution, w.detail, w.media)
		}
		l := limitOf(m)
		for i, a := range aspects {
			sw, sh := hostStart(int(m.VisionMaxPx), a.num, a.den)
			for _, in := range [][2]int{{sw, sh}, {a.bigW, a.bigH}} {
				gw, gh, _ := l.fit(in[0], in[1])
				if got := fmt.Sprintf("%dx%d", gw, gh); got != w.sizes[i] && !(in[0] <= sw && got == fmt.Sprintf("%dx%d", in[0], in[1])) {
					t.Errorf("%s %s: %dx%d fits as %s, want %s", m.ID, a.name, in[0], in[1], got, w.sizes[i])
				}
			}
			var kw, kh int
			fmt.Sscanf(w.sizes[i], "%dx%d", &kw, &kh)
			if gw, gh, must := l.fit(kw, kh); must {
				t.Errorf("%s %s: %dx%d, the size the vendor keeps, would be scaled again to %dx%d", m.ID, a.name, kw, kh, gw, gh)
			}
		}
	}
	for _, info := range c.Infos() {
		m, _ := c.Lookup(info.GetId())
		if info.GetVisionMaxPx() != m.VisionMaxPx || info.GetVisionMaxShortPx() != m.VisionMaxShortPx || info.GetVisionMaxPixels() != m.VisionMaxPixels ||
			info.GetVisionPatchPx() != m.VisionPatchPx || info.GetVisionMaxPatches() != m.VisionMaxPatches {
			t.Errorf("%s: ListModels says the rule is %v, the catalog %+v", info.GetId(), info, m)
		}
	}
}

// TestImageRuleRefusesBadEntries shows a catalog file's bad rule refused,
// naming the field.
func TestImageRuleRefusesBadEntries(t *testing.T) {
	c := &Catalog{configured: map[string]string{}}
	for _, tt := range []struct {
		entry ModelEntry
		field string
	}{
		{ModelEntry{ID: "openai/x", ContextWindow: 1, MaxOutputTokens: 1, VisionMaxPx: 2048, VisionPatchPx: 32}, "vision_max_patches"},
		{ModelEntry{ID: "openai/x", ContextWindow: 1, MaxOutputTokens: 1, VisionMaxPx: 2048, VisionDetail: "ultra"}, "vision_detail"},
		{ModelEntry{ID: "openai/x", ContextWindow: 1, MaxOutputTokens: 1, VisionMaxPx: 2048, MediaResolution: "high"}, "media_resolution"},
		{ModelEntry{ID: "gemini/x", ContextWindow: 1, MaxOutputTokens: 1, VisionMaxPx: 2048, MediaResolution: "max"}, "media_resolution"},
	} {
		if err := c.complete(&tt.entry); err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%+v: err %v, want one naming %s", tt.entry, err, tt.field)
		}
	}
}

// TestImageRuleFromCatalogFile shows NEXUS_MODEL_CATALOG giving a model its
// own rule: the file's figures are the model's, in the router and in
// ListModels.
func TestImageRuleFromCatalogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(path, []byte(`models:
  - id: openai-compat/qwen2.5-vl:7b
    context_window: 32768
    max_output_tokens: 8192
    vision_max_px: 3584
    vision_max_pixels: 12845056
    vision_patch_px: 28
    vision_max_patches: 16384
    vision_detail: high
    features: [tools, vision]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCatalog(Config{CatalogPath: path})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Lookup("openai-compat/qwen2.5-vl:7b")
	if err != nil {
		t.Fatal(err)
	}
	if l := limitOf(m); l != (visionLimit{maxPx: 3584, maxPixels: 12845056, patchPx: 28, maxPatches: 16384}) || m.VisionDetail != "high" {
		t.Fatalf("rule %+v detail %q, want the file's", l, m.VisionDetail)
	}
	if w, h, must := limitOf(m).fit(3200, 2000); must {
		t.Errorf("3200x2000 is within the file's rule but would be scaled to %dx%d", w, h)
	}
}
