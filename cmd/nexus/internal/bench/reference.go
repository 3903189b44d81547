package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A reference is a plain forwarding proxy measured in the same run as the
// mesh, one hop between the bench's clients and the loopback vendor, so that
// the mesh's cost reads as a ratio to what forwarding alone costs.

// ReferenceProxy names the proxies a bench can measure beside the mesh.
type ReferenceProxy int

const (
	// ReferenceNone measures no reference.
	ReferenceNone ReferenceProxy = iota
	// ReferenceNginx is Debian's nginx with proxy_buffering off.
	ReferenceNginx
)

func (r ReferenceProxy) String() string {
	if r == ReferenceNginx {
		return "nginx"
	}
	return "none"
}

// ParseReference reads the --reference flag.
func ParseReference(s string) (ReferenceProxy, error) {
	switch s {
	case "nginx":
		return ReferenceNginx, nil
	case "none", "":
		return ReferenceNone, nil
	}
	return ReferenceNone, fmt.Errorf("--reference: %q is not a reference proxy (nginx or none)", s)
}

// Reference is what the reference proxy measured.
type Reference struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Levels are the same concurrencies as the mesh's, each with the
	// proxy's added latency and its process's CPU time per chunk.
	Levels []Level `json:"levels"`
}

// proxy is a running reference, one process whose CPU time is read: nginx
// with no master, or the floor relay.
type proxy struct {
	name    string
	url     string
	version string
	proc    *exec.Cmd
	exited  chan struct{}
	dir     string
	http    *http.Client
	// cpu reads the process's CPU time: threadCPU for nginx's one thread,
	// processCPU for a Go process's many.
	cpu func(pid int) time.Duration
}

func findNginx() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	// Debian installs it under /usr/sbin, which a user's PATH may not hold.
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("--reference nginx: no nginx binary on PATH or in /usr/sbin (scripts/install-deps.sh installs Debian's nginx; --reference none leaves the reference out)")
}

// nginxConf is one hop with nothing buffered: each chunk the vendor sends is
// forwarded as it arrives, over kept-alive upstream connections, as a
// proxy in front of a streaming API is set up.
const nginxConf = `daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 65536;
error_log %[1]s/error.log error;
pid %[1]s/nginx.pid;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream vendor {
    server %[2]s;
    keepalive 1024;
  }
  server {
    listen %[3]s;
    location / {
      proxy_pass http://vendor;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
`

func startNginx(ctx context.Context, v *vendor, hc *http.Client) (*proxy, error) {
	bin, err := findNginx()
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, bin, "-v").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("run %s -v: %w: %s", bin, err, out)
	}
	version := strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "nginx version:")), "nginx/")
	dir, err := os.MkdirTemp("", "nexus-bench-nginx-")
	if err != nil {
		return nil, fmt.Errorf("make a folder for nginx: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("find a free port for nginx: %w", err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, dir, strings.TrimPrefix(v.url, "http://"), addr), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("write the nginx configuration: %w", err)
	}
	// -e sends the errors nginx logs before it reads its configuration
	// into the folder too, not to the compiled-in /var/log path.
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"))
	var buf strings.Builder
	w := &lockedWriter{w: &buf}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	p := &proxy{name: "nginx", url: "http://" + addr, version: version, proc: cmd, exited: watchExit(cmd), dir: dir, http: hc, cpu: threadCPU}
	if err := p.waitListening(ctx, addr, func() string {
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return w.String() + string(log)
	}); err != nil {
		return nil, err
	}
	return p, nil
}

// waitListening waits until the proxy accepts connections on addr; if it
// exits first or does not answer, it is stopped and the error carries what
// it printed.
func (p *proxy) waitListening(ctx context.Context, addr string, output func() string) error {
	for start := time.Now(); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.exited:
			out := output()
			p.stop()
			return fmt.Errorf("%s exited during start: %s", p.name, out)
		default:
		}
		if time.Since(start) > 30*time.Second || ctx.Err() != nil {
			p.stop()
			return fmt.Errorf("%s on %s did not answer", p.name, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proxy) stop() {
	_ = p.proc.Process.Kill()
	<-p.exited
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
}

// level reads n turns through the proxy and n straight from the vendor at
// the same time, as the mesh's levels do.
func (p *proxy) level(ctx context.Context, v *vendor, n int) Level {
	l := Level{Store: p.name, Streams: n}
	viaS, directS := make([]sample, n), make([]sample, n)
	via := &vendor{url: p.url}
	cpu0 := p.cpu(p.proc.Process.Pid)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { viaS[i] = direct(ctx, p.http, via) })
		wg.Go(func() { directS[i] = direct(ctx, p.http, v) })
	}
	wg.Wait()
	cpu := p.cpu(p.proc.Process.Pid) - cpu0
	var through, beside []sample
	for i := range n {
		if err := viaS[i].err; err != nil || viaS[i].chunks == 0 {
			if l.Errors == 0 {
				l.FirstError = fmt.Sprintf("a stream through %s read no chunk: %v", p.name, err)
			}
			l.Errors++
			continue
		}
		l.Chunks += viaS[i].chunks
		through, beside = append(through, viaS[i]), append(beside, directS[i])
	}
	l.setLatencies(through, beside)
	if l.Chunks > 0 && cpu > 0 {
		l.CPUMicrosPerChunk = float64(cpu.Microseconds()) / float64(l.Chunks)
	}
	return l
}
