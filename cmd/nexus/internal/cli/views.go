package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// unsafeName matches what may not appear in a file name built from a view's name.
const unsafeName = `[^A-Za-z0-9._-]+`

// maxViews bounds the numbered views one folder holds.
const maxViews = 100000

// saveView writes one rendered view into dir as kind-N-view.png, N the first
// number not taken there, so every view of a session is kept, and answers
// its path. The name carries no call id: it is for a person.
func saveView(dir, kind string, img *hostv1.Image) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create views folder: %w", err)
	}
	ext := ".png"
	if img.GetMimeType() == "image/jpeg" {
		ext = ".jpg"
	}
	view := regexp.MustCompile(unsafeName).ReplaceAllString(img.GetView(), "_")
	for n := 1; n <= maxViews; n++ {
		path := filepath.Join(dir, fmt.Sprintf("%s-%d-%s%s", kind, n, view, ext))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if os.IsExist(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("save view: %w", err)
		}
		_, werr := f.Write(img.GetData())
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", fmt.Errorf("save view: %w", werr)
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return path, nil
	}
	return "", fmt.Errorf("save view: %s already holds %d %s views", dir, maxViews, view)
}
