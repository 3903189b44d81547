// Package corpus holds the FreeCAD runtime to its verification promises on
// scripts nobody on this project wrote: FreeCAD's own Arch and Draft test
// suites, converted at test time from the installed FreeCAD (convert.py) into
// plain scripts. Each runs through /v1/execute with the real epilogue, whole
// on an empty document and split (its first part committed, the rest
// measured against a document that already holds objects), and is scored
// against an independent dump of every object (dump.py) taken before and
// after by a separate read-only script.
package corpus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Sources are the suites the corpus is made of, relative to FreeCAD's Mod
// folder.
const Sources = "Arch/TestArch.py Draft/drafttests/test_creation.py Draft/drafttests/test_modification.py"

// RaiseLine is the statement the corpus adds to make a script fail on purpose.
const RaiseLine = `raise RuntimeError("corpus: raised on purpose")`

// carryOut ends a split's first part: it keeps the part's names for the
// second, which runs in a namespace of its own. Document objects are kept by
// name and looked up again, so the second part reaches them through the
// document it is measured against.
// An object the first part deleted is carried as None.
const carryOut = `import sys as _corpus_sys
def _corpus_keep(v):
    if not isinstance(v, App.DocumentObject):
        return ("val", v)
    try:
        return ("obj", v.Name)
    except Exception:
        return ("val", None)
_corpus_sys.corpus_carry = {k: _corpus_keep(v)
    for k, v in list(globals().items()) if not k.startswith("_") and k not in ("App", "FreeCAD", "doc", "nexus_changes")}`

// carryIn starts a split's second part with the first part's names.
const carryIn = `import sys as _corpus_sys
globals().update({k: (App.ActiveDocument.getObject(v) if kind == "obj" else v)
    for k, (kind, v) in _corpus_sys.corpus_carry.items()})`

// Script is one test method as a plain script.
type Script struct {
	// Name is the suite file and the method, e.g. "TestArch.testWall".
	Name string `json:"name"`
	// Prelude holds the suite's imports and the module-level names it uses.
	Prelude string `json:"prelude"`
	// Statements are the converted body's top-level statements.
	Statements []string `json:"statements"`
	// Splits are the boundaries where a split run commits the first part.
	Splits []int `json:"splits"`
}

// Skipped is a test method the converter left out, and why.
type Skipped struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// Corpus is what convert.py made of the installed suites.
type Corpus struct {
	Scripts []Script  `json:"scripts"`
	Skipped []Skipped `json:"skipped"`
}

// Convert runs convert.py (in dir) with python over the suites under modDir.
func Convert(ctx context.Context, python, dir, modDir string) (Corpus, error) {
	args := []string{filepath.Join(dir, "convert.py")}
	for _, s := range strings.Fields(Sources) {
		path := filepath.Join(modDir, filepath.FromSlash(s))
		if _, err := os.Stat(path); err != nil {
			return Corpus{}, fmt.Errorf("find FreeCAD's suite: %w", err)
		}
		args = append(args, path)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Corpus{}, fmt.Errorf("convert the suites: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var c Corpus
	if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
		return Corpus{}, fmt.Errorf("read the converted suites: %w", err)
	}
	if len(c.Scripts) == 0 {
		return Corpus{}, fmt.Errorf("convert the suites: no scripts in %s", modDir)
	}
	return c, nil
}

// Case is one measured run of a script: whole, or the part after a split.
type Case struct {
	// Name is the script's, with "@k" for a split at boundary k.
	Name string
	// Setup is the code committed before the measured part, or "".
	Setup string
	// Measured are the statements scored.
	Measured []string
	prelude  string
	head     string
}

// Cases answers a script's plain case and one case per split point.
func (s Script) Cases() []Case {
	out := []Case{{Name: s.Name, Measured: s.Statements, prelude: s.Prelude}}
	for _, k := range s.Splits {
		if k <= 0 || k >= len(s.Statements) {
			continue
		}
		setup := join(s.Prelude, strings.Join(s.Statements[:k], "\n"), carryOut)
		out = append(out, Case{Name: fmt.Sprintf("%s@%d", s.Name, k), Setup: setup, Measured: s.Statements[k:],
			prelude: s.Prelude, head: carryIn})
	}
	return out
}

// Split says whether the case measures the second part of a split script.
func (c Case) Split() bool { return c.Setup != "" }

// Middle is the boundary where a raise in the middle goes, or -1 when the
// middle is the end.
func (c Case) Middle() int {
	m := (len(c.Measured) + 1) / 2
	if m >= len(c.Measured) {
		return -1
	}
	return m
}

// Code answers the measured part as one script; with raiseAt >= 0 a raise
// is inserted before statement raiseAt (len(Measured) for the end), and its
// line in the script is answered too.
func (c Case) Code(raiseAt int) (string, int) {
	head := join(c.prelude, c.head)
	if raiseAt < 0 {
		return join(head, strings.Join(c.Measured, "\n")), 0
	}
	before := join(head, strings.Join(c.Measured[:raiseAt], "\n"))
	line := strings.Count(before, "\n") + 2
	if before == "" {
		line = 1
	}
	return join(before, RaiseLine, strings.Join(c.Measured[raiseAt:], "\n")), line
}

// join joins the non-empty parts with newlines.
func join(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "\n")
}
