// Package conformance holds the host runtime contract's conformance suite
// (proto/nexus/host/v1: JSON over loopback HTTP), run against every host
// runtime: FreeCAD's on real FreeCAD and Revit's on the Revit API double. It
// speaks the wire itself, so it tests what any courier sees.
package conformance
