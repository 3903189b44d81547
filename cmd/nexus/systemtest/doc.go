// Package systemtest runs the nexus binary from outside, as a person or a
// deployment does: it builds cmd/nexus, starts nexus dev or each service as
// its own process, links real FreeCAD and the Revit double as host runtimes,
// pairs them by code, drives the web UI in Chromium and speaks MCP, and
// checks what only the whole system can show. It holds tests only; the
// command's own functions are tested beside them in package main.
//
// What starts things is written once, in the harness files, so that a test
// reads as what it shows: harness_nexus_test.go builds nexus and starts
// nexus dev and the services; harness_api_test.go speaks to the gateway
// (JSON calls, pairing, waits, a run's events); harness_runtime_test.go
// starts and links host runtimes (FreeCAD, the Revit double) and reads their
// documents; harness_host_test.go starts nexus host freecad on a document
// and as an MCP server on stdio; harness_browser_test.go starts nexus dev for
// Chromium and runs the web UI's end-to-end files.
package systemtest
