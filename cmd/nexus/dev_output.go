package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"nexus.local/hosts/freecad/launcher"
	"nexus.local/platform/config"
	"nexus.local/platform/sqlstore"
)

// devLogName is nexus dev's log in its data folder.
const devLogName = "nexus.log"

// devDemoPrompt is the one prompt the demo model has recorded turns for.
const devDemoPrompt = "Build a small room: four walls on a level, with a door and a window."

// devDataDir is nexus dev's data folder: NEXUS_DATA_DIR, else the default.
func devDataDir() (string, error) {
	if dir := os.Getenv("NEXUS_DATA_DIR"); dir != "" {
		return dir, nil
	}
	return sqlstore.DefaultDataDir()
}

// devLogPath is where nexus dev writes its logs and its runtime's lines:
// NEXUS_LOG_FILE, else nexus.log in the data folder (created).
func devLogPath(l config.Lookuper) (string, error) {
	if p, ok := l.Lookup("NEXUS_LOG_FILE"); ok && p != "" {
		return p, nil
	}
	dir, err := devDataDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the data folder NEXUS_DATA_DIR=%s: %w", dir, err)
	}
	return filepath.Join(dir, devLogName), nil
}

// devNext is the one thing to do next, for the model and host that run.
func devNext(demo, noHost bool) string {
	switch {
	case noHost:
		return "open that URL; no FreeCAD runs here (NEXUS_DEV_NO_HOST), so connect a host runtime to it first (nexus host freecad --connect URL)"
	case demo:
		return fmt.Sprintf("open it and ask %q, the one thing the demo model does "+
			"(ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY gives you a real model)", devDemoPrompt)
	}
	return "open it and say what to do in the FreeCAD document (or: nexus run \"...\" in another terminal)"
}

// devTerminal says how to reach this nexus dev from another terminal: this
// very binary, as the person types it from the folder they started in
// (./bin/nexus after make run), since it may be on no PATH.
func devTerminal() string {
	exe, err := os.Executable()
	if err != nil {
		return "nexus"
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, exe); err == nil && filepath.IsLocal(rel) {
			exe = "./" + rel
		}
	}
	return fmt.Sprintf("in another terminal, %s run \"...\" works on the same sessions (%s sessions lists them)", exe, exe)
}

// devData says where what lasts is kept: the database, the document and the
// log, each relative to the data folder when it is inside it.
func devData(db *sqlstore.DB, rt *launcher.Runtime, logPath string) string {
	dir := ""
	if db.Path() != "" {
		dir = filepath.Dir(db.Path())
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(dir, p); dir != "" && err == nil && filepath.IsLocal(r) {
			return r
		}
		return p
	}
	parts := []string{"sessions, run history and audit log in " + rel(db.Path())}
	if db.Path() == "" {
		parts[0] = "sessions, run history and audit log in the " + db.Where()
	}
	switch {
	case rt == nil:
	case rt.SavesTo() != "":
		parts = append(parts, "the FreeCAD document "+rel(rt.SavesTo()))
	default:
		parts = append(parts, "the FreeCAD document is saved to no file (--document FILE saves it)")
	}
	parts = append(parts, "the log "+rel(logPath))
	if dir == "" {
		return strings.Join(parts, "; ")
	}
	return dir + " (" + strings.Join(parts, "; ") + "; NEXUS_DATA_DIR moves it)"
}
