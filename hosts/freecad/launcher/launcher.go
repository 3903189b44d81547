// Package launcher starts and stops the FreeCAD host runtime (hosts/freecad) as
// a child process, and speaks its JSON-over-HTTP contract
// (proto/nexus/host/v1). The add-in's Python is embedded, so a binary built
// from here runs the runtime from any directory.
//
// The launcher serves the runtime's public address itself and hands each
// request to the FreeCAD process behind it: it refuses bad requests before
// reading them, ends a process whose script outlived its timeout, and
// restarts one that ended, on the document as of the last commit, answering
// the call in flight with a clear error.
package launcher

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"nexus.local/hosts/freecad"
	"nexus.local/platform/config"
	"nexus.local/platform/hostclient"
)

// readyMarker is the line the runtime prints once it listens.
const readyMarker = "NEXUS_RUNTIME_READY "

// Options says how to run the FreeCAD runtime. The env tags let a command
// load defaults from the environment and then apply its flags.
type Options struct {
	// Addr is the loopback address to serve on; port 0 picks a free port.
	// The default repeats hostclient.DefaultAddr: a struct tag takes no constant.
	Addr string `env:"NEXUS_HOST_ADDR, default=127.0.0.1:7723"`
	// Document is the person's .FCStd file: it is opened (a file that does
	// not exist yet is created at the first commit) and every commit is
	// saved to it; empty opens a new empty document that is saved nowhere.
	Document string `env:"NEXUS_HOST_DOCUMENT"`
	// NoSave opens Document without saving commits to it.
	NoSave bool `env:"NEXUS_HOST_NO_SAVE, default=false"`
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
	// KillGrace is how long a script may run past its own timeout before the
	// launcher ends the FreeCAD process and restarts it.
	KillGrace time.Duration `env:"NEXUS_HOST_KILL_GRACE, default=3s"`
	// HeaderTimeout bounds how long a request's headers may take to arrive.
	HeaderTimeout time.Duration `env:"NEXUS_HOST_HEADER_TIMEOUT, default=10s"`
	// BodyTimeout bounds how long a request's body may take to arrive.
	BodyTimeout time.Duration `env:"NEXUS_HOST_BODY_TIMEOUT, default=1m"`
	// Connect links the runtime to Nexus at these gateway URLs
	// (comma-separated): it carries its own calls over the host link.
	Connect string `env:"NEXUS_HOST_CONNECT"`
	// LinkToken is the host token to link with; empty pairs (or reuses the
	// token kept in LinkTokenFile).
	LinkToken string `env:"NEXUS_HOST_LINK_TOKEN"`
	// LinkTokenFile keeps the token a pairing gave, so a restart links again.
	LinkTokenFile string `env:"NEXUS_HOST_LINK_TOKEN_FILE"`
	// Stdout and Stderr receive the runtime's own output; nil discards it.
	Stdout io.Writer
	Stderr io.Writer
	// OnRestart, when set, hears why the FreeCAD process ended each time the
	// launcher restarted it, so the person can be told.
	OnRestart func(reason string)
}

// LoadOptions reads Options from l.
func LoadOptions(ctx context.Context, l config.Lookuper) (Options, error) {
	o, err := config.From[Options](ctx, l)
	if err != nil {
		return o, fmt.Errorf("load host runtime options: %w", err)
	}
	return o, nil
}

// Runtime is a running FreeCAD host runtime: the launcher's own HTTP server
// on the public address, in front of one FreeCAD process that it restarts
// when a script wedges or kills it.
type Runtime struct {
	opts   Options
	url    string
	token  string
	dir    string
	lock   *os.File // held while the runtime lives (see makeRuntimeDir)
	script string
	srv    *http.Server
	ln     net.Listener
	http   *http.Client

	// saveTo is the person's file every commit is saved to ("" for none).
	saveTo string

	mu         sync.Mutex
	proc       *process
	document   string
	fileName   string
	restored   bool
	stopping   bool
	restarts   int
	lastReason string

	done chan struct{}
	err  error
	stop sync.Once
	// workers are the HTTP server's and the supervisor's goroutines; Stop
	// waits for them, so nothing of the runtime outlives it.
	workers sync.WaitGroup
	Client  *hostclient.Client
}

