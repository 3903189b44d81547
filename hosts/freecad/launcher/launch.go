package launcher

// This file starts one FreeCAD runtime process: its command line, its
// document files, its token, and waiting until it answers.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"nexus.local/platform/hostclient"
	"nexus.local/platform/osproc"
)

// launch starts one FreeCAD process on a free loopback port with the
// document as of the last commit, and returns once it serves.
func (r *Runtime) launch(ctx context.Context) (*process, error) {
	opts := r.opts
	name, args, err := command(opts, r.script)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	document, fileName, restored := r.document, r.fileName, r.restored
	r.mu.Unlock()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("status pipe: %w", err)
	}
	defer func() { _ = statusW.Close() }()
	cmd := exec.Command(name, args...)
	cmd.Dir = r.dir
	osproc.Own(cmd)
	cmd.ExtraFiles = []*os.File{statusW}
	cmd.Env = append(os.Environ(),
		"NEXUS_HOST_ADDR=127.0.0.1:0",
		"NEXUS_HOST_TOKEN="+r.token,
		"NEXUS_HOST_ALLOWED_ORIGIN="+opts.AllowedOrigin,
		"NEXUS_HOST_DOCUMENT="+document,
		// The runtime ends by itself if this process dies without stopping it.
		"NEXUS_HOST_PARENT_PID="+strconv.Itoa(os.Getpid()),
		"NEXUS_HOST_STATUS_FD=3",
		"NEXUS_HOST_CHECKPOINT_DIR="+filepath.Join(r.dir, "checkpoints"),
		"NEXUS_HOST_HEADER_TIMEOUT_MS="+strconv.FormatInt(opts.HeaderTimeout.Milliseconds(), 10),
		"NEXUS_HOST_BODY_TIMEOUT_MS="+strconv.FormatInt(opts.BodyTimeout.Milliseconds(), 10),
	)
	if opts.Connect != "" {
		cmd.Env = append(cmd.Env, "NEXUS_HOST_CONNECT_URL="+opts.Connect, "NEXUS_HOST_LINK_TOKEN="+opts.LinkToken,
			"NEXUS_HOST_LINK_TOKEN_FILE="+opts.LinkTokenFile)
	}
	if restored {
		cmd.Env = append(cmd.Env, "NEXUS_HOST_DOCUMENT_FILENAME="+fileName)
	}
	if r.saveTo != "" {
		cmd.Env = append(cmd.Env, "NEXUS_HOST_SAVE_TO="+r.saveTo)
	}
	if opts.GUI {
		// FreeCAD's start page embeds Chromium, which refuses to run as root
		// inside its sandbox and takes the whole GUI down with it.
		cmd.Env = append(cmd.Env, "QTWEBENGINE_DISABLE_SANDBOX=1")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = statusR.Close()
		return nil, fmt.Errorf("runtime stdout: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), tail: &tailBuffer{max: 4096}}
	stderr := io.Writer(p.tail)
	if opts.Stderr != nil {
		stderr = io.MultiWriter(p.tail, opts.Stderr)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		_ = statusR.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
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
			_, _ = p.tail.Write([]byte(line + "\n"))
			if opts.Stdout != nil {
				_, _ = fmt.Fprintln(opts.Stdout, line)
			}
		}
	}()
	go r.readStatus(p, statusR)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	select {
	case url := <-ready:
		p.url = url
	case <-p.done:
		return nil, fmt.Errorf("%s exited before serving (%v): %s", name, p.err, p.tail.String())
	case <-ctx.Done():
		p.end(10 * time.Second)
		return nil, fmt.Errorf("runtime did not start within %s: %s", opts.StartTimeout, p.tail.String())
	}
	direct := &hostclient.Client{URL: p.url, Token: r.token, HTTP: r.http}
	if err := awaitInfo(ctx, direct, p.done); err != nil {
		p.end(10 * time.Second)
		return nil, fmt.Errorf("runtime at %s: %w: %s", p.url, err, p.tail.String())
	}
	return p, nil
}

// documentFiles answers the file the runtime opens and the file it saves
// every commit to. A Document that does not exist yet opens a new empty
// document, saved there at the first commit; its folder must exist.
func documentFiles(opts Options) (open, saveTo string, err error) {
	if opts.Document == "" {
		return "", "", nil
	}
	abs, err := filepath.Abs(opts.Document)
	if err != nil {
		return "", "", fmt.Errorf("resolve document: %w", err)
	}
	if !opts.NoSave {
		saveTo = abs
	}
	info, err := os.Stat(abs)
	switch {
	case err == nil && info.IsDir():
		return "", "", fmt.Errorf("open document %s: it is a folder, not an .FCStd file", abs)
	case err == nil:
		return abs, saveTo, nil
	case !errors.Is(err, fs.ErrNotExist) || opts.NoSave:
		return "", "", fmt.Errorf("open document: %w", err)
	}
	if info, err := os.Stat(filepath.Dir(abs)); err != nil || !info.IsDir() {
		return "", "", fmt.Errorf("document %s: its folder does not exist", abs)
	}
	return "", saveTo, nil
}

// awaitInfo polls GET /v1/info until the runtime's main loop answers it.
func awaitInfo(ctx context.Context, c *hostclient.Client, exited <-chan struct{}) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := c.Info(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no answer to GET /v1/info: %w", err)
		case <-exited:
			return fmt.Errorf("runtime exited: %w", err)
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
