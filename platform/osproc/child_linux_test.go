package osproc

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary play a launcher: started with
// OSPROC_LAUNCHER=1 it starts a long sleep through Own, prints its pid and
// waits to be killed.
func TestMain(m *testing.M) {
	if os.Getenv("OSPROC_LAUNCHER") == "1" {
		cmd := exec.Command("sleep", "600")
		Own(cmd)
		if err := cmd.Start(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
		_ = cmd.Wait()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestOwnedChildEndsWithItsLauncher kills a launcher with SIGKILL, which
// gives it no chance to stop its child: the kernel ends the child for it.
// Without Pdeathsig the child sleeps on for ten minutes, as the FreeCAD
// runtime of a killed nexus dev lived on and linked to the next one.
func TestOwnedChildEndsWithItsLauncher(t *testing.T) {
	launcher := exec.Command(os.Args[0], "-test.run=^$")
	launcher.Env = append(os.Environ(), "OSPROC_LAUNCHER=1")
	out, err := launcher.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := launcher.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the launcher said no pid: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Kill(child) })
	if !Alive(child) {
		t.Fatalf("the child %d is not running before its launcher is killed", child)
	}
	if err := launcher.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = launcher.Wait()
	// The orphan is reparented to init (or a subreaper), which reaps it;
	// a zombie not yet reaped has ended too.
	deadline := time.Now().Add(30 * time.Second)
	for running(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the child %d still runs 30 s after its launcher was killed", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running reports a process that exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