// SavesTo is the person's file every commit is saved to, or "" when commits
// are saved to no file.
func (r *Runtime) SavesTo() string { return r.saveTo }

// URL is the runtime's base URL, e.g. http://127.0.0.1:7723.
func (r *Runtime) URL() string { return r.url }

// Token is the pairing token the runtime requires.
func (r *Runtime) Token() string { return r.token }

// BackendURL is the address of the FreeCAD process's own server, which only
// the launcher calls; it changes when the process is restarted.
func (r *Runtime) BackendURL() string { return r.current().url }

// Restarts counts how often the FreeCAD process was restarted.
func (r *Runtime) Restarts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restarts
}

// PID is the process id of the running FreeCAD process.
func (r *Runtime) PID() int { return r.current().cmd.Process.Pid }

// Wait blocks until the runtime ends (Stop, or a restart that failed) and
// answers why.
func (r *Runtime) Wait() error {
	<-r.done
	return r.err
}

// Stop ends the runtime and everything it started (xvfb-run's X server and
// any process a script started, detached or not), first politely, then by
// force, and removes its temporary files.
func (r *Runtime) Stop() error {
	r.shutdown()
	r.workers.Wait()
	return nil
}

// shutdown ends the process and the server once. The supervisor calls it
// (it cannot wait for itself); everyone else calls Stop.
func (r *Runtime) shutdown() {
	r.stop.Do(func() {
		r.mu.Lock()
		r.stopping = true
		p := r.proc
		r.mu.Unlock()
		if r.srv != nil {
			_ = r.srv.Close()
		}
		if p != nil {
			p.end(10 * time.Second)
		}
		_ = os.RemoveAll(r.dir)
		_ = r.lock.Close()
		close(r.done)
	})
}

// Start launches the runtime and returns once GET /v1/info answers. The
// runtime ends when ctx ends or Stop is called.
func Start(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.Addr == "" {
		opts.Addr = hostclient.DefaultAddr
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
	if opts.KillGrace <= 0 {
		opts.KillGrace = 3 * time.Second
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = 10 * time.Second
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = time.Minute
	}
	if opts.Token == "" {
		t, err := newToken()
		if err != nil {
			return nil, err
		}
		opts.Token = t
	}
	open, saveTo, err := documentFiles(opts)
	if err != nil {
		return nil, err
	}
	dir, lock, err := makeRuntimeDir()
	if err != nil {
		return nil, err
	}
	// Every return below that does not answer the runtime removes dir.
	started := false
	defer func() {
		if !started {
			_ = lock.Close()
		}
	}()
	script, err := freecad.WriteRuntime(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("write runtime: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "checkpoints"), 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("create checkpoint dir: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	r := &Runtime{
		opts: opts, url: "http://" + ln.Addr().String(), token: opts.Token, dir: dir, lock: lock, script: script, ln: ln,
		http: &http.Client{}, document: open, saveTo: saveTo, done: make(chan struct{}),
	}
	startCtx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	p, err := r.launch(startCtx)
	if err != nil {
		_ = ln.Close()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	r.proc = p
	started = true
	r.srv = &http.Server{
		Handler:           http.HandlerFunc(r.serve),
		ReadHeaderTimeout: opts.HeaderTimeout,
		IdleTimeout:       5 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	r.workers.Add(2)
	go func() {
		defer r.workers.Done()
		_ = r.srv.Serve(ln)
	}()
	go func() {
		defer r.workers.Done()
		r.supervise(ctx)
	}()
	r.Client = &hostclient.Client{URL: r.url, Token: r.token, HTTP: &http.Client{}}
	if err := awaitInfo(startCtx, r.Client, p.done); err != nil {
		_ = r.Stop()
		return nil, fmt.Errorf("runtime at %s: %w: %s", r.url, err, p.tail.String())
	}
	return r, nil
}
