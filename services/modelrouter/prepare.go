package modelrouter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"strings"

	"golang.org/x/image/draw"
	"google.golang.org/protobuf/proto"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/imagetype"
)

// prepareMessages copies the transcript into what the target model may see:
// reasoning made by another vendor or model is dropped (its signatures mean
// nothing elsewhere), tool calls lose their foreign signatures but keep their
// ids so every call still pairs with its result, and images are scaled to the
// model's vision limit. Only the newest keepViews rendered views (tool-result
// images) travel in full; older ones become a short note, so a request does
// not grow with the number of views a session made. The person's own images
// are always sent.
func prepareMessages(in []*modelv1.Message, m *ModelEntry, keepViews int, scale func(*modelv1.ImageBlock, visionLimit) (*modelv1.ImageBlock, error)) ([]*modelv1.Message, error) {
	limit := limitOf(m)
	// Count the views from the newest back: each result keeps what is left
	// of keepViews, its newest images first.
	keep := map[[2]int]int{}
	seen := 0
	for i := len(in) - 1; i >= 0; i-- {
		blocks := in[i].GetContent()
		for j := len(blocks) - 1; j >= 0; j-- {
			if tr := blocks[j].GetToolResult(); tr != nil && len(tr.GetImages()) > 0 {
				n := len(tr.GetImages())
				keep[[2]int{i, j}] = max(0, min(n, keepViews-seen))
				seen += n
			}
		}
	}
	out := make([]*modelv1.Message, 0, len(in))
	for i, msg := range in {
		if msg.GetRole() != modelv1.Role_ROLE_USER && msg.GetRole() != modelv1.Role_ROLE_ASSISTANT {
			return nil, fmt.Errorf("message %d: role must be ROLE_USER or ROLE_ASSISTANT, got %s", i, msg.GetRole())
		}
		c := &modelv1.Message{Role: msg.GetRole()}
		for j, b := range msg.GetContent() {
			b = proto.Clone(b).(*modelv1.ContentBlock)
			switch v := b.GetBlock().(type) {
			case *modelv1.ContentBlock_Thinking:
				if !sameOrigin(v.Thinking.GetVendor(), v.Thinking.GetModel(), m) {
					continue
				}
			case *modelv1.ContentBlock_ToolUse:
				tu := v.ToolUse
				if !sameOrigin(tu.GetVendor(), tu.GetModel(), m) {
					tu.Signature, tu.ItemId = "", ""
				}
				if strings.TrimSpace(tu.GetInputJson()) == "" {
					tu.InputJson = "{}"
				}
				if !json.Valid([]byte(tu.GetInputJson())) {
					return nil, fmt.Errorf("message %d block %d: tool_use %s input_json is not valid JSON", i, j, tu.GetId())
				}
			case *modelv1.ContentBlock_Image:
				img, err := scale(v.Image, limit)
				if err != nil {
					return nil, fmt.Errorf("message %d block %d: %w", i, j, err)
				}
				v.Image = img
			case *modelv1.ContentBlock_ToolResult:
				if n, k := len(v.ToolResult.GetImages()), keep[[2]int{i, j}]; k < n {
					v.ToolResult.Images = v.ToolResult.Images[n-k:]
					v.ToolResult.Text += fmt.Sprintf("\n\n[%d earlier rendered view(s) of this result omitted: only the newest %d view(s) of the conversation are sent in full.]", n-k, keepViews)
				}
				for k, im := range v.ToolResult.GetImages() {
					img, err := scale(im, limit)
					if err != nil {
						return nil, fmt.Errorf("message %d block %d image %d: %w", i, j, k, err)
					}
					v.ToolResult.Images[k] = img
				}
			case *modelv1.ContentBlock_Compaction:
				// An opaque payload means nothing to another vendor; without a
				// summary there is nothing left to send.
				if v.Compaction.GetVendor() != m.Vendor && v.Compaction.GetSummary() == "" {
					continue
				}
			case *modelv1.ContentBlock_Text:
			default:
				return nil, fmt.Errorf("message %d block %d: empty content block", i, j)
			}
			c.Content = append(c.Content, b)
		}
		if len(c.Content) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// sameOrigin reports whether a block made by vendor/model may be echoed to m.
func sameOrigin(vendor, model string, m *ModelEntry) bool {
	return vendor == m.Vendor && model == m.ID
}

// maxImageBytes bounds one decoded input image, to refuse absurd payloads early.
const maxImageBytes = 20 << 20

// scaleImage shrinks img to fit the limit (longest side and area), keeping
// its format. A model without vision (maxPx 0) gets the image unchanged; the
// vendor decides what to do with it.
func scaleImage(img *modelv1.ImageBlock, limit visionLimit) (*modelv1.ImageBlock, error) {
	mime := img.GetMimeType()
	if err := imagetype.Check(mime); err != nil {
		return nil, err
	}
	if len(img.GetData()) > maxImageBytes {
		return nil, fmt.Errorf("image of %d bytes: the limit is %d", len(img.GetData()), maxImageBytes)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(img.GetData()))
	if err != nil {
		return nil, fmt.Errorf("decode %s image: %w", mime, err)
	}
	nw, nh, must := limit.fit(cfg.Width, cfg.Height)
	if !must {
		return img, nil
	}
	src, _, err := image.Decode(bytes.NewReader(img.GetData()))
	if err != nil {
		return nil, fmt.Errorf("decode %s image: %w", mime, err)
	}
	dst := image.NewRGBA(image.Rect(0, 0, nw, nh))
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
	var buf bytes.Buffer
	if mime == "image/jpeg" {
		err = jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 90})
	} else {
		err = png.Encode(&buf, dst)
	}
	if err != nil {
		return nil, fmt.Errorf("encode scaled image: %w", err)
	}
	return &modelv1.ImageBlock{MimeType: mime, Data: buf.Bytes()}, nil
}

