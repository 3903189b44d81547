// Package revit holds the Revit host: the pyRevit extension that is the
// add-in (Nexus.extension), the Revit adapter on the host kit, and a double of
// the Revit API (double/) that lets the add-in run under plain CPython where
// Revit cannot. Both are embedded so a binary built from here can start the
// add-in's runtime on the double from any directory.
package revit
