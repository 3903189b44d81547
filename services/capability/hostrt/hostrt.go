// Package hostrt starts and stops the FreeCAD host runtime (hosts/freecad) as
// a child process, and speaks its JSON-over-HTTP contract
// (proto/nexus/host/v1). The add-in's Python is embedded, so a binary built
// from here runs the runtime from any directory.
package hostrt

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"nexus.local/hosts/freecad"
	"nexus.local/platform/config"
)

// readyMarker is the line the runtime prints once it listens.
const readyMarker = "NEXUS_RUNTIME_READY "

// Options says how to run the FreeCAD runtime. The env tags let a command
// load defaults from the environment and then apply its flags.
type Options struct {
	// Addr is the loopback address to serve on; port 0 picks a free port.
	Addr string `env:"NEXUS_HOST_ADDR, default=127.0.0.1:7723"`
	// Document is an .FCStd file to open; empty opens a new empty document.
	Document string `env:"NEXUS_HOST_DOCUMENT"`
	// GUI runs the FreeCAD GUI (under xvfb-run when there is no DISPLAY) for
	// real 3D renders instead of headless freecadcmd.
	GUI bool `env:"NEXUS_HOST_GUI, default=false"`
	// Token is the pairing token; empty generates one.
	Token string `env:"NEXUS_HOST_TOKEN"`
	// AllowedOrigin is the one browser origin CORS allows.
	AllowedOrigin string `env:"NEXUS_HOST_ALLOWED_ORIGIN, default=http://127.0.0.1:8080"`
	// FreeCADCmd is the headless FreeCAD executable.
	FreeCADCmd string `env:"NEXUS_FREECADCMD, default=freecadcmd"`
	// FreeCADGUI is the FreeCAD GUI executable.
	FreeCADGUI string `env:"NEXUS_FREECAD, default=freecad"`
	// StartTimeout bounds how long Start waits for the runtime to answer.
	StartTimeout time.Duration `env:"NEXUS_HOST_START_TIMEOUT, default=3m"`
	// Stdout and Stderr receive the runtime's own output; nil discards it.
	Stdout io.Writer
	Stderr io.Writer
}

// LoadOptions reads Options from l.
func LoadOptions(ctx context.Context, l config.Lookuper) (Options, error) {
	o, err := config.From[Options](ctx, l)
	if err != nil {
		return o, fmt.Errorf("load host runtime options: %w", err)
	}
	return o, nil
}

// Runtime is a running FreeCAD host runtime.
type Runtime struct {
	cmd    *exec.Cmd
	url    string
	token  string
	dir    string
	done   chan struct{}
	err    error
	stop   sync.Once
	Client *Client
}

// URL is the runtime's base URL, e.g. http://127.0.0.1:7723.
func (r *Runtime) URL() string { return r.url }

// Token is the pairing token the runtime requires.
func (r *Runtime) Token() string { return r.token }

// Wait blocks until the runtime process ends and answers why.
func (r *Runtime) Wait() error {
	<-r.done
	return r.err
}

// Stop ends the runtime and everything it started (xvfb-run's X server too),
// first politely, then by force, and removes its temporary files.
func (r *Runtime) Stop() error {
	r.stop.Do(func() {
		if r.cmd.Process != nil {
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-r.done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
				<-r.done
			}
		}
		_ = os.RemoveAll(r.dir)
	})
	return nil
}

