package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// devDocumentName is the document nexus dev keeps in its data folder when no
// --document is given, so what a person builds outlives the process.
const devDocumentName = "Nexus.FCStd"

// devDocument answers the data folder's document (NEXUS_DATA_DIR, else the
// default data folder), creating the folder; with noSave, only a document
// that exists already is opened, and "" opens a new one saved nowhere.
func devDocument(noSave bool) (string, error) {
	dir, err := devDataDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "freecad", devDocumentName)
	if noSave {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create the document folder: %w", err)
	}
	return path, nil
}
