package codestyle

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBreakingCheckCatchesABreak proves the gate make lint runs (make
// breaking) fails on a breaking contract change: a copy of proto/ with one
// field deleted is refused against the untouched copy, which itself passes.
// It fails, never skips, without the pinned buf that make test installs.
func TestBreakingCheckCatchesABreak(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	buf := filepath.Join(root, "bin", "buf")
	if _, err := os.Stat(buf); err != nil {
		t.Fatalf("the pinned buf is missing (make tools installs it): %v", err)
	}
	before, after := filepath.Join(t.TempDir(), "before"), filepath.Join(t.TempDir(), "after")
	for _, dir := range []string{before, after} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-r", filepath.Join(root, "proto"), filepath.Join(dir, "proto")).CombinedOutput(); err != nil {
			t.Fatalf("copy proto: %v\n%s", err, out)
		}
		b, err := os.ReadFile(filepath.Join(root, "buf.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "buf.yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func() (string, error) {
		cmd := exec.Command(buf, "breaking", after, "--against", before)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := check(); err != nil {
		t.Fatalf("the contracts against themselves: %v\n%s", err, out)
	}
	file := filepath.Join(after, "proto", "nexus", "agent", "v1", "orchestrator.proto")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const field = "  string last_run_id = 13;\n"
	if !strings.Contains(string(src), field) {
		t.Fatalf("%s no longer has %q; pick another field to delete", file, field)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(src), field, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := check()
	if err == nil || !strings.Contains(out, `"last_run_id"`) {
		t.Fatalf("deleting Session.last_run_id passed the breaking check (err %v):\n%s", err, out)
	}
}
