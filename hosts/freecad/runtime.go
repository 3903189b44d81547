// Package freecad holds the FreeCAD host runtime: an adapter on the host kit
// (hosts/hostkit), written in Python (nexus_freecad/, started through
// nexus_runtime.py), and embeds it so Go programs can launch it from any
// directory.
package freecad

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"

	"nexus.local/hosts/hostkit"
)

// Entry is the file FreeCAD runs; it imports the adapter and the kit from
// the folder it sits in.
const Entry = "nexus_runtime.py"

// adapterPackage is the adapter's Python package.
const adapterPackage = "nexus_freecad"

// files is the entry and the adapter package. The patterns name .py files
// so that __init__.py comes along and a __pycache__ left by a local run
// does not.
//
//go:embed nexus_runtime.py nexus_freecad/*.py
var files embed.FS

// WriteRuntime writes the runtime into dir (the entry, the adapter package
// and the host kit beside it) and answers the path of the entry to run.
func WriteRuntime(dir string) (string, error) {
	if err := hostkit.Write(dir); err != nil {
		return "", fmt.Errorf("write host kit: %w", err)
	}
	if err := hostkit.WriteFS(files, adapterPackage, filepath.Join(dir, adapterPackage)); err != nil {
		return "", fmt.Errorf("write freecad adapter: %w", err)
	}
	entry := filepath.Join(dir, Entry)
	data, err := files.ReadFile(Entry)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", Entry, err)
	}
	if err := os.WriteFile(entry, data, 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", Entry, err)
	}
	return entry, nil
}
