package revit

import (
	"archive/zip"
	"fmt"
	"io"
	"time"
)

// WriteAddinZip writes the extension as a zip a person unpacks into pyRevit's
// extensions folder: Nexus.extension/ with the host kit in its lib.
func WriteAddinZip(w io.Writer) error {
	files, err := AddinFiles()
	if err != nil {
		return err
	}
	// Every entry has the same time, so the same sources make the same zip.
	stamp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	zw := zip.NewWriter(w)
	for _, f := range files {
		hdr := &zip.FileHeader{Name: f.Path, Method: zip.Deflate, Modified: stamp}
		hdr.SetMode(0o644)
		fw, err := zw.CreateHeader(hdr)
		if err != nil {
			return fmt.Errorf("zip %s: %w", f.Path, err)
		}
		if _, err := fw.Write(f.Data); err != nil {
			return fmt.Errorf("zip %s: %w", f.Path, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("close zip: %w", err)
	}
	return nil
}
