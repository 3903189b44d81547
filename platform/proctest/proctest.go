// Package proctest runs Nexus programs as separate processes in tests, the way
// a deployment runs them: build the binary, start subcommands with their own
// environment, stop them with a signal or kill them like a crashed machine,
// and show their output when a test fails.
package proctest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// FreeAddr returns a loopback address that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
