package modelrouter

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// Vendors the router speaks to.
const (
	VendorAnthropic = "anthropic"
	VendorOpenAI    = "openai"
	VendorGemini    = "gemini"
	VendorCompat    = "openai-compat"
	VendorReplay    = "replay"
)

// vendors lists every vendor in the order a default model is chosen.
func vendors() []string {
	return []string{VendorAnthropic, VendorOpenAI, VendorGemini, VendorCompat, VendorReplay}
}

// Pricing is US dollars per million tokens.
type Pricing struct {
	Input      float64 `yaml:"input"`
	Output     float64 `yaml:"output"`
	CacheRead  float64 `yaml:"cache_read"`
	CacheWrite float64 `yaml:"cache_write"`
}

// ModelEntry is one catalog model. The file format uses the same field names.
type ModelEntry struct {
	ID              string `yaml:"id"`
	DisplayName     string `yaml:"display_name"`
	ContextWindow   int64  `yaml:"context_window"`
	MaxOutputTokens int32  `yaml:"max_output_tokens"`
	// The image rule: the largest image the model sees without its vendor
	// scaling it again. VisionMaxPx bounds the longest side (0: no images),
	// VisionMaxShortPx the shortest, VisionMaxPixels the area (width x
	// height), and VisionPatchPx with VisionMaxPatches a patch budget (the
	// image cut into squares of that side, partial ones counted whole); 0
	// leaves each unbounded.
	VisionMaxPx      int32 `yaml:"vision_max_px"`
	VisionMaxShortPx int32 `yaml:"vision_max_short_px"`
	VisionMaxPixels  int64 `yaml:"vision_max_pixels"`
	VisionPatchPx    int32 `yaml:"vision_patch_px"`
	VisionMaxPatches int32 `yaml:"vision_max_patches"`
	// VisionDetail is the detail level the rule is for, sent with every
	// image to OpenAI and OpenAI-compatible servers: low, high, original or
	// auto; empty sends none.
	VisionDetail string `yaml:"vision_detail"`
	// MediaResolution is Gemini's media_resolution for the request: low,
	// medium or high; empty leaves the vendor's default.
	MediaResolution string   `yaml:"media_resolution"`
	Pricing         Pricing  `yaml:"pricing"`
	Features        Features `yaml:"features"`
	Note            string   `yaml:"note"`

	// Vendor and Name split ID; Available says whether the vendor is configured.
	Vendor    string `yaml:"-"`
	Name      string `yaml:"-"`
	Available bool   `yaml:"-"`
}

// has reports whether the model offers feature f.
func (m *ModelEntry) has(f modelv1.ModelFeature) bool { return slices.Contains(m.Features, f) }

// cost prices u at the model's catalog rates.
func (m *ModelEntry) cost(u *modelv1.Usage) float64 {
	p := m.Pricing
	return (float64(u.GetInputTokens())*p.Input + float64(u.GetOutputTokens())*p.Output +
		float64(u.GetCacheReadTokens())*p.CacheRead + float64(u.GetCacheWriteTokens())*p.CacheWrite) / 1e6
}

// The vendors' documented image rules: the largest image each model keeps
// as sent. Each names the page that documents it.
const (
	// Anthropic scales an image whose long edge passes 1568 px, and
	// recommends at most 1.15 megapixels so that it is not resized:
	// https://platform.claude.com/docs/en/build-with-claude/vision
	// ("Evaluate image size").
	anthropicMaxPx     = 1568
	anthropicMaxPixels = 1150000
	// OpenAI's tile-based models (GPT-5, GPT-5.1), at detail "high", fit the
	// image in a 2048 px square and then scale it so that its shortest side
	// is 768 px: https://platform.openai.com/docs/guides/images-vision
	// ("Calculating costs", the GPT-5 row of the tile models).
	openAITileMaxPx      = 2048
	openAITileMaxShortPx = 768
	// OpenAI's patch-based models (GPT-5 mini) cover the image with 32 px
	// patches and scale it down until at most 1536 patches cover it, then to
	// a whole number of patches across, same page (the patch models).
	// Renders start from the tile models' 2048 px square.
	openAIPatchPx      = 32
	openAIMaxPatches   = 1536
	openAIPatchStartPx = 2048
	// The detail level both OpenAI rules above are documented for.
	openAIDetail = "high"
	// Gemini scales a larger image down (and pads it) to fit 3072x3072,
	// keeping its aspect, and tiles it in 768 px tiles:
	// https://docs.cloud.google.com/vertex-ai/generative-ai/docs/multimodal/image-understanding
	// ("Image requirements"), https://ai.google.dev/gemini-api/docs/image-understanding
	geminiMaxPx = 3072
	// Gemini 3 takes media_resolution per request, and its documentation
	// recommends "high" (1120 tokens an image) for image analysis:
	// https://ai.google.dev/gemini-api/docs/media-resolution
	gemini3MediaResolution = "high"
	// An OpenAI-compatible model the catalog does not name gets a generous
	// rule, documented in services/modelrouter/README.md: a 2048 px long side
	// and no area bound, within what the vision models such servers commonly
	// run keep (Qwen2-VL's processor keeps up to 12,845,056 pixels,
	// https://huggingface.co/Qwen/Qwen2-VL-7B-Instruct/blob/main/preprocessor_config.json)
	// and well above the 1024 px that loses annotation text;
	// NEXUS_MODEL_CATALOG sets a model's own rule.
	compatMaxPx = 2048
)

