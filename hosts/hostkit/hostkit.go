// Package hostkit embeds the host kit, the Python package every Nexus host
// runtime shares (the loopback server, auth and limits, the executor, the
// call-id ledger, the wire format, the adapter interface), so launchers can
// write it beside a host's adapter from any directory.
package hostkit

import (
	"embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// PackageName is the folder the kit is written to; adapters import it by
// this name.
const PackageName = "hostkit"

// files is the kit's Python. The pattern names .py files so that
// __init__.py comes along and a __pycache__ left by a local run does not.
//
//go:embed *.py
var files embed.FS

// Write writes the kit as dir/hostkit, a Python package next to which an
// adapter can import it.
func Write(dir string) error {
	return WriteFS(files, ".", filepath.Join(dir, PackageName))
}

// WriteFS copies the regular files of folder in fsys to dir (created with
// mode 700, files 600), not descending into subfolders.
func WriteFS(fsys embed.FS, folder, dir string) error {
	entries, err := fsys.ReadDir(folder)
	if err != nil {
		return fmt.Errorf("list %s: %w", folder, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := fsys.ReadFile(path.Join(folder, e.Name()))
		if err != nil {
			return fmt.Errorf("read %s: %w", e.Name(), err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", e.Name(), err)
		}
	}
	return nil
}
