package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"nexus.local/hosts/freecad"
)

// userDataProbe prints FreeCAD's user data folder, whose Mod folder FreeCAD
// loads add-ons from (its place differs between versions and systems).
const userDataProbe = "import FreeCAD; print('NEXUS-USER-DATA=' + FreeCAD.getUserAppDataDir())"

// freecadModDir asks FreeCAD (freecadcmd) where its Mod folder is.
func freecadModDir(ctx context.Context, freecadcmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, freecadcmd, "-c", userDataProbe).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if dir, ok := strings.CutPrefix(strings.TrimSpace(line), "NEXUS-USER-DATA="); ok && dir != "" {
			return filepath.Join(dir, "Mod"), nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("ask %s for its user data folder (NEXUS_FREECADCMD names another; --mod-dir DIR skips asking): %w", freecadcmd, err)
	}
	return "", fmt.Errorf("%s did not say where its user data folder is (--mod-dir DIR names the Mod folder): %s", freecadcmd, strings.TrimSpace(string(out)))
}

// installAddon copies the add-on into FreeCAD's Mod folder (modDir, or the
// one FreeCAD names) and says where and what next.
func installAddon(ctx context.Context, stdout io.Writer, modDir, freecadcmd string) error {
	if modDir == "" {
		d, err := freecadModDir(ctx, freecadcmd)
		if err != nil {
			return err
		}
		modDir = d
	}
	dir, err := freecad.WriteAddon(modDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "installed the Nexus add-on in %s\n", dir)
	fmt.Fprintln(stdout, "restart FreeCAD, choose the Nexus workbench and click Connect to Nexus (it asks for the Nexus URL once)")
	return nil
}
