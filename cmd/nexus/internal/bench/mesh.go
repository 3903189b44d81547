package bench

import (
	"context"
	"errors"
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
	"time"
)

// Process supervision: the bench's own redis-server and nexus dev, on free
// ports, started, read and stopped.

// startRedis runs a redis-server of the bench's own on a free port, keeping
// nothing on disk, so the bench never shares keys with anything else.
func startRedis(ctx context.Context) (string, func(), error) {
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start redis-server for --redis auto (is it installed?): %w", err)
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	for start := time.Now(); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return "redis://" + addr + "/0", stop, nil
		}
		if time.Since(start) > 30*time.Second || ctx.Err() != nil {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not answer", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mesh is what the bench measures: nexus dev in a process of its own, or a
// deployment behind a gateway.
type mesh struct {
	c *client
	// traces, when set, receives what nexus dev traces, and the level of
	// traceAt streams traces one run.
	traces  *traceReceiver
	traceAt int
	proc    *exec.Cmd
	exited  chan struct{}
	metrics string
	store   string
	dataDir string
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// freePorts finds n consecutive free loopback ports and returns the first.
func freePorts(n int) (string, error) {
	for range 50 {
		first, err := freeAddr()
		if err != nil {
			return "", err
		}
		_, p, _ := net.SplitHostPort(first)
		port, _ := strconv.Atoi(p)
		ok := port+n <= 65535
		for i := 1; ok && i < n; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+i)))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return first, nil
		}
	}
	return "", errors.New("no run of free ports found")
}

func startMesh(ctx context.Context, o Options, v *vendor, store string, traces *traceReceiver) (*mesh, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, MaxConnsPerHost: 0}}
	if o.Gateway != "" {
		return &mesh{c: &client{base: strings.TrimRight(o.Gateway, "/"), apiKey: o.APIKey, http: hc, vendor: v}, store: store}, nil
	}
	// A port found free can be taken by another process before nexus dev
	// binds it; such a start is tried again on other ports.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		m, out, err := startDev(ctx, o, v, store, hc, traces)
		if err == nil || attempt == attempts || !strings.Contains(out, "address already in use") {
			return m, err
		}
	}
}

// startDev starts nexus dev on free ports, with a data folder and a CLI
// state file of its own, and waits until it is ready; on failure it returns
// what the process printed.
func startDev(ctx context.Context, o Options, v *vendor, store string, hc *http.Client, traces *traceReceiver) (*mesh, string, error) {
	addrs := make([]string, 4)
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, "", fmt.Errorf("find a free port: %w", err)
		}
		addrs[i] = a
	}
	// nexus dev serves each service's metrics and profiles from the metrics
	// port and the three after it.
	metricsAddr, err := freePorts(4)
	if err != nil {
		return nil, "", fmt.Errorf("find free ports for the metrics listeners: %w", err)
	}
	addrs = append(addrs, metricsAddr)
	// The run history and audit log of a bench are thrown away with it.
	dataDir, err := os.MkdirTemp("", "nexus-bench-")
	if err != nil {
		return nil, "", fmt.Errorf("make a data folder for nexus dev: %w", err)
	}
	cmd := exec.Command(o.Binary, "dev", "--no-host")
	cmd.Env = append(os.Environ(),
		"NEXUS_HTTP_ADDR="+addrs[0], "NEXUS_ORCHESTRATOR_ADDR="+addrs[1], "NEXUS_MODEL_ROUTER_ADDR="+addrs[2], "NEXUS_CAPABILITY_ADDR="+addrs[3],
		"NEXUS_METRICS_ADDR="+addrs[4], "ANTHROPIC_BASE_URL="+v.url, "ANTHROPIC_API_KEY=bench", "NEXUS_DEFAULT_MODEL=anthropic/claude-sonnet-4-5",
		"NEXUS_LOG_LEVEL=error", "NEXUS_RATE_LIMIT_RPS=0", "NEXUS_MAX_STREAMS_PER_USER=100000", "NEXUS_DATA_DIR="+dataDir,
		"NEXUS_DEV_STATE="+filepath.Join(dataDir, "dev.json"))
	if store == "redis" {
		cmd.Env = append(cmd.Env, "NEXUS_REDIS_URL="+o.RedisURL)
	}
	if traces != nil {
		cmd.Env = append(cmd.Env, traces.env()...)
	}
	var out strings.Builder
	w := &lockedWriter{w: &out}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dataDir)
		return nil, "", fmt.Errorf("start nexus dev: %w", err)
	}
	exited := watchExit(cmd)
	m := &mesh{c: &client{base: "http://" + addrs[0], http: hc, vendor: v}, traces: traces, traceAt: o.Trace, proc: cmd, exited: exited, metrics: addrs[4], store: store, dataDir: dataDir}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := hc.Get(m.c.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, "", nil
			}
		}
		select {
		case <-exited:
			m.stop()
			return nil, w.String(), fmt.Errorf("nexus dev exited during start:\n%s", w.String())
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			m.stop()
			return nil, w.String(), fmt.Errorf("nexus dev did not get ready: %v\n%s", err, w.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watchExit waits for a started process in the background; the channel
// closes when it has exited and been reaped.
func watchExit(cmd *exec.Cmd) chan struct{} {
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return exited
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.w)
}

func (m *mesh) stop() {
	if m.proc == nil {
		return
	}
	_ = m.proc.Process.Signal(os.Interrupt)
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		_ = m.proc.Process.Kill()
		<-m.exited
	}
	_ = os.RemoveAll(m.dataDir)
}

// cpuTime is the mesh process's user and system CPU time so far.
func (m *mesh) cpuTime() time.Duration {
	if m.proc == nil {
		return 0
	}
	return processCPU(m.proc.Process.Pid)
}

// processCPU is a process's user and system CPU time so far, over all its
// threads, in the kernel's clock ticks.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	// The kernel counts in clock ticks of 1/100 s on Linux.
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// threadCPU is a single-threaded process's time on a CPU so far, in
// nanoseconds (the scheduler's own count, finer than clock ticks); it falls
// back to processCPU where schedstat is not kept.
func threadCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil && ns > 0 {
				return time.Duration(ns)
			}
		}
	}
	return processCPU(pid)
}
