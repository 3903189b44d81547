package modelrouter

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

func TestCatalogFile(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		cfg     Config
		wantErr string
		check   func(t *testing.T, c *Catalog)
	}{
		{
			name: "json adds and overrides",
			file: `{"models":[{"id":"anthropic/claude-sonnet-4-5","context_window":1000000,"max_output_tokens":64000,"vision_max_px":1568,"pricing":{"input":6,"output":22.5}},
				{"id":"openai/gpt-4.1","context_window":1047576,"max_output_tokens":32768,"vision_max_px":2048,"pricing":{"input":2,"output":8,"cache_read":0.5}}]}`,
			cfg: Config{AnthropicAPIKey: "k"},
			check: func(t *testing.T, c *Catalog) {
				m, err := c.Lookup("anthropic/claude-sonnet-4-5")
				if err != nil || m.ContextWindow != 1000000 || m.Pricing.Input != 6 || !m.Available {
					t.Errorf("override = %+v, %v", m, err)
				}
				m, err = c.Lookup("openai/gpt-4.1")
				if err != nil || m.Available || m.Note != "set OPENAI_API_KEY" || m.has(modelv1.ModelFeature_MODEL_FEATURE_THINKING) {
					t.Errorf("added = %+v, %v", m, err)
				}
				if c.Default != "anthropic/claude-sonnet-4-5" {
					t.Errorf("default = %s", c.Default)
				}
			},
		},
		{name: "unknown field", file: "models:\n  - id: openai/x\n    context: 5\n", wantErr: "field context not found"},
		{name: "bad vendor", file: "models:\n  - {id: acme/x, context_window: 1, max_output_tokens: 1}\n", wantErr: `"acme/x": id must be vendor/model`},
		{name: "no output limit", file: "models:\n  - {id: openai/x, context_window: 10}\n", wantErr: "openai/x: max_output_tokens must be positive"},
		{name: "unknown default", cfg: Config{DefaultModel: "openai/gpt-2"}, wantErr: `NEXUS_DEFAULT_MODEL: unknown model "openai/gpt-2"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if tc.file != "" {
				cfg.CatalogPath = filepath.Join(t.TempDir(), "catalog")
				if err := os.WriteFile(cfg.CatalogPath, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := LoadCatalog(cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestScaleImage(t *testing.T) {
	jpg := func(w, h int) []byte {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h)), nil); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	cases := []struct {
		name         string
		w, h         int
		maxPx        int32
		wantW, wantH int
	}{
		{"tall is scaled by its height", 1000, 3000, 1500, 500, 1500},
		{"small is left alone", 800, 600, 1568, 800, 600},
		{"no vision limit", 5000, 10, 0, 5000, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &modelv1.ImageBlock{MimeType: "image/jpeg", Data: jpg(tc.w, tc.h)}
			out, err := scaleImage(in, visionLimit{maxPx: tc.maxPx})
			if err != nil {
				t.Fatal(err)
			}
			cfg, format, err := image.DecodeConfig(bytes.NewReader(out.Data))
			if err != nil || format != "jpeg" || out.MimeType != "image/jpeg" {
				t.Fatalf("scaled image: format %s mime %s err %v", format, out.MimeType, err)
			}
			if cfg.Width != tc.wantW || cfg.Height != tc.wantH {
				t.Errorf("size %dx%d, want %dx%d", cfg.Width, cfg.Height, tc.wantW, tc.wantH)
			}
		})
	}
}

func TestRedactedThinkingRoundTrip(t *testing.T) {
	entry := &ModelEntry{ID: "anthropic/claude-sonnet-4-5", Vendor: VendorAnthropic, Name: "claude-sonnet-4-5", MaxOutputTokens: 64000, Features: Features{modelv1.ModelFeature_MODEL_FEATURE_THINKING}}
	msgs, err := prepareMessages([]*modelv1.Message{
		{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: "hi"}}}}},
		{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{
			{Block: &modelv1.ContentBlock_Thinking{Thinking: &modelv1.ThinkingBlock{Encrypted: "EmwKAhgBEgy3va3pzix", Vendor: VendorAnthropic, Model: entry.ID}}},
			{Block: &modelv1.ContentBlock_ToolUse{ToolUse: &modelv1.ToolUseBlock{Id: "toolu_1", Name: "capture_view", Vendor: VendorAnthropic, Model: entry.ID}}},
		}},
	}, entry, 2, scaleImage)
	if err != nil {
		t.Fatal(err)
	}
	a := &anthropicAdapter{vendor: VendorAnthropic}
	req := a.buildRequest(&turn{entry: entry, messages: msgs, maxTokens: 8000})
	got := req.Messages[1].Content
	if got[0].Type != "redacted_thinking" || got[0].Data != "EmwKAhgBEgy3va3pzix" || got[1].Type != "tool_use" || string(got[1].Input) != "{}" {
		t.Errorf("assistant blocks = %+v", got)
	}
	if req.Thinking == nil || req.Thinking.BudgetTokens != 4000 {
		t.Errorf("thinking = %+v, want enabled with half the output budget", req.Thinking)
	}
}

// BenchmarkScaleImage measures scaling a 4000 x 2500 PNG render to 1568 px.
func BenchmarkScaleImage(b *testing.B) {
	src := image.NewRGBA(image.Rect(0, 0, 4000, 2500))
	for i := range src.Pix {
		src.Pix[i] = uint8(i)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, src); err != nil {
		b.Fatal(err)
	}
	in := &modelv1.ImageBlock{MimeType: "image/png", Data: buf.Bytes()}
	for b.Loop() {
		if _, err := scaleImage(in, visionLimit{maxPx: 1568}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestImageCacheEvicts(t *testing.T) {
	c := newImageCache(2500)
	img := func(n byte) *modelv1.ImageBlock {
		var buf bytes.Buffer
		src := image.NewRGBA(image.Rect(0, 0, 20, 20))
		for i := range src.Pix {
			src.Pix[i] = n + uint8(i*7)
		}
		if err := png.Encode(&buf, src); err != nil {
			t.Fatal(err)
		}
		return &modelv1.ImageBlock{MimeType: "image/png", Data: buf.Bytes()}
	}
	for i := range byte(10) {
		if _, err := c.scale(img(i), visionLimit{maxPx: 1568}); err != nil {
			t.Fatal(err)
		}
		if c.size > c.max && c.order.Len() > 1 {
			t.Fatalf("cache holds %d bytes in %d images, limit %d", c.size, c.order.Len(), c.max)
		}
	}
	if len(c.items) != c.order.Len() || c.order.Len() == 0 || c.order.Len() == 10 {
		t.Errorf("cache holds %d images (%d indexed) after 10 inserts", c.order.Len(), len(c.items))
	}
	again, err := c.scale(img(9), visionLimit{maxPx: 1568})
	if err != nil || again != c.order.Front().Value.(*imageEntry).img {
		t.Errorf("the newest image should come from the cache")
	}
}

// TestCatalogFeaturesAreKnown shows a catalog file's features are read into
// the enum, and an unknown one is refused with the names allowed.
func TestCatalogFeaturesAreKnown(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	entry := "models:\n  - id: openai-compat/local\n    context_window: 1000\n    max_output_tokens: 100\n    features: [%s]\n"
	if err := os.WriteFile(good, []byte(fmt.Sprintf(entry, "tools, prompt_cache")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(fmt.Sprintf(entry, "tools, telepathy")), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readCatalogFile(good)
	if err != nil || len(got) != 1 || !got[0].has(modelv1.ModelFeature_MODEL_FEATURE_PROMPT_CACHE) || !got[0].has(modelv1.ModelFeature_MODEL_FEATURE_TOOLS) {
		t.Fatalf("good catalog: %v %+v", err, got)
	}
	if _, err := readCatalogFile(bad); err == nil || !strings.Contains(err.Error(), `"telepathy"`) || !strings.Contains(err.Error(), "prompt_cache") {
		t.Fatalf("unknown feature: %v, want it named beside the known ones", err)
	}
}
