package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// inspectorStrict runs the MCP Inspector's CLI (pinned in tests/mcp's
// package-lock.json) with --strict on tools/list against target, and answers
// the tools it listed; it fails the test on any schema problem the
// Inspector reports, warnings included, and when it listed no tools.
func inspectorStrict(t *testing.T, target ...string) map[string]json.RawMessage {
	t.Helper()
	dir, err := filepath.Abs(mcpTests)
	if err != nil {
		t.Fatal(err)
	}
	inspector := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(inspector); err != nil {
		t.Fatalf("tests/mcp/node_modules lacks the MCP Inspector: run make deps (npm ci in tests/mcp): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, inspector, append([]string{"--cli", "--method", "tools/list", "--strict"}, target...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("mcp-inspector --cli --strict stderr:\n%s", stderr.String())
	if err != nil {
		t.Fatalf("mcp-inspector --cli --method tools/list --strict %s: %v", strings.Join(target, " "), err)
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(line, "Warning:") || strings.HasPrefix(line, "Error:") {
			t.Errorf("the Inspector reports a schema problem: %s", line)
		}
	}
	if m := regexp.MustCompile(`(\d+) errors?, (\d+) warnings?`).FindStringSubmatch(stderr.String()); m != nil {
		errs, _ := strconv.Atoi(m[1])
		warns, _ := strconv.Atoi(m[2])
		if errs+warns > 0 {
			t.Errorf("the Inspector counts %d errors and %d warnings, want none", errs, warns)
		}
	}
	var listed struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	var raw struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &listed); err != nil || json.Unmarshal(stdout.Bytes(), &raw) != nil || len(listed.Tools) == 0 {
		t.Fatalf("the Inspector listed no tools (%v):\n%s", err, stdout.String())
	}
	tools := map[string]json.RawMessage{}
	for i, tool := range listed.Tools {
		tools[tool.Name] = raw.Tools[i]
	}
	return tools
}

// TestMCPSchemasStrict has the MCP Inspector's CLI list the tools of both MCP
// servers with --strict: the gateway's /mcp on nexus dev and the stdio server
// of nexus host freecad --mcp. Neither reports a schema problem (no nullable
// type arrays), and capture_view's maxPx carries its 64 to 4096 bounds in its
// schema, not only in its words.
func TestMCPSchemasStrict(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	t.Run("gateway", func(t *testing.T) {
		base, _ := startDemoDev(t, bin, "NEXUS_DEV_NO_HOST=true")
		tools := inspectorStrict(t, base+"/mcp")
		for _, name := range []string{"run", "list_sessions", "session_audit"} {
			if tools[name] == nil {
				t.Errorf("the gateway lists no %s tool", name)
			}
		}
	})
	t.Run("stdio host", func(t *testing.T) {
		tools := inspectorStrict(t, "-e", "NEXUS_HOST_ADDR=127.0.0.1:0", bin, "host", "freecad", "--mcp")
		var view struct {
			InputSchema struct {
				Properties map[string]struct {
					Minimum *float64 `json:"minimum"`
					Maximum *float64 `json:"maximum"`
				} `json:"properties"`
			} `json:"inputSchema"`
		}
		if err := json.Unmarshal(tools["capture_view"], &view); err != nil {
			t.Fatalf("capture_view: %v", err)
		}
		p := view.InputSchema.Properties["maxPx"]
		if p.Minimum == nil || p.Maximum == nil || *p.Minimum != 64 || *p.Maximum != 4096 {
			t.Errorf("capture_view's maxPx schema bounds are %v to %v, want 64 to 4096", p.Minimum, p.Maximum)
		}
	})
}
