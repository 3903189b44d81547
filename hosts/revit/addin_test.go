package revit

import (
	"archive/zip"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestAddinZipMatchesTheFolder reads the zip make revit-addin ships and
// holds it to the repository: every file of Nexus.extension and of the host
// kit, byte for byte, and nothing else; and the README's install steps name
// every file.
func TestAddinZipMatchesTheFolder(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteAddinZip(&buf); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		got[f.Name] = data
	}
	want := map[string][]byte{}
	add := func(root, prefix string) {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "__pycache__" {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(p, ".pyc") || (prefix != ExtensionDir && !strings.HasSuffix(p, ".py")) ||
				(prefix != ExtensionDir && filepath.Dir(p) != root) {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			want[prefix+"/"+filepath.ToSlash(rel)] = data
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	add(ExtensionDir, ExtensionDir)
	add(filepath.Join("..", "hostkit"), ExtensionDir+"/lib/hostkit")
	if len(want) < 20 {
		t.Fatalf("the folder walk found only %d files: %v", len(want), keys(want))
	}
	if strings.Join(keys(got), "\n") != strings.Join(keys(want), "\n") {
		t.Fatalf("zip entries differ from the folder:\nzip:\n%s\nfolder:\n%s", strings.Join(keys(got), "\n"),
			strings.Join(keys(want), "\n"))
	}
	for name, data := range want {
		if !bytes.Equal(got[name], data) {
			t.Errorf("%s differs between the zip and the folder", name)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range keys(want) {
		if !strings.Contains(string(readme), name) {
			t.Errorf("README.md's install steps do not name %s", name)
		}
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
