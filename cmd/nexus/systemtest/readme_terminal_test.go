package systemtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// readmeTerminal answers the command lines of the README's terminal block
// (the sh block after "The terminal does the same"), comments taken off.
func readmeTerminal(t *testing.T, readme string) []string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "The terminal does the same")
	if !ok {
		t.Fatal("the README has no terminal paragraph (The terminal does the same)")
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("the README's terminal paragraph has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		if i := strings.Index(l, "  #"); i >= 0 {
			l = l[:i]
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	return lines
}

// TestReadmeTerminalPath follows the README's terminal path on a fresh
// clone, its commands as written, run by a shell in the clone's folder in a
// terminal: make run builds bin/nexus there (make -n says so; the binary of
// this checkout stands in for that build, which would take minutes more),
// nexus dev runs with the demo model and the web demo's room already in its
// document; the README's nexus run on a new document asks for the review,
// which is approved and commits; nexus sessions lists the sessions by their
// titles; nexus run --session joins a session whose script awaits review
// (left waiting by a run that had no terminal to ask on), which is approved
// and commits; nexus audit fits 100 columns and names FreeCAD's version.
func TestReadmeTerminalPath(t *testing.T) {
	t.Parallel()
	root := repoPath(t, ".")
	clone := filepath.Join(t.TempDir(), "nexus")
	if out, err := exec.Command("git", "clone", "--quiet", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	plan, err := exec.Command("make", "-n", "-C", clone, "run").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, plan)
	}
	for _, w := range []string{"-o " + filepath.Join(clone, "bin", "nexus") + " ./cmd/nexus", filepath.Join(clone, "bin", "nexus") + " dev",
		// It says what it builds, and installs none of the tests' packages.
		"./scripts/install-deps.sh --run", "make run: building bin/nexus", "make run: building the web UI"} {
		if !strings.Contains(string(plan), w) {
			t.Fatalf("make run in a fresh clone does not run %q:\n%s", w, plan)
		}
	}
	if err := os.MkdirAll(filepath.Join(clone, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := buildNexus(t)
	if err := os.Rename(bin, filepath.Join(clone, "bin", "nexus")); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(clone, "bin", "nexus")
	readme, err := os.ReadFile(filepath.Join(clone, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := readmeTerminal(t, string(readme))
	t.Logf("the README's terminal path:\n%s", strings.Join(lines, "\n"))
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "./bin/nexus run --new-document ") || lines[1] != "./bin/nexus sessions" ||
		lines[2] != "./bin/nexus run --session SESSION_ID" || lines[3] != "./bin/nexus audit SESSION_ID" {
		t.Fatalf("the README's terminal block is not the path this test follows (run --new-document, sessions, run --session, audit):\n%s", strings.Join(lines, "\n"))
	}

	env := startDev(t, bin)
	// The web demo's room, as a person has it when they turn to the terminal.
	if code, stdout, stderr := runNexus(t, bin, env, "run", "--yes", demoPrompt); code != 0 {
		t.Fatalf("the demo run: exit %d\n%s%s", code, stdout, stderr)
	}
	shell := func(line string) (string, int) {
		return ptyRun(t, "bash", env, func(int) string { return "a" }, "-c", "cd "+clone+" && "+line)
	}

	out, code := shell(lines[0])
	t.Logf("%s:\n%s", lines[0], out)
	if code != 0 || !strings.Contains(out, "✓ committed") || strings.Contains(out, "Open an empty document") {
		t.Fatalf("%s exited %d, want 0 with the room committed on a new document", lines[0], code)
	}

	// A run whose script awaits review, left waiting: nobody was asked.
	code, stdout, stderr := runNexus(t, bin, env, "run", "--new-document", demoPrompt)
	waiting := regexp.MustCompile(`the run waits in session (s_\w+)`).FindStringSubmatch(stderr)
	if code != 1 || waiting == nil {
		t.Fatalf("a run with no terminal to ask on exited %d, want 1 naming the session that waits\n%s%s", code, stdout, stderr)
	}
	session := waiting[1]

	out, code = shell(lines[1])
	t.Logf("%s:\n%s", lines[1], out)
	if code != 0 || !strings.Contains(out, "TITLE") || strings.Count(out, "Build a small room") < 3 ||
		!regexp.MustCompile(session+`\s+Build a small room.*a script awaits your review`).MatchString(out) {
		t.Errorf("%s exited %d, want every session titled by its prompt and %s awaiting review", lines[1], code, session)
	}

	join := strings.ReplaceAll(lines[2], "SESSION_ID", session)
	out, code = shell(join)
	t.Logf("%s:\n%s", join, out)
	if code != 0 || !strings.Contains(out, "joining run") || strings.Count(out, "── this script awaits your review") != 1 || !strings.Contains(out, "✓ committed") {
		t.Errorf("%s exited %d, want it to join the run, ask once and commit", join, code)
	}
	if strings.Contains(out, "already has an active run") {
		t.Errorf("%s was refused as a second run", join)
	}

	audit := strings.ReplaceAll(lines[3], "SESSION_ID", session)
	out, code = shell(audit)
	t.Logf("%s:\n%s", audit, out)
	if code != 0 || !strings.Contains(out, "on FreeCAD ") || !strings.Contains(out, "committed") {
		t.Errorf("%s exited %d, want the audit naming FreeCAD's version", audit, code)
	}
	for _, l := range strings.Split(strings.ReplaceAll(out, "\r", ""), "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("%s prints a line of %d columns, want at most 100: %q", audit, n, l)
		}
	}
}
