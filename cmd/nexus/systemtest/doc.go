// Package systemtest runs the nexus binary from outside, as a person or a
// deployment does: it builds cmd/nexus, starts nexus dev or each service as
// its own process, links real FreeCAD and the Revit double as host runtimes,
// pairs them by code, drives the web UI in Chromium and speaks MCP, and
// checks what only the whole system can show. It holds tests only; the
// command's own functions are tested beside them in package main.
package systemtest
