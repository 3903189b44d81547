package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// unsafeName matches what may not appear in a file name built from ids.
const unsafeName = `[^A-Za-z0-9._-]+`

// saveView writes one rendered view of a tool result into dir and answers
// its path. Names carry the call id, so every view of a session is kept.
func saveView(dir, toolCallID string, n int, img *hostv1.Image) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create views folder: %w", err)
	}
	ext := ".png"
	if img.GetMimeType() == "image/jpeg" {
		ext = ".jpg"
	}
	clean := regexp.MustCompile(unsafeName)
	name := fmt.Sprintf("%s-%d-%s%s", clean.ReplaceAllString(toolCallID, "_"), n, clean.ReplaceAllString(img.GetView(), "_"), ext)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, img.GetData(), 0o644); err != nil {
		return "", fmt.Errorf("save view: %w", err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path, nil
}
