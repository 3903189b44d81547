package systemtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// mcpTests is the folder of the MCP end-to-end tests: the official TypeScript
// MCP SDK client, pinned in its package-lock.json (make deps runs npm ci).
const mcpTests = repoRoot + "/tests/mcp"

// runMCPClient runs one node test file of tests/mcp with env and fails the
// test with its output when it fails.
func runMCPClient(t *testing.T, file string, env ...string) {
	t.Helper()
	dir, err := filepath.Abs(mcpTests)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("tests/mcp/node_modules lacks @modelcontextprotocol/sdk: run make deps (npm ci in tests/mcp): %v", err)
	}
	artifacts := repoPath(t, "test-artifacts/mcp")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-concurrency=1", "--test-reporter=spec", file)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "NEXUS_ARTIFACTS="+artifacts), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s:\n%s", file, out)
	if err != nil {
		t.Fatalf("the MCP client tests in tests/mcp/%s failed: %v", file, err)
	}
}

// TestMCPGateway points the official TypeScript MCP client at the /mcp
// endpoint of `nexus dev` with API keys configured: refused without a key;
// with one it lists the tools and runs the demo on the real FreeCAD runtime,
// which the MCP server carries the tool calls to by itself, and gets the
// change report and a PNG back, with progress notifications on the way.
func TestMCPGateway(t *testing.T) {
	t.Parallel()
	base, _ := startDemoDev(t, buildNexus(t), "NEXUS_API_KEYS=k-mcp:mcp-user")
	runMCPClient(t, "gateway.test.mjs",
		"NEXUS_MCP_URL="+base+"/mcp",
		"NEXUS_API_KEY=k-mcp",
		"NEXUS_DEMO_PROMPT="+demoPrompt,
	)
}

// TestMCPHostStdio has the official TypeScript MCP client start `nexus host
// freecad --mcp` and drive it over stdio: a read-only inspection, a
// transaction that commits with its change report, one that raises and
// leaves the document exactly as before, and a captured view.
func TestMCPHostStdio(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	runMCPClient(t, "host.test.mjs", "NEXUS_BIN="+bin, "NEXUS_HOST_ADDR=")
}
