// Package proctest runs Nexus programs as separate processes in tests, the way
// a deployment runs them: build the binary, start subcommands with their own
// environment, stop them with a signal or kill them like a crashed machine,
// and show their output when a test fails.
package proctest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Build builds the Go package pkg (e.g. nexus.local/cmd/nexus) into the
// binary bin and returns bin.
func Build(pkg, bin string) (string, error) {
	// The linker stamps the commit, as make build does (the toolchain's own
	// stamping skips git worktrees and workspace mode).
	cmd := exec.Command("go", "build", "-ldflags", "-X nexus.local/platform/version.commit="+Commit("."), "-o", bin, pkg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out.String())
	}
	return bin, nil
}

// Commit is the short commit of the git checkout dir is in, with "-dirty"
// when its tree has uncommitted changes, as the Makefile hands the linker;
// "" outside a checkout.
func Commit(dir string) string {
	head, err := exec.Command("git", "-C", dir, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(head))
	if exec.Command("git", "-C", dir, "diff", "--quiet", "HEAD", "--").Run() != nil {
		c += "-dirty"
	}
	return c
}

// Test ports lie below the kernel's ephemeral range (32768 and up on Linux),
// where no outgoing connection and no ":0" listener is given one, and each
// is reserved, until the test that took it ends, by a file in a folder that
// every test process on the machine shares. A port the kernel called free,
// closed and handed to a program to bind a moment later could be taken in
// between by another package's test running beside it: an orchestrator once
// failed to bind, and the gateway meant for it reached another test's
// server on its port.
const (
	firstTestPort = 20000
	lastTestPort  = 32000
	// staleReservation is when a reservation left by a test process that
	// died without its cleanup no longer counts.
	staleReservation = time.Hour
)

// FreeAddr returns a loopback address no other test holds, free a moment
// ago, reserved for this test until it ends.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}

// FreePort is FreeAddr's port.
func FreePort(t testing.TB) int {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "nexus-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatalf("reserve a test port: %v", err)
	}
	for range 1000 {
		port := firstTestPort + rand.IntN(lastTestPort-firstTestPort)
		mark := filepath.Join(dir, strconv.Itoa(port))
		f, err := os.OpenFile(mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			if st, serr := os.Stat(mark); serr == nil && time.Since(st.ModTime()) > staleReservation {
				_ = os.Remove(mark)
			}
			continue
		}
		_ = f.Close()
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			_ = os.Remove(mark)
			continue
		}
		_ = l.Close()
		t.Cleanup(func() { _ = os.Remove(mark) })
		return port
	}
	t.Fatalf("no free loopback port between %d and %d", firstTestPort, lastTestPort)
	return 0
}

// Process is one program running in its own process.
type Process struct {
	Name   string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
	err    error
}

// Start runs bin with args and env added to the test's environment. Its
// output goes to a file shown when the test fails; the test's end kills it.
func Start(t testing.TB, bin, name string, env []string, args ...string) *Process {
	t.Helper()
	logFile, err := os.Create(filepath.Join(t.TempDir(), strings.ReplaceAll(name, " ", "-")+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "NEXUS_DATA_DIR=") }) {
		// What the process keeps on disk stays in the test's own folder.
		cmd.Env = append(cmd.Env, "NEXUS_DATA_DIR="+t.TempDir())
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Process{Name: name, cmd: cmd, log: logFile, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		// Politely first, so the process stops what it started; then by force.
		if p.Running() {
			if _, err := p.Interrupt(10 * time.Second); err != nil {
				p.Kill()
			}
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Output())
		}
	})
	return p
}

// Output is everything the process printed so far.
func (p *Process) Output() string {
	b, _ := os.ReadFile(p.log.Name())
	return string(b)
}

// PID is the process's id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process is still running.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Kill ends the process the way a crashed machine does: no cleanup runs.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Interrupt sends SIGINT, as Ctrl-C does, and waits up to limit for a clean
// exit. It returns how long the process took, or an error when it did not
// exit in time or exited with an error.
func (p *Process) Interrupt(limit time.Duration) (time.Duration, error) {
	return p.Stop(syscall.SIGINT, limit)
}

// Terminate sends SIGTERM, as Kubernetes does to a pod it replaces, and
// waits up to limit for a clean exit, like Interrupt.
func (p *Process) Terminate(limit time.Duration) (time.Duration, error) {
	return p.Stop(syscall.SIGTERM, limit)
}

// Stop sends sig and waits up to limit for a clean exit.
func (p *Process) Stop(sig syscall.Signal, limit time.Duration) (time.Duration, error) {
	begin := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		return 0, fmt.Errorf("signal %s: %w", p.Name, err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			return time.Since(begin), fmt.Errorf("%s exited with %v after %v, want a clean exit", p.Name, p.err, sig)
		}
		return time.Since(begin), nil
	case <-time.After(limit):
		return limit, fmt.Errorf("%s still running %v after %v", p.Name, limit, sig)
	}
}
