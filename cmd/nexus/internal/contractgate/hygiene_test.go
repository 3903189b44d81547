package contractgate

// The workspace's hygiene gate: a check over every module of go.work rather
// than over one module's code.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestModulesRequireOnlyWhatTheyImport holds every module of go.work to
// "a module requires and replaces only what it imports": each direct
// requirement and each replacement in its go.mod names a module that one of
// its packages (tests included) imports, directly or through another module.
// A stale requirement or replacement outlives the code that needed it and
// drags a module's release into another's; nothing else catches it, because
// go.work builds every module against the workspace either way.
func TestModulesRequireOnlyWhatTheyImport(t *testing.T) {
	root := repoRoot(t)
	var work struct{ Use []struct{ DiskPath string } }
	goJSON(t, root, filepath.Join(root, "go.work"), &work, "work", "edit", "-json")
	if len(work.Use) == 0 {
		t.Fatalf("go.work in %s uses no module", root)
	}
	for _, u := range work.Use {
		dir := filepath.Join(root, u.DiskPath)
		t.Run(u.DiskPath, func(t *testing.T) {
			problems, err := unusedRequirements(dir, filepath.Join(root, "go.work"))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// TestUnusedRequirementsFindsThem runs the check against a scratch module
// that requires and replaces a module it does not import, so the gate above
// is known to catch what it is for; and against the same module once it
// imports it, so the gate is known not to cry wolf.
func TestUnusedRequirementsFindsThem(t *testing.T) {
	tests := []struct {
		name string
		// code and test are a.go and a_test.go; no test file when empty.
		code, test string
		want       []string
	}{
		{"not imported", "package a\n", "", []string{
			"scratch.local/a: replace scratch.local/b",
			"scratch.local/a: require scratch.local/b",
		}},
		{"imported by a test", "package a\n", "package a\n\nimport _ \"scratch.local/b\"\n", nil},
		{"imported", "package a\n\nimport _ \"scratch.local/b\"\n", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "b", "go.mod"), "module scratch.local/b\n\ngo 1.22\n")
			write(t, filepath.Join(dir, "b", "b.go"), "package b\n")
			write(t, filepath.Join(dir, "a", "go.mod"), "module scratch.local/a\n\ngo 1.22\n\n"+
				"require scratch.local/b v0.0.0\n\nreplace scratch.local/b => ../b\n")
			write(t, filepath.Join(dir, "a", "a.go"), tt.code)
			if tt.test != "" {
				write(t, filepath.Join(dir, "a", "a_test.go"), tt.test)
			}
			got, err := unusedRequirements(filepath.Join(dir, "a"), "off")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d naming %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %q, want one starting %q", got[i], w)
				}
			}
		})
	}
}

// unusedRequirements lists the direct requirements and replacements of the
// module in dir that none of its packages or their tests import. gowork is
// the GOWORK the go command runs with: the workspace file, or "off".
func unusedRequirements(dir, gowork string) ([]string, error) {
	var mod struct {
		Module  struct{ Path string }
		Require []struct {
			Path     string
			Indirect bool
		}
		Replace []struct{ Old struct{ Path string } }
	}
	out, err := goCmd(dir, gowork, "mod", "edit", "-json")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		return nil, fmt.Errorf("decode go.mod of %s: %w", dir, err)
	}
	// -deps follows imports through other modules, so a module needed only
	// by a dependency counts as imported: it must stay in go.mod for the
	// module to build on its own, outside the workspace.
	out, err = goCmd(dir, gowork, "list", "-deps", "-test", "-f", "{{if and .Module (not .ForTest)}}{{.ImportPath}}{{end}}", "./...")
	if err != nil {
		return nil, err
	}
	var pkgs []string
	for line := range strings.SplitSeq(string(out), "\n") {
		// The generated test main packages (path.test) import nothing new.
		if line = strings.TrimSpace(line); line != "" && !strings.HasSuffix(line, ".test") {
			pkgs = append(pkgs, line)
		}
	}
	imported, err := modulesOf(dir, gowork, "./...")
	if err != nil {
		return nil, err
	}
	// go mod tidy also loads the tests of every package the module imports,
	// so a module that only such a test imports must stay replaced, or tidy
	// fails looking it up on the proxy. It need not be required directly.
	tidy, err := modulesOf(dir, gowork, pkgs...)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, r := range mod.Require {
		if !r.Indirect && !imported[r.Path] {
			problems = append(problems, fmt.Sprintf("%s: require %s: no package of the module imports it", mod.Module.Path, r.Path))
		}
	}
	for _, r := range mod.Replace {
		if !tidy[r.Old.Path] {
			problems = append(problems, fmt.Sprintf("%s: replace %s: no package of the module, nor a test of a package it imports, imports it", mod.Module.Path, r.Old.Path))
		}
	}
	slices.Sort(problems)
	return problems, nil
}

// modulesOf is the set of modules that hold the packages, their tests, and
// everything those import.
func modulesOf(dir, gowork string, pkgs ...string) (map[string]bool, error) {
	args := append([]string{"list", "-deps", "-test", "-f", "{{if .Module}}{{.Module.Path}}{{end}}"}, pkgs...)
	out, err := goCmd(dir, gowork, args...)
	if err != nil {
		return nil, err
	}
	mods := map[string]bool{}
	for line := range strings.SplitSeq(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			mods[line] = true
		}
	}
	return mods, nil
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(dir, gowork string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK="+gowork)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return out, nil
}

func goJSON(t *testing.T, dir, gowork string, v any, args ...string) {
	t.Helper()
	out, err := goCmd(dir, gowork, args...)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("decode go %s: %v", strings.Join(args, " "), err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
