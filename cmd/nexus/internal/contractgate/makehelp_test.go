package contractgate

import (
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// TestMakeHelpLeadsWithRunAndTest runs `make help` into a pipe, as a person
// piping it to less or a script reading it would: the two commands a newcomer
// needs come first, and no terminal colour codes reach a pipe.
func TestMakeHelpLeadsWithRunAndTest(t *testing.T) {
	cmd := exec.Command("make", "-s", "help")
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 3 {
		t.Fatalf("make help listed %d targets:\n%s", len(lines), out)
	}
	for i, want := range []string{"run", "test"} {
		if f := strings.Fields(lines[i]); len(f) == 0 || f[0] != want {
			t.Errorf("make help line %d is %q, want target %s", i+1, lines[i], want)
		}
	}
	if strings.Contains(string(out), "\x1b[") {
		t.Errorf("make help wrote colour codes into a pipe:\n%q", out)
	}
}

// TestMakeHelpColoursATerminal runs `make help` in a pseudo-terminal, as a
// person types it: there the target names are coloured.
func TestMakeHelpColoursATerminal(t *testing.T) {
	cmd := exec.Command("make", "-s", "help")
	cmd.Dir = repoRoot(t)
	f, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&out, f) // ends with EIO once make exits
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("make help: %v", err)
	}
	<-done
	if !strings.Contains(out.String(), "\x1b[36mrun") {
		t.Errorf("make help in a terminal has no colour on run:\n%q", out.String())
	}
}
