package systemtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDevSpeaksPlainly runs nexus dev as make run does and reads its
// terminal: one URL, the one thing to do next and where the data lives;
// FreeCAD's banner, the runtime's lines and the services' logs are in
// nexus.log in the data folder instead. When FreeCAD is killed, the
// terminal says it was restarted; Ctrl-C says one process stopped.
func TestDevSpeaksPlainly(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	dataDir := t.TempDir()
	env := append(append(devEnv(t, httpAddr), "NEXUS_DATA_DIR="+dataDir, "NEXUS_LOG_FILE="), demoModelEnv()...)
	dev := start(t, bin, env, "dev")
	waitHTTP(t, "http://"+httpAddr+"/readyz")
	waitFor(t, "nexus dev to say what to do", time.Minute, func() bool { return strings.Contains(dev.Output(), "Ctrl-C stops it.") })
	out := dev.Output()
	t.Logf("nexus dev's terminal:\n%s", out)
	if n := strings.Count(out, "http://"); n != 1 {
		t.Errorf("the terminal shows %d URLs, want one", n)
	}
	for _, w := range []string{"nexus is running at http://" + httpAddr + "/#pair=", "next: open it and ask \"" + demoPrompt + "\"",
		"data: " + dataDir + " (sessions, run history and audit log in nexus.db; the FreeCAD document freecad/Nexus.FCStd; the log nexus.log",
		"terminal: in another terminal, " + bin + " run \"...\" works on the same sessions"} {
		if !strings.Contains(out, w) {
			t.Errorf("the terminal lacks %q", w)
		}
	}
	for _, w := range []string{"NEXUS_RUNTIME_READY", "#####", "level=", "pairing", "secret", "nexus link:"} {
		if strings.Contains(out, w) {
			t.Errorf("the terminal shows %q, which belongs in the log", w)
		}
	}
	log, err := os.ReadFile(filepath.Join(dataDir, "nexus.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"NEXUS_RUNTIME_READY", "FreeCAD", "level=INFO", "service=orchestrator", "/mcp"} {
		if !bytes.Contains(log, []byte(w)) {
			t.Errorf("nexus.log lacks %q", w)
		}
	}

	freecad := childNamed(t, dev.PID(), "freecad")
	if err := syscall.Kill(freecad, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "nexus dev to report the restart", 3*time.Minute, func() bool {
		return strings.Contains(dev.Output(), "FreeCAD stopped and was restarted with the document as of its last commit: ")
	})

	// Ctrl-C stops one process, and it says so in those words.
	interrupt(t, dev)
	if out := dev.Output(); !strings.Contains(out, "stopping nexus: sessions, run history and the document are kept for the next start") ||
		strings.Contains(out, "replica") || strings.Contains(out, "elsewhere") {
		t.Errorf("nexus dev's shutdown does not read as one process stopping:\n%s", out)
	}
}

// childNamed answers the child process of pid whose command name starts with
// prefix: a process this test started, through nexus dev.
func childNamed(t *testing.T, pid int, prefix string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open || end+2 >= len(stat) {
			continue
		}
		fields := strings.Fields(string(stat[end+2:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && strings.HasPrefix(string(stat[open+1:end]), prefix) {
			return child
		}
	}
	t.Fatalf("nexus dev (%d) has no %s* child process", pid, prefix)
	return 0
}

// TestRunSaysDevStopped stops nexus dev (Ctrl-C) while nexus run, in a
// pseudo-terminal, asks the person about a script: nexus run says nexus dev
// stopped and that the session keeps the run, with no talk of replicas or of
// a decision made elsewhere, and exits 1.
func TestRunSaysDevStopped(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	devVars := append(devEnv(t, httpAddr), demoModelEnv()...)
	dev := start(t, bin, devVars, "dev")
	waitHTTP(t, "http://"+httpAddr+"/readyz")
	env := append(os.Environ(), append(devVars, "NEXUS_GATEWAY_URL=", "NEXUS_HOST_URL=", "NEXUS_HOST_TOKEN=", "VISUAL=",
		"NEXUS_VIEWS_DIR="+t.TempDir())...)
	out, code := ptyRun(t, bin, env, func(int) string {
		interrupt(t, dev)
		return "" // no decision: the run's end comes first
	}, "run", "--review", "every", demoPrompt)
	t.Logf("exit %d, output:\n%s", code, out)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	session := sessionOf(t, out)
	if want := "nexus dev stopped before the run ended; session " + session + " keeps it"; !strings.Contains(out, want) {
		t.Errorf("the output lacks %q", want)
	}
	for _, w := range []string{"replica", "elsewhere"} {
		if strings.Contains(out, w) {
			t.Errorf("the output speaks of %q under one-process nexus dev", w)
		}
	}
}
