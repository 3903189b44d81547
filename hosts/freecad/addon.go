package freecad

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"nexus.local/hosts/hostkit"
)

// AddonName is the add-on's folder in FreeCAD's Mod folder.
const AddonName = "Nexus"

// addonRoot is the add-on's folder in this package.
const addonRoot = "addon/Nexus"

// addonLib is the folder beside the add-on's files that holds the host kit
// and the adapter (nexus_addon/paths.py looks there first).
const addonLib = "lib"

// addonFiles is the add-on as FreeCAD's Addon Manager lays it out: its
// package.xml, InitGui.py, its Python package and icons.
//
//go:embed addon/Nexus/package.xml addon/Nexus/InitGui.py addon/Nexus/nexus_addon/*.py addon/Nexus/icons/*.svg
var addonFiles embed.FS

// NotAddonError means the Mod folder holds a folder under the add-on's name
// that is not the add-on, which an install must not replace.
type NotAddonError struct{ Dir string }

func (e *NotAddonError) Error() string {
	return fmt.Sprintf("%s is not the Nexus add-on (its package.xml does not name NexusWorkbench); move it away first", e.Dir)
}

// WriteAddon installs the add-on into modDir (FreeCAD's Mod folder) as
// modDir/Nexus, with the host kit and the adapter in its lib folder, the same
// packages the runtime Nexus launches runs on; an earlier install is
// replaced whole. It answers the add-on's folder.
func WriteAddon(modDir string) (string, error) {
	dir := filepath.Join(modDir, AddonName)
	if err := removeOldAddon(dir); err != nil {
		return "", err
	}
	err := fs.WalkDir(addonFiles, addonRoot, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(addonRoot, filepath.FromSlash(name))
		target := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := addonFiles.ReadFile(name)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("write the add-on into %s: %w", dir, err)
	}
	lib := filepath.Join(dir, addonLib)
	if err := hostkit.Write(lib); err != nil {
		return "", fmt.Errorf("write the host kit into %s: %w", lib, err)
	}
	if err := hostkit.WriteFS(files, adapterPackage, filepath.Join(lib, adapterPackage)); err != nil {
		return "", fmt.Errorf("write the freecad adapter into %s: %w", lib, err)
	}
	return dir, nil
}

// removeOldAddon removes an earlier install at dir; a folder there whose
// package.xml is not the add-on's is refused.
func removeOldAddon(dir string) error {
	got, err := os.ReadFile(filepath.Join(dir, "package.xml"))
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return &NotAddonError{Dir: dir}
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Join(dir, "package.xml"), err)
	}
	ours, err := addonFiles.ReadFile(path.Join(addonRoot, "package.xml"))
	if err != nil {
		return err
	}
	if !bytes.Contains(got, []byte("<classname>NexusWorkbench</classname>")) || !bytes.Contains(ours, []byte("<classname>NexusWorkbench</classname>")) {
		return &NotAddonError{Dir: dir}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the earlier add-on at %s: %w", dir, err)
	}
	return nil
}
