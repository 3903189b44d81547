package revit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"nexus.local/platform/osproc"
)

// readyMarker is the line the kit's server prints once it listens.
const readyMarker = "NEXUS_RUNTIME_READY "

// tokenLine is the line it prints with a pairing token it generated.
const tokenLine = "pairing token: "

// Options says how to run the add-in's runtime on the double.
type Options struct {
	// Addr is the loopback address to serve on; port 0 picks a free one.
	Addr string
	// Token is the pairing token; empty lets the runtime generate one.
	Token string
	// AllowedOrigin is the one browser origin CORS allows.
	AllowedOrigin string
	// RevitVersion is the Revit version the double plays (2023 to 2027).
	RevitVersion int
	// Connect links the runtime to Nexus at these gateway URLs
	// (comma-separated): it then carries its own calls over the host link.
	Connect string
	// LinkToken is the host token to link with; empty pairs (or reuses the
	// token kept in LinkTokenFile).
	LinkToken string
	// LinkTokenFile keeps the token a pairing gave, so a restart links again.
	LinkTokenFile string
	// Python is the interpreter; empty means python3.
	Python string
	// StartTimeout bounds how long Start waits for the runtime to listen.
	StartTimeout time.Duration
	// Stderr receives the runtime's own output; nil discards it.
	Stderr io.Writer
}

// Process is the runtime on the double, running.
type Process struct {
	URL   string
	Token string
	cmd   *exec.Cmd
	dir   string
	done  chan struct{}
	err   error
	once  sync.Once
}

// Start writes the runtime to a temporary folder and starts it with python3
// on the double; it returns once the runtime listens.
func Start(ctx context.Context, o Options) (*Process, error) {
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.RevitVersion == 0 {
		o.RevitVersion = 2026
	}
	if o.RevitVersion < 2023 || o.RevitVersion > 2027 {
		return nil, fmt.Errorf("revit version %d: the double plays Revit 2023 to 2027", o.RevitVersion)
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = time.Minute
	}
	python, err := exec.LookPath(o.Python)
	if err != nil {
		return nil, fmt.Errorf("find %s (the double runs under CPython 3): %w", o.Python, err)
	}
	dir, err := os.MkdirTemp("", "nexus-revit-double-")
	if err != nil {
		return nil, fmt.Errorf("create runtime dir: %w", err)
	}
	pythonPath, err := WriteRuntime(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(python, "-m", DoubleEntry)
	cmd.Dir = dir
	osproc.Own(cmd)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1",
		"NEXUS_HOST_ADDR="+o.Addr, "NEXUS_HOST_TOKEN="+o.Token, "NEXUS_HOST_ALLOWED_ORIGIN="+o.AllowedOrigin,
		"NEXUS_HOST_CHECKPOINT_DIR="+filepath.Join(dir, "checkpoints"),
		"NEXUS_HOST_PARENT_PID="+strconv.Itoa(os.Getpid()), "NEXUS_REVIT_VERSION="+strconv.Itoa(o.RevitVersion))
	if o.Connect != "" {
		cmd.Env = append(cmd.Env, "NEXUS_HOST_CONNECT_URL="+o.Connect, "NEXUS_HOST_LINK_TOKEN="+o.LinkToken,
			"NEXUS_HOST_LINK_TOKEN_FILE="+o.LinkTokenFile)
	}
	if o.Stderr != nil {
		cmd.Stderr = o.Stderr
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("runtime stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", python, err)
	}
	p := &Process{cmd: cmd, dir: dir, done: make(chan struct{}), Token: o.Token}
	ready := make(chan string, 1)
	token := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(line, readyMarker); ok {
				ready <- strings.TrimSpace(u)
			} else if t, ok := strings.CutPrefix(line, tokenLine); ok {
				token <- strings.TrimSpace(t)
			} else if o.Stderr != nil {
				fmt.Fprintln(o.Stderr, line)
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	timer := time.NewTimer(o.StartTimeout)
	defer timer.Stop()
	select {
	case p.URL = <-ready:
	case <-p.done:
		p.Stop()
		return nil, fmt.Errorf("the revit runtime exited before serving: %v", p.err)
	case <-timer.C:
		p.Stop()
		return nil, fmt.Errorf("the revit runtime did not serve within %s", o.StartTimeout)
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
	if p.Token == "" {
		select {
		case p.Token = <-token:
		case <-time.After(10 * time.Second):
			p.Stop()
			return nil, errors.New("the revit runtime printed no pairing token")
		}
	}
	return p, nil
}

// Done is closed once the runtime has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is why the runtime ended, once Done is closed.
func (p *Process) Err() error { return p.err }

// Stop ends the runtime (politely, then by force) and removes its files.
func (p *Process) Stop() {
	p.once.Do(func() {
		osproc.Terminate(p.cmd.Process.Pid)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			osproc.KillGroup(p.cmd.Process.Pid)
			<-p.done
		}
		_ = os.RemoveAll(p.dir)
	})
}