// defaultModels is the built-in catalog; a catalog file adds to or overrides it.
func defaultModels() []ModelEntry {
	const (
		thinking    = modelv1.ModelFeature_MODEL_FEATURE_THINKING
		vision      = modelv1.ModelFeature_MODEL_FEATURE_VISION
		promptCache = modelv1.ModelFeature_MODEL_FEATURE_PROMPT_CACHE
		tools       = modelv1.ModelFeature_MODEL_FEATURE_TOOLS
		compaction  = modelv1.ModelFeature_MODEL_FEATURE_COMPACTION
	)
	claude := Features{thinking, vision, promptCache, tools}
	gpt := Features{thinking, vision, promptCache, tools, compaction}
	gemini := Features{thinking, vision, promptCache, tools}
	anthropic := func(e ModelEntry) ModelEntry {
		e.VisionMaxPx, e.VisionMaxPixels, e.Features = anthropicMaxPx, anthropicMaxPixels, claude
		return e
	}
	openAITile := func(e ModelEntry) ModelEntry {
		e.VisionMaxPx, e.VisionMaxShortPx, e.VisionDetail, e.Features = openAITileMaxPx, openAITileMaxShortPx, openAIDetail, gpt
		return e
	}
	openAIPatch := func(e ModelEntry) ModelEntry {
		e.VisionMaxPx, e.VisionPatchPx, e.VisionMaxPatches, e.VisionDetail, e.Features = openAIPatchStartPx, openAIPatchPx, openAIMaxPatches, openAIDetail, gpt
		return e
	}
	google := func(e ModelEntry) ModelEntry {
		e.VisionMaxPx, e.Features = geminiMaxPx, gemini
		return e
	}
	return []ModelEntry{
		anthropic(ModelEntry{ID: "anthropic/claude-sonnet-4-5", DisplayName: "Claude Sonnet 4.5", ContextWindow: 200000, MaxOutputTokens: 64000,
			Pricing: Pricing{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}}),
		anthropic(ModelEntry{ID: "anthropic/claude-opus-4-5", DisplayName: "Claude Opus 4.5", ContextWindow: 200000, MaxOutputTokens: 64000,
			Pricing: Pricing{Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25}}),
		anthropic(ModelEntry{ID: "anthropic/claude-haiku-4-5", DisplayName: "Claude Haiku 4.5", ContextWindow: 200000, MaxOutputTokens: 64000,
			Pricing: Pricing{Input: 1, Output: 5, CacheRead: 0.10, CacheWrite: 1.25}}),
		openAITile(ModelEntry{ID: "openai/gpt-5.1", DisplayName: "GPT-5.1", ContextWindow: 400000, MaxOutputTokens: 128000,
			Pricing: Pricing{Input: 1.25, Output: 10, CacheRead: 0.125}}),
		openAITile(ModelEntry{ID: "openai/gpt-5", DisplayName: "GPT-5", ContextWindow: 400000, MaxOutputTokens: 128000,
			Pricing: Pricing{Input: 1.25, Output: 10, CacheRead: 0.125}}),
		openAIPatch(ModelEntry{ID: "openai/gpt-5-mini", DisplayName: "GPT-5 mini", ContextWindow: 400000, MaxOutputTokens: 128000,
			Pricing: Pricing{Input: 0.25, Output: 2, CacheRead: 0.025}}),
		google(ModelEntry{ID: "gemini/gemini-2.5-pro", DisplayName: "Gemini 2.5 Pro", ContextWindow: 1048576, MaxOutputTokens: 65536,
			Pricing: Pricing{Input: 1.25, Output: 10, CacheRead: 0.125}}),
		google(ModelEntry{ID: "gemini/gemini-2.5-flash", DisplayName: "Gemini 2.5 Flash", ContextWindow: 1048576, MaxOutputTokens: 65536,
			Pricing: Pricing{Input: 0.30, Output: 2.50, CacheRead: 0.03}}),
		google(ModelEntry{ID: "gemini/gemini-3-pro-preview", DisplayName: "Gemini 3 Pro (preview)", ContextWindow: 1048576, MaxOutputTokens: 65536,
			MediaResolution: gemini3MediaResolution, Pricing: Pricing{Input: 2, Output: 12, CacheRead: 0.20}}),
		{ID: "replay/demo", DisplayName: "Demo (recorded turns)", ContextWindow: 200000, MaxOutputTokens: 16000, VisionMaxPx: anthropicMaxPx, VisionMaxPixels: anthropicMaxPixels,
			Features: Features{modelv1.ModelFeature_MODEL_FEATURE_TOOLS, modelv1.ModelFeature_MODEL_FEATURE_VISION}, Note: "replays recorded turns; set a vendor API key to use a real model"},
		{ID: "replay/expert", DisplayName: "Expert (eval reference solutions)", ContextWindow: 200000, MaxOutputTokens: 16000, VisionMaxPx: anthropicMaxPx, VisionMaxPixels: anthropicMaxPixels,
			Features: Features{modelv1.ModelFeature_MODEL_FEATURE_TOOLS, modelv1.ModelFeature_MODEL_FEATURE_VISION}, Note: "solves the nexus eval tasks by their reference solutions; token counts are estimates"},
	}
}

