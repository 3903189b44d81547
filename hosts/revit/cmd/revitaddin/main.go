// Command revitaddin builds the Revit add-in's zip (make revit-addin):
// Nexus-revit-addin-<version>.zip in the folder -o names.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"nexus.local/hosts/revit"
)

func main() {
	out := flag.String("o", "dist", "folder to write the zip into")
	flag.Parse()
	if err := build(*out); err != nil {
		fmt.Fprintln(os.Stderr, "revit add-in:", err)
		os.Exit(1)
	}
}

func build(dir string) error {
	version, err := revit.Version()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	path := filepath.Join(dir, "Nexus-revit-addin-"+version+".zip")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create zip: %w", err)
	}
	if err := revit.WriteAddinZip(f); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write zip: %w", err)
	}
	fmt.Println(path)
	return nil
}
