package modelrouter

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

func smallPNG(t *testing.T, n int) *modelv1.ImageBlock {
	t.Helper()
	var buf bytes.Buffer
	src := image.NewGray(image.Rect(0, 0, 8+n, 8))
	if err := png.Encode(&buf, src); err != nil {
		t.Fatal(err)
	}
	return &modelv1.ImageBlock{MimeType: "image/png", Data: buf.Bytes()}
}

// transcript is results calls, each answered with perResult images.
func transcript(t *testing.T, results, perResult int) []*modelv1.Message {
	msgs := []*modelv1.Message{{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{
		{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: "build it"}}},
		{Block: &modelv1.ContentBlock_Image{Image: smallPNG(t, 0)}},
	}}}
	for i := range results {
		id := fmt.Sprintf("toolu_%d", i)
		var imgs []*modelv1.ImageBlock
		for k := range perResult {
			imgs = append(imgs, smallPNG(t, i*perResult+k+1))
		}
		msgs = append(msgs,
			&modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{
				{Block: &modelv1.ContentBlock_ToolUse{ToolUse: &modelv1.ToolUseBlock{Id: id, Name: "execute_task_automation", InputJson: "{}"}}}}},
			&modelv1.Message{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{
				{Block: &modelv1.ContentBlock_ToolResult{ToolResult: &modelv1.ToolResultBlock{ToolUseId: id, Text: "Transaction committed.", Images: imgs}}}}})
	}
	return msgs
}

func TestImageHistory(t *testing.T) {
	entry := &ModelEntry{ID: "anthropic/claude-sonnet-4-5", Vendor: VendorAnthropic, VisionMaxPx: anthropicMaxPx, VisionMaxPixels: anthropicMaxPixels}
	tests := []struct {
		name                  string
		results, perResult    int
		keep                  int
		wantViews, wantNotes  int
		wantNewestWidthsFirst []int
	}{
		{name: "twenty results of two views keep the newest two", results: 20, perResult: 2, keep: 2, wantViews: 2, wantNotes: 19, wantNewestWidthsFirst: []int{8 + 40, 8 + 39}},
		{name: "a setting of three splits a result", results: 5, perResult: 2, keep: 3, wantViews: 3, wantNotes: 4, wantNewestWidthsFirst: []int{8 + 10, 8 + 9, 8 + 8}},
		{name: "fewer views than the setting are all kept", results: 1, perResult: 1, keep: 2, wantViews: 1, wantNotes: 0, wantNewestWidthsFirst: []int{9}},
		{name: "zero keeps none", results: 3, perResult: 1, keep: 0, wantViews: 0, wantNotes: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := transcript(t, tt.results, tt.perResult)
			out, err := prepareMessages(in, entry, tt.keep, scaleImage)
			if err != nil {
				t.Fatal(err)
			}
			views, notes, userImages := 0, 0, 0
			var widths []int
			for i := len(out) - 1; i >= 0; i-- {
				for _, b := range out[i].GetContent() {
					if b.GetImage() != nil {
						userImages++
					}
					tr := b.GetToolResult()
					if tr == nil {
						continue
					}
					if strings.Contains(tr.GetText(), "omitted: only the newest") {
						notes++
					}
					imgs := tr.GetImages()
					for k := len(imgs) - 1; k >= 0; k-- {
						cfg, _, err := image.DecodeConfig(bytes.NewReader(imgs[k].GetData()))
						if err != nil {
							t.Fatal(err)
						}
						widths = append(widths, cfg.Width)
					}
					views += len(imgs)
				}
			}
			if views != tt.wantViews || notes != tt.wantNotes || userImages != 1 {
				t.Fatalf("%d views, %d notes, %d of the person's images; want %d, %d, 1", views, notes, userImages, tt.wantViews, tt.wantNotes)
			}
			if fmt.Sprint(widths) != fmt.Sprint(tt.wantNewestWidthsFirst) && len(tt.wantNewestWidthsFirst) > 0 {
				t.Errorf("kept views of widths %v, want the newest %v", widths, tt.wantNewestWidthsFirst)
			}
			if got := len(in[len(in)-1].GetContent()[0].GetToolResult().GetImages()); got != tt.perResult {
				t.Errorf("the caller's transcript lost images: %d left of %d", got, tt.perResult)
			}
		})
	}
}