// compatDefaults sizes an openai-compat model the catalog does not name.
func compatDefaults() ModelEntry {
	return ModelEntry{ContextWindow: 32768, MaxOutputTokens: 8192, VisionMaxPx: compatMaxPx, Features: Features{modelv1.ModelFeature_MODEL_FEATURE_TOOLS}}
}

// Catalog is every model the router knows, in display order.
type Catalog struct {
	Models     []*ModelEntry
	Default    string
	byID       map[string]*ModelEntry
	configured map[string]string // vendor -> why it is unavailable, "" when available
}

// LoadCatalog builds the catalog from the built-in models, cfg.CatalogPath and
// the configured vendors.
func LoadCatalog(cfg Config) (*Catalog, error) {
	entries := defaultModels()
	for _, name := range cfg.CompatModels {
		if name = strings.TrimSpace(name); name != "" {
			e := compatDefaults()
			e.ID = VendorCompat + "/" + name
			entries = append(entries, e)
		}
	}
	if cfg.CatalogPath != "" {
		extra, err := readCatalogFile(cfg.CatalogPath)
		if err != nil {
			return nil, err
		}
		for _, e := range extra {
			if i := slices.IndexFunc(entries, func(o ModelEntry) bool { return o.ID == e.ID }); i >= 0 {
				entries[i] = e
			} else {
				entries = append(entries, e)
			}
		}
	}
	c := &Catalog{byID: map[string]*ModelEntry{}, configured: vendorStatus(cfg)}
	for i := range entries {
		e := entries[i]
		if err := c.complete(&e); err != nil {
			return nil, err
		}
		c.Models = append(c.Models, &e)
		c.byID[e.ID] = &e
	}
	def, err := c.pickDefault(cfg.DefaultModel)
	if err != nil {
		return nil, err
	}
	c.Default = def
	return c, nil
}

// vendorStatus says, per vendor, what is missing to reach it.
func vendorStatus(cfg Config) map[string]string {
	need := func(ok bool, what string) string {
		if ok {
			return ""
		}
		return what
	}
	return map[string]string{
		VendorAnthropic: need(cfg.AnthropicAPIKey != "" || cfg.AnthropicBaseURL != "", "set ANTHROPIC_API_KEY"),
		VendorOpenAI:    need(cfg.OpenAIAPIKey != "" || cfg.OpenAIBaseURL != "", "set OPENAI_API_KEY"),
		VendorGemini:    need(cfg.GeminiAPIKey != "" || cfg.GeminiBaseURL != "", "set GEMINI_API_KEY"),
		VendorCompat:    need(cfg.CompatBaseURL != "", "set NEXUS_OPENAI_COMPAT_BASE_URL"),
		VendorReplay:    need(cfg.ReplayBaseURL != "", "nexus dev serves the replay models; elsewhere set NEXUS_REPLAY_BASE_URL"),
	}
}

