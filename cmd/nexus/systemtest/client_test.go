package systemtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// clientTests is the folder of the generated TypeScript client's test:
// openapi-typescript, openapi-fetch, eventsource-parser and tsc, pinned in
// its package-lock.json (make deps runs npm ci).
const clientTests = repoRoot + "/tests/client"

// TestGeneratedClient is a client author's first hour: generate TypeScript
// types from the /openapi.json that `nexus dev` serves, type-check a client
// written against them, and run it: it streams the demo run on the real
// FreeCAD runtime (carrying the scripts itself, as the web UI does), reads a
// 404 and a 409 error body as the document's Problem with its reason, and resumes the
// stream after an event id with Last-Event-ID and with ?lastEventId=.
func TestGeneratedClient(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(clientTests)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"openapi-typescript", "tsc"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", tool)); err != nil {
			t.Fatalf("tests/client/node_modules lacks %s: run make deps (npm ci in tests/client): %v", tool, err)
		}
	}
	artifacts := repoPath(t, "test-artifacts/client")

	base, env := startDemoDev(t, buildNexus(t), "NEXUS_API_KEYS=k-client:client-user")
	st := devState(t, env)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	run := func(name string, extra []string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), extra...)
		out, err := cmd.CombinedOutput()
		t.Logf("%s:\n%s", name, out)
		if err != nil {
			t.Fatalf("%s failed: %v", name, err)
		}
	}
	generated := filepath.Join(dir, "generated", "nexus.d.ts")
	if err := os.RemoveAll(filepath.Dir(generated)); err != nil {
		t.Fatal(err)
	}
	run("generate the client types from /openapi.json", nil, "node_modules/.bin/openapi-typescript", base+"/openapi.json", "-o", generated)
	run("type-check the client", nil, "node_modules/.bin/tsc", "--noEmit", "-p", ".")
	run("compile the client", nil, "node_modules/.bin/tsc", "-p", ".")
	run("the client test", []string{
		"NEXUS_GATEWAY_URL=" + base,
		"NEXUS_API_KEY=k-client",
		"NEXUS_PAIRING_SECRET=" + st.PairingSecret,
		"NEXUS_DEMO_PROMPT=" + demoPrompt,
		"NEXUS_ARTIFACTS=" + artifacts,
	}, "node", "--test", "--test-concurrency=1", "--test-reporter=spec", "dist/src/client.test.js")
}
