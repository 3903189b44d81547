// Package revit holds the Revit host: the pyRevit extension that is the
// add-in (Nexus.extension: the ribbon panel and the Revit adapter on the host
// kit) and a double of the Revit API (double/) under which the add-in's
// runtime runs with plain CPython where Revit cannot. Both are embedded, so a
// binary built from here writes the runtime anywhere (nexus host revit
// --double) and packages the extension (make revit-addin).
package revit

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"nexus.local/hosts/hostkit"
)

// ExtensionDir is the pyRevit extension's folder, in the repository and in
// the zip.
const ExtensionDir = "Nexus.extension"

// DoubleEntry is the module python3 -m runs to start the runtime on the
// double.
const DoubleEntry = "nexus_on_double"

// extension is the add-in as it installs; double is the Revit API double and
// its entry. The patterns name source files, so a __pycache__ left by a
// local run stays out.
//
//go:embed Nexus.extension/extension.json Nexus.extension/Nexus.tab/Nexus.panel/*/script.py
//go:embed Nexus.extension/Nexus.tab/Nexus.panel/*/bundle.yaml Nexus.extension/Nexus.tab/Nexus.panel/*/icon.png Nexus.extension/lib/nexus_revit/*.py
var extension embed.FS

//go:embed double/nexus_on_double.py double/clr.py double/revitdouble/*.py
//go:embed double/Autodesk/*.py double/Autodesk/Revit/*.py double/Autodesk/Revit/*/*.py double/Autodesk/Revit/*/*/*.py
var double embed.FS

// versionPattern finds the add-in's version in its adapter.
const versionPattern = `(?m)^RUNTIME_VERSION = "([0-9A-Za-z.+-]+)"$`

// Version answers the add-in's version, as its adapter states it.
func Version() (string, error) {
	src, err := extension.ReadFile(ExtensionDir + "/lib/nexus_revit/adapter.py")
	if err != nil {
		return "", fmt.Errorf("read adapter: %w", err)
	}
	m := regexp.MustCompile(versionPattern).FindSubmatch(src)
	if m == nil {
		return "", fmt.Errorf("adapter.py states no RUNTIME_VERSION")
	}
	return string(m[1]), nil
}

// AddinFile is one file of the installed extension: its path inside the zip
// (and under the pyRevit extensions folder) and its bytes.
type AddinFile struct {
	Path string
	Data []byte
}

// AddinFiles answers the extension as it installs: the folder's files and
// the host kit in its lib, where pyRevit puts them on sys.path.
func AddinFiles() ([]AddinFile, error) {
	var out []AddinFile
	err := fs.WalkDir(extension, ExtensionDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := extension.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		out = append(out, AddinFile{Path: p, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	kit, err := kitFiles()
	if err != nil {
		return nil, err
	}
	return append(out, kit...), nil
}

// kitFiles answers the host kit as it sits in the extension's lib, read
// back from the kit's own writer so the add-in ships exactly what every
// runtime runs.
func kitFiles() ([]AddinFile, error) {
	tmp, err := os.MkdirTemp("", "nexus-hostkit-")
	if err != nil {
		return nil, fmt.Errorf("host kit: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := hostkit.Write(tmp); err != nil {
		return nil, fmt.Errorf("write host kit: %w", err)
	}
	entries, err := os.ReadDir(filepath.Join(tmp, hostkit.PackageName))
	if err != nil {
		return nil, fmt.Errorf("host kit: %w", err)
	}
	var out []AddinFile
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(tmp, hostkit.PackageName, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("host kit: %w", err)
		}
		out = append(out, AddinFile{Path: path.Join(ExtensionDir, "lib", hostkit.PackageName, e.Name()), Data: data})
	}
	return out, nil
}

// WriteRuntime writes what python3 -m DoubleEntry needs into dir (the
// double, the add-in's lib with the host kit) and answers the PYTHONPATH
// that finds them.
func WriteRuntime(dir string) (string, error) {
	files, err := AddinFiles()
	if err != nil {
		return "", err
	}
	lib := filepath.Join(dir, "lib")
	for _, f := range files {
		rel, ok := strings.CutPrefix(f.Path, ExtensionDir+"/lib/")
		if !ok {
			continue
		}
		if err := writeFile(filepath.Join(lib, filepath.FromSlash(rel)), f.Data); err != nil {
			return "", err
		}
	}
	doubleDir := filepath.Join(dir, "double")
	err = fs.WalkDir(double, "double", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := double.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		return writeFile(filepath.Join(doubleDir, filepath.FromSlash(strings.TrimPrefix(p, "double/"))), data)
	})
	if err != nil {
		return "", fmt.Errorf("write the revit double: %w", err)
	}
	return lib + string(os.PathListSeparator) + doubleDir, nil
}

func writeFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(p), err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