// complete validates e and fills the fields derived from its id.
func (c *Catalog) complete(e *ModelEntry) error {
	vendor, name, ok := strings.Cut(e.ID, "/")
	if !ok || name == "" || !slices.Contains(vendors(), vendor) {
		return fmt.Errorf("catalog model %q: id must be vendor/model with vendor one of %s", e.ID, strings.Join(vendors(), ", "))
	}
	switch {
	case e.ContextWindow <= 0:
		return fmt.Errorf("catalog model %s: context_window must be positive", e.ID)
	case e.MaxOutputTokens <= 0:
		return fmt.Errorf("catalog model %s: max_output_tokens must be positive", e.ID)
	case e.VisionMaxPx < 0:
		return fmt.Errorf("catalog model %s: vision_max_px must be 0 (no images) or more", e.ID)
	case e.VisionMaxPixels < 0 || e.VisionMaxShortPx < 0:
		return fmt.Errorf("catalog model %s: vision_max_pixels and vision_max_short_px must be 0 (no limit) or more", e.ID)
	case (e.VisionPatchPx > 0) != (e.VisionMaxPatches > 0) || e.VisionPatchPx < 0 || e.VisionMaxPatches < 0:
		return fmt.Errorf("catalog model %s: vision_patch_px and vision_max_patches go together, both positive or both 0", e.ID)
	case !slices.Contains([]string{"", "low", "high", "original", "auto"}, e.VisionDetail):
		return fmt.Errorf("catalog model %s: vision_detail %q must be low, high, original or auto", e.ID, e.VisionDetail)
	case !slices.Contains([]string{"", "low", "medium", "high"}, e.MediaResolution):
		return fmt.Errorf("catalog model %s: media_resolution %q must be low, medium or high", e.ID, e.MediaResolution)
	case e.MediaResolution != "" && vendor != VendorGemini:
		return fmt.Errorf("catalog model %s: media_resolution is Gemini's; the %s rule is vision_detail", e.ID, vendor)
	}
	e.Vendor, e.Name = vendor, name
	if vendor == VendorOpenAI && e.VisionDetail == "" {
		// The API's own default, said out loud.
		e.VisionDetail = "auto"
	}
	if e.DisplayName == "" {
		e.DisplayName = name
	}
	if why := c.configured[vendor]; why != "" {
		e.Available = false
		e.Note = why
	} else {
		e.Available = true
	}
	return nil
}

// pickDefault returns want when set, else the first available real model,
// else the replay demo.
func (c *Catalog) pickDefault(want string) (string, error) {
	if want != "" {
		if _, err := c.Lookup(want); err != nil {
			return "", fmt.Errorf("NEXUS_DEFAULT_MODEL: %w", err)
		}
		return want, nil
	}
	for _, m := range c.Models {
		if m.Available && m.Vendor != VendorReplay {
			return m.ID, nil
		}
	}
	return "replay/demo", nil
}

// Lookup finds a model by id. Any openai-compat model is accepted, since the
// compatible server decides what it serves.
func (c *Catalog) Lookup(id string) (*ModelEntry, error) {
	if m, ok := c.byID[id]; ok {
		return m, nil
	}
	vendor, name, ok := strings.Cut(id, "/")
	if ok && name != "" && vendor == VendorCompat {
		e := compatDefaults()
		e.ID = id
		if err := c.complete(&e); err != nil {
			return nil, err
		}
		return &e, nil
	}
	if ok && slices.Contains(vendors(), vendor) {
		return nil, fmt.Errorf("unknown model %q: the %s models in the catalog are %s (add others with NEXUS_MODEL_CATALOG)",
			id, vendor, strings.Join(c.idsOf(vendor), ", "))
	}
	return nil, fmt.Errorf("unknown model %q: a model id is vendor/model with vendor one of %s", id, strings.Join(vendors(), ", "))
}

func (c *Catalog) idsOf(vendor string) []string {
	var ids []string
	for _, m := range c.Models {
		if m.Vendor == vendor {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// Infos renders the catalog for ListModels.
func (c *Catalog) Infos() []*modelv1.ModelInfo {
	out := make([]*modelv1.ModelInfo, 0, len(c.Models))
	for _, m := range c.Models {
		out = append(out, &modelv1.ModelInfo{
			Id: m.ID, Vendor: vendorOf(m.Vendor), DisplayName: m.DisplayName, ContextWindow: m.ContextWindow,
			MaxOutputTokens: m.MaxOutputTokens, VisionMaxPx: m.VisionMaxPx, VisionMaxPixels: m.VisionMaxPixels,
			VisionMaxShortPx: m.VisionMaxShortPx, VisionPatchPx: m.VisionPatchPx, VisionMaxPatches: m.VisionMaxPatches,
			Pricing:  &modelv1.Pricing{Input: m.Pricing.Input, Output: m.Pricing.Output, CacheRead: m.Pricing.CacheRead, CacheWrite: m.Pricing.CacheWrite},
			Features: m.Features, Available: m.Available, Note: m.Note,
		})
	}
	return out
}

// readCatalogFile reads {"models": [...]} from JSON or YAML (JSON is YAML).
func readCatalogFile(path string) ([]ModelEntry, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read NEXUS_MODEL_CATALOG: %w", err)
	}
	var file struct {
		Models []ModelEntry `yaml:"models"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("parse NEXUS_MODEL_CATALOG %s: %w", path, err)
	}
	return file.Models, nil
}
