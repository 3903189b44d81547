// Package contractgate holds the gates over the whole repository: the test of
// `make breaking`, which keeps the public contracts compatible, and the
// workspace hygiene check, which keeps the go.mod of the product and of the chart honest.
package contractgate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The contract the gate is exercised on: a field that exists, its message,
// and the file that holds them.
const (
	gateProto   = "proto/nexus/agent/v1/orchestrator.proto"
	gateMessage = "Session"
	gateField   = "last_run_id"
)

// TestBreakingGate shows that `make breaking` passes a compatible change to
// the contracts and fails a breaking one, naming what broke, and that
// `make lint` runs it. It works on a scratch git repository holding copies of
// the repository's buf.yaml, Makefile and proto tree, so the commits it makes
// (and the HEAD~1 they are compared with) are its own. The same check runs
// against Makefiles whose gate is broken, and must fail there.
func TestBreakingGate(t *testing.T) {
	root := repoRoot(t)
	ensureTools(t, root)
	tests := []struct {
		name string
		// mutate edits the scratch Makefile; nil keeps the repository's.
		mutate  func(makefile string) (string, error)
		wantErr string
	}{
		{name: "repository Makefile"},
		{name: "breaking target that checks nothing", wantErr: "make breaking passed a deleted field",
			mutate: replaceOnce("then buf breaking --against '$(BREAKING_AGAINST)'", "then echo skipped")},
		{name: "breaking against the commit itself", wantErr: "make breaking passed a deleted field",
			mutate: replaceOnce(`BREAKING_AGAINST ?= .git\#ref=HEAD~1`, `BREAKING_AGAINST ?= .git\#ref=HEAD`)},
		{name: "lint that does not run breaking", wantErr: "make lint does not run the breaking check",
			mutate: replaceOnce("lint: $(TOOLS) breaking ##", "lint: $(TOOLS) ##")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := scratchRepo(t, root, tt.mutate)
			err := checkBreakingGate(t.Context(), repo, root)
			if err != nil {
				t.Logf("the check reports: %v", err)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("check returned %v, want an error mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// checkBreakingGate commits a compatible change (a new field) on top of the
// scratch repository's first commit and expects `make breaking` to pass;
// then, from the first commit again, commits a breaking one (a deleted
// field) and expects both `make breaking` and `make lint` to fail naming the
// field. It returns what the Makefile got wrong.
func checkBreakingGate(ctx context.Context, repo, root string) error {
	base, err := git(ctx, repo, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	base = strings.TrimSpace(base)

	if err := commitEdit(ctx, repo, "add a field", addField); err != nil {
		return err
	}
	if out, err := runMake(ctx, repo, root, "breaking"); err != nil {
		return fmt.Errorf("make breaking rejected an added field: %w\n%s", err, out)
	}

	if _, err := git(ctx, repo, "reset", "-q", "--hard", base); err != nil {
		return err
	}
	if err := commitEdit(ctx, repo, "delete a field", deleteField); err != nil {
		return err
	}
	out, err := runMake(ctx, repo, root, "breaking")
	if err == nil || !namesDeletedField(out) {
		return fmt.Errorf("make breaking passed a deleted field (err %v), or failed without naming %s:\n%s", err, gateField, out)
	}
	// Every other lint step comes after breaking in the recipe, so a lint
	// that runs breaking stops there with buf's verdict on the field.
	out, err = runMake(ctx, repo, root, "lint")
	if err == nil || !namesDeletedField(out) {
		return fmt.Errorf("make lint does not run the breaking check (err %v): its output does not name %s:\n%s", err, gateField, out)
	}
	return nil
}

// namesDeletedField reports whether buf breaking's output names the field
// the check deleted.
func namesDeletedField(out string) bool {
	return strings.Contains(out, `"`+gateField+`"`) && strings.Contains(out, "deleted")
}

// addField adds a field with a number the message does not use.
func addField(src string) (string, error) {
	head := "message " + gateMessage + " {\n"
	if strings.Count(src, head) != 1 {
		return "", fmt.Errorf("%s: want one %q", gateProto, strings.TrimSpace(head))
	}
	return strings.Replace(src, head, head+"  string contract_gate_probe = 9999;\n", 1), nil
}

// deleteField removes the field's declaration.
func deleteField(src string) (string, error) {
	re := regexp.MustCompile(`(?m)^\s*string ` + gateField + ` = \d+;\n`)
	if n := len(re.FindAllStringIndex(src, -1)); n != 1 {
		return "", fmt.Errorf("%s: want one declaration of %s, found %d", gateProto, gateField, n)
	}
	return re.ReplaceAllString(src, ""), nil
}

// replaceOnce returns an edit that replaces old, which must occur once.
func replaceOnce(old, repl string) func(string) (string, error) {
	return func(src string) (string, error) {
		if n := strings.Count(src, old); n != 1 {
			return "", fmt.Errorf("want one %q in the Makefile, found %d", old, n)
		}
		return strings.Replace(src, old, repl, 1), nil
	}
}

// scratchRepo makes a git repository in a temporary directory holding copies
// of the repository's buf.yaml, Makefile (edited by mutate, when set) and
// proto tree, committed once. Its bin is the repository's, so the pinned
// tools are the ones that run.
func scratchRepo(t *testing.T, root string, mutate func(string) (string, error)) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"buf.yaml", "Makefile"} {
		if err := copyFile(filepath.Join(root, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyTree(filepath.Join(root, "proto"), filepath.Join(dir, "proto")); err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		if err := editFile(filepath.Join(dir, "Makefile"), mutate); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "bin"), filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := git(ctx, dir, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	if _, err := git(ctx, dir, "add", "buf.yaml", "Makefile", "proto"); err != nil {
		t.Fatal(err)
	}
	if _, err := git(ctx, dir, "commit", "-q", "-m", "base"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// commitEdit applies edit to the gate's proto file and commits it.
func commitEdit(ctx context.Context, repo, msg string, edit func(string) (string, error)) error {
	if err := editFile(filepath.Join(repo, gateProto), edit); err != nil {
		return err
	}
	if _, err := git(ctx, repo, "commit", "-q", "-a", "-m", msg); err != nil {
		return err
	}
	return nil
}

// ensureTools installs the pinned tools `make lint` needs, as make test does
// before it runs the tests; a failure to install them fails the test.
func ensureTools(t *testing.T, root string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-C", root, "tools")
	cmd.Env = makeEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make tools (the pinned buf and code generators in %s/bin): %v\n%s", root, err, out)
	}
}

// runMake runs make target in repo with the repository's bin first in PATH.
func runMake(ctx context.Context, repo, root, target string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", target)
	cmd.Dir = repo
	cmd.Env = append(makeEnv(), "PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("make %s: %w", target, err)
	}
	return string(out), nil
}

// makeEnv is the test's environment without what an enclosing make (make
// test runs this test) passes to its children: its flags, -i or -k among
// them, would change what the gate's make reports. BREAKING_AGAINST is
// dropped too, so the Makefile's own default is what is tested.
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "BREAKING_AGAINST":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// git runs git in dir with an identity of its own, so the user's settings
// (signing, hooks, templates) play no part.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	args = append([]string{"-c", "user.name=gate", "-c", "user.email=gate@nexus.local", "-c", "commit.gpgsign=false",
		"-c", "core.hooksPath=/dev/null", "-c", "init.defaultBranch=main"}, args...)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	// A GIT_DIR or GIT_INDEX_FILE inherited from a hook would point git at
	// the real repository.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_TEMPLATE_DIR=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func editFile(path string, edit func(string) (string, error)) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	out, err := edit(string(src))
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	return nil
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return fmt.Errorf("copy %s: %w", path, err)
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return fmt.Errorf("copy %s: %w", path, errors.ErrUnsupported)
	})
}

// repoRoot is the nearest directory above the test's that holds go.work.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the test's directory")
		}
		dir = parent
	}
}
