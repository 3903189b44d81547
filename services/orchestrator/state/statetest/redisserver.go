package statetest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"nexus.local/platform/proctest"
)

// RedisServer is a redis-server process a test owns: its own port, its own
// data directory, append-only persistence as a deployment configures it.
// Tests that stop or restart Redis use one of these and never touch the
// shared server.
type RedisServer struct {
	t     testing.TB
	bin   string
	dir   string
	port  int
	fsync string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *bytes.Buffer
}

// StartRedis starts redis-server on a free loopback port with appendonly yes
// and the given appendfsync policy ("everysec" or "always") in a temporary
// directory; the server is killed when the test ends.
func StartRedis(t testing.TB, fsync string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed (apt-get install redis-server): %v", err)
	}
	r := &RedisServer{t: t, bin: bin, dir: t.TempDir(), fsync: fsync}
	r.port = proctest.FreePort(t)
	r.Start()
	t.Cleanup(func() { r.Stop(syscall.SIGKILL) })
	return r
}

// URL is the server's redis:// URL.
func (r *RedisServer) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// Addr is the server's host:port.
func (r *RedisServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// Start starts the server (again, on the same port and data) and returns once
// it answers PING with its data loaded.
func (r *RedisServer) Start() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		r.t.Fatal("redis-server is already running")
	}
	cmd := exec.Command(r.bin,
		"--port", strconv.Itoa(r.port),
		"--bind", "127.0.0.1",
		"--dir", r.dir,
		"--appendonly", "yes",
		"--appendfsync", r.fsync,
		"--save", "",
		"--maxclients", "20000",
	)
	r.log = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	r.cmd = cmd
	r.exited = make(chan struct{})
	go func(exited chan struct{}) { _ = cmd.Wait(); close(exited) }(r.exited)
	if err := waitReady(r.Addr(), r.exited, 60*time.Second); err != nil {
		r.t.Fatalf("redis-server on %s: %v\n%s", r.Addr(), err, r.log.String())
	}
}

// Stop sends sig to the server (SIGTERM: a clean shutdown that flushes the
// append-only file; SIGKILL: a crash) and waits for it to exit.
func (r *RedisServer) Stop(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(sig)
	<-r.exited
	r.cmd = nil
}

// waitReady polls until the server answers PING with PONG (a server still
// loading its append-only file answers LOADING instead).
func waitReady(addr string, exited <-chan struct{}, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited during start")
		default:
		}
		if ping(addr) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ping(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	return bytes.HasPrefix(buf[:n], []byte("+PONG"))
}
