package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDevDocumentLivesInTheDataFolder checks where nexus dev keeps its
// document without --document: in the data folder, not a temporary one, and
// with --no-save a document that does not exist yet is not made up.
func TestDevDocumentLivesInTheDataFolder(t *testing.T) {
	data := t.TempDir()
	t.Setenv("NEXUS_DATA_DIR", data)
	want := filepath.Join(data, "freecad", devDocumentName)
	if got, err := devDocument(true); err != nil || got != "" {
		t.Fatalf("--no-save without a document: %q, %v; want a new one saved nowhere", got, err)
	}
	got, err := devDocument(false)
	if err != nil || got != want {
		t.Fatalf("devDocument = %q, %v; want %q", got, err, want)
	}
	if info, err := os.Stat(filepath.Dir(want)); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf("document folder: %v, %v; want a folder of mode 700", info, err)
	}
	if err := os.WriteFile(want, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := devDocument(true); err != nil || got != want {
		t.Fatalf("--no-save with the document there: %q, %v; want it opened", got, err)
	}
}