// Start launches the runtime and returns once GET /v1/info answers. The
// runtime ends when ctx ends or Stop is called.
func Start(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:7723"
	}
	if err := checkLoopback(opts.Addr); err != nil {
		return nil, err
	}
	if opts.AllowedOrigin == "" {
		opts.AllowedOrigin = "http://127.0.0.1:8080"
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	if opts.Token == "" {
		t, err := newToken()
		if err != nil {
			return nil, err
		}
		opts.Token = t
	}
	if opts.Document != "" {
		abs, err := filepath.Abs(opts.Document)
		if err != nil {
			return nil, fmt.Errorf("resolve document: %w", err)
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("open document: %w", err)
		}
		opts.Document = abs
	}
	dir, err := os.MkdirTemp("", "nexus-freecad-")
	if err != nil {
		return nil, fmt.Errorf("create runtime dir: %w", err)
	}
	script := filepath.Join(dir, "nexus_runtime.py")
	if err := os.WriteFile(script, freecad.Script(), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("write runtime script: %w", err)
	}
	name, args, err := command(opts, script)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(),
		"NEXUS_HOST_ADDR="+opts.Addr,
		"NEXUS_HOST_TOKEN="+opts.Token,
		"NEXUS_HOST_ALLOWED_ORIGIN="+opts.AllowedOrigin,
		"NEXUS_HOST_DOCUMENT="+opts.Document,
		// The runtime ends by itself if this process dies without stopping it.
		"NEXUS_HOST_PARENT_PID="+strconv.Itoa(os.Getpid()),
	)
	if opts.GUI {
		// FreeCAD's start page embeds Chromium, which refuses to run as root
		// inside its sandbox and takes the whole GUI down with it.
		cmd.Env = append(cmd.Env, "QTWEBENGINE_DISABLE_SANDBOX=1")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("runtime stdout: %w", err)
	}
	tail := &tailBuffer{max: 4096}
	stderr := io.Writer(tail)
	if opts.Stderr != nil {
		stderr = io.MultiWriter(tail, opts.Stderr)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	r := &Runtime{cmd: cmd, token: opts.Token, dir: dir, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			if i := strings.Index(line, readyMarker); i >= 0 {
				select {
				case ready <- strings.TrimSpace(line[i+len(readyMarker):]):
				default:
				}
			}
			_, _ = tail.Write([]byte(line + "\n"))
			if opts.Stdout != nil {
				_, _ = fmt.Fprintln(opts.Stdout, line)
			}
		}
	}()
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = r.Stop()
		case <-r.done:
		}
	}()

	startCtx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	select {
	case url := <-ready:
		r.url = url
	case <-r.done:
		_ = r.Stop()
		return nil, fmt.Errorf("%s exited before serving (%v): %s", name, r.err, tail.String())
	case <-startCtx.Done():
		_ = r.Stop()
		return nil, fmt.Errorf("runtime did not start within %s: %s", opts.StartTimeout, tail.String())
	}
	r.Client = &Client{URL: r.url, Token: r.token, HTTP: &http.Client{}}
	if err := r.awaitInfo(startCtx); err != nil {
		_ = r.Stop()
		return nil, fmt.Errorf("runtime at %s: %w: %s", r.url, err, tail.String())
	}
	return r, nil
}

// awaitInfo polls GET /v1/info until the runtime's main loop answers it.
func (r *Runtime) awaitInfo(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := r.Client.Info(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no answer to GET /v1/info: %w", err)
		case <-r.done:
			return fmt.Errorf("runtime exited: %v", r.err)
		case <-tick.C:
		}
	}
}

func command(opts Options, script string) (string, []string, error) {
	if !opts.GUI {
		bin := opts.FreeCADCmd
		if bin == "" {
			bin = "freecadcmd"
		}
		if _, err := exec.LookPath(bin); err != nil {
			return "", nil, fmt.Errorf("find %s (install FreeCAD or set NEXUS_FREECADCMD): %w", bin, err)
		}
		return bin, []string{script}, nil
	}
	bin := opts.FreeCADGUI
	if bin == "" {
		bin = "freecad"
	}
	if _, err := exec.LookPath(bin); err != nil {
		return "", nil, fmt.Errorf("find %s (install FreeCAD or set NEXUS_FREECAD): %w", bin, err)
	}
	if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
		return bin, []string{script}, nil
	}
	if _, err := exec.LookPath("xvfb-run"); err != nil {
		return "", nil, fmt.Errorf("no DISPLAY and no xvfb-run to provide one (install xvfb): %w", err)
	}
	return "xvfb-run", []string{"-a", "-s", "-screen 0 1920x1080x24", bin, script}, nil
}

func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("host runtime address %q: %w", addr, err)
	}
	if port == "" {
		return fmt.Errorf("host runtime address %q has no port", addr)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("host runtime address %q is not loopback; the runtime serves on 127.0.0.1 or ::1 only", addr)
	}
	return nil
}

func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate pairing token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// tailBuffer keeps the last max bytes written, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append([]byte(nil), t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
