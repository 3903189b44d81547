package codestyle

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRepositoryBoundaries holds the repository to the tree's boundaries.
func TestRepositoryBoundaries(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	findings, err := CheckBoundaries(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("%s", f)
	}
}

// copyFile copies the repository's file rel into the scratch root.
func copyFile(t *testing.T, repo, scratch, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, rel))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(scratch, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// plant adds an import of path to the Go file at file, after its first
// import line.
func plant(t *testing.T, file, path string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	i := strings.Index(src, "\nimport (\n")
	if i < 0 {
		t.Fatalf("%s has no import block", file)
	}
	i += len("\nimport (\n")
	src = src[:i] + "\t_ \"" + path + "\"\n" + src[i:]
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestBoundariesFailOnAPlantedImport copies real files of the repository
// into a scratch tree, shows they pass, then plants a service importing
// another service and the gateway importing a host, and shows each fails.
func TestBoundariesFailOnAPlantedImport(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file, imports, want string
	}{
		{"services/orchestrator/runner/execute.go", "nexus.local/services/capability", "service orchestrator imports service capability"},
		{"gateway/mcp.go", "nexus.local/hosts/freecad/launcher", "the gateway imports nexus.local/hosts/freecad/launcher"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			scratch := t.TempDir()
			copyFile(t, repo, scratch, "go.mod")
			file := copyFile(t, repo, scratch, tt.file)
			// Imports within the boundaries pass.
			copyFile(t, repo, scratch, "hosts/freecad/launcher/launcher.go")
			if got, err := CheckBoundaries(scratch); err != nil || len(got) != 0 {
				t.Fatalf("the copy as it is: findings %v, err %v", got, err)
			}
			plant(t, file, tt.imports)
			got, err := CheckBoundaries(scratch)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !strings.Contains(got[0].Rule, tt.want) {
				t.Fatalf("findings %v, want one saying %q", got, tt.want)
			}
		})
	}
}

// TestGatewayBinaryLinksNoHost checks what the gateway's binary links, tests
// aside: nothing under hosts/ (the import rule above sees only the
// gateway's own files; this sees everything they pull in).
func TestGatewayBinaryLinksNoHost(t *testing.T) {
	for _, p := range binaryDeps(t, "./gateway/cmd/...", "nexus.local/gateway") {
		if strings.HasPrefix(p, "nexus.local/hosts/") {
			t.Errorf("the gateway binary links %s", p)
		}
	}
}

// TestModelRouterBinaryLinksNoEval checks that the model-router's binary
// links no package of the eval (its tasks and checkers, or the expert that
// plays them): the replay vendor behind the replay models is nexus dev's.
func TestModelRouterBinaryLinksNoEval(t *testing.T) {
	for _, p := range binaryDeps(t, "./services/modelrouter/cmd/...", "nexus.local/services/modelrouter") {
		if p == "nexus.local/eval" || strings.HasPrefix(p, "nexus.local/eval/") || p == "nexus.local/services/modelrouter/replay" {
			t.Errorf("the model-router binary links %s", p)
		}
	}
}

// binaryDeps lists every package the binaries of pattern link, which must
// include self.
func binaryDeps(t *testing.T, pattern, self string) []string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", pattern)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pattern, err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, self) {
		t.Fatalf("go list -deps %s does not list %s:\n%s", pattern, self, out)
	}
	return deps
}