// parseTools checks every tool once; adapters render the parsed schema in
// their own dialect.
func parseTools(specs []*modelv1.ToolSpec) ([]toolDef, error) {
	out := make([]toolDef, 0, len(specs))
	seen := map[string]bool{}
	for i, s := range specs {
		if s.GetName() == "" {
			return nil, fmt.Errorf("tool %d: name is empty", i)
		}
		if seen[s.GetName()] {
			return nil, fmt.Errorf("tool %s: declared twice", s.GetName())
		}
		seen[s.GetName()] = true
		raw := strings.TrimSpace(s.GetInputSchemaJson())
		if raw == "" {
			raw = `{"type":"object","properties":{}}`
		}
		// Only the type is read: decoding the whole schema into maps, on
		// every turn, was a third of the router's allocations per turn.
		var schema struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal([]byte(raw), &schema); err != nil {
			return nil, fmt.Errorf("tool %s: input_schema_json is not a JSON object: %w", s.GetName(), err)
		}
		if t, _ := schema.Type.(string); t != "object" {
			return nil, fmt.Errorf("tool %s: input_schema_json must have \"type\": \"object\"", s.GetName())
		}
		out = append(out, toolDef{name: s.GetName(), description: s.GetDescription(), schema: json.RawMessage(raw)})
	}
	return out, nil
}

// toolNames maps every tool call id in msgs to its tool name, for vendors
// that key results by name.
func toolNames(msgs []*modelv1.Message) map[string]string {
	names := map[string]string{}
	for _, m := range msgs {
		for _, b := range m.GetContent() {
			if tu := b.GetToolUse(); tu != nil {
				names[tu.GetId()] = tu.GetName()
			}
		}
	}
	return names
}

// compactionText renders a summary block as prose for vendors that take no
// opaque compaction payload.
func compactionText(c *modelv1.CompactionBlock) string {
	return "Summary of the earlier conversation:\n" + c.GetSummary()
}
