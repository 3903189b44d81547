// Package freecad holds the FreeCAD host runtime, a thin add-in written in
// Python (nexus_runtime.py), and embeds it so Go programs can launch it from
// any directory (services/capability/hostrt does).
package freecad

import _ "embed"

// runtimeScript is the add-in itself.
//
//go:embed nexus_runtime.py
var runtimeScript []byte

// Script returns a copy of the add-in's source.
func Script() []byte { return append([]byte(nil), runtimeScript...) }
