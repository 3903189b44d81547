package replicatest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/proctest"
	"nexus.local/services/orchestrator/state/statetest"
)

const (
	apiKey = "k-ada"
	model  = "anthropic/claude-sonnet-4-5"
)

var buildOnce struct {
	sync.Once
	bin string
	err error
}

// nexusBinary builds cmd/nexus once per test binary.
func nexusBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nexus-replicatest-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.bin, buildOnce.err = proctest.Build("nexus.local/cmd/nexus", filepath.Join(dir, "nexus"))
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
}

func freeAddr(t *testing.T) string { return proctest.FreeAddr(t) }

func startProcess(t *testing.T, bin, name string, env []string, args ...string) *proctest.Process {
	t.Helper()
	return proctest.Start(t, bin, name, env, args...)
}

// mesh is capability, model-router, three orchestrators and two gateways,
// each its own process, sharing one Redis server the test owns.
type mesh struct {
	t        *testing.T
	bin      string
	redis    *statetest.RedisServer
	vendor   *vendor
	orchs    []*proctest.Process
	orchEnvs [][]string
	orchAddr []string
	replicas []string
	gateways []string
	http     *http.Client
}

// meshOptions shape a mesh; the zero value is three running replicas and an
// instant vendor.
type meshOptions struct {
	// allEnv goes to every process, orchEnv to the orchestrators.
	allEnv, orchEnv []string
	// running is how many replicas start with the mesh (0 means all); the
	// others start with startReplica, on addresses the gateways already know.
	running int
	// vendor replaces the instant loopback vendor.
	vendor *vendor
}

func startMesh(t *testing.T, orchEnv ...string) *mesh {
	t.Helper()
	return startMeshOpts(t, meshOptions{orchEnv: orchEnv})
}

// startMeshWith starts the mesh with allEnv given to every process and
// orchEnv to the orchestrators. Each process names itself in its spans'
// service.instance.id.
func startMeshWith(t *testing.T, allEnv []string, orchEnv ...string) *mesh {
	t.Helper()
	return startMeshOpts(t, meshOptions{allEnv: allEnv, orchEnv: orchEnv})
}

func startMeshOpts(t *testing.T, o meshOptions) *mesh {
	t.Helper()
	m := &mesh{t: t, bin: nexusBinary(t), redis: statetest.StartRedis(t, "everysec"), vendor: o.vendor}
	if m.vendor == nil {
		m.vendor = newVendor(t)
	}
	capAddr, routerAddr := freeAddr(t), freeAddr(t)
	common := append([]string{"NEXUS_LOG_LEVEL=warn", "NEXUS_CAPABILITY_ADDR=" + capAddr, "NEXUS_MODEL_ROUTER_ADDR=" + routerAddr,
		"NEXUS_INTERNAL_KEY=replicatest-internal-key-0123456789"}, o.allEnv...)
	startProcess(t, m.bin, "capability", append(common, "NEXUS_GRPC_ADDR="+capAddr), "capability")
	startProcess(t, m.bin, "model-router", append(common, "NEXUS_GRPC_ADDR="+routerAddr,
		"ANTHROPIC_BASE_URL="+m.vendor.url, "ANTHROPIC_API_KEY=test", "NEXUS_DEFAULT_MODEL="+model), "model-router")

	running := o.running
	if running == 0 {
		running = 3
	}
	for i := range 3 {
		addr, id := freeAddr(t), fmt.Sprintf("replica-%d", i+1)
		env := append(append([]string{}, common...), "NEXUS_GRPC_ADDR="+addr, "NEXUS_REDIS_URL="+m.redis.URL(), "NEXUS_REPLICA_ID="+id,
			"OTEL_RESOURCE_ATTRIBUTES=service.instance.id="+id)
		m.orchEnvs = append(m.orchEnvs, append(env, o.orchEnv...))
		m.orchs = append(m.orchs, nil)
		m.replicas = append(m.replicas, id)
		m.orchAddr = append(m.orchAddr, addr)
		if i < running {
			m.startReplica(i)
		}
	}
	for i := range 2 {
		addr := freeAddr(t)
		// One user drives every session here, so the per-user rate limit (the
		// gateway's own tests cover it) is off.
		startProcess(t, m.bin, fmt.Sprintf("gateway-%d", i+1), append(common, "NEXUS_HTTP_ADDR="+addr,
			"NEXUS_ORCHESTRATOR_ADDR="+strings.Join(m.orchAddr, ","), "NEXUS_API_KEYS="+apiKey+":ada", "NEXUS_MAX_STREAMS_PER_USER=1000",
			"NEXUS_RATE_LIMIT_RPS=0", fmt.Sprintf("OTEL_RESOURCE_ATTRIBUTES=service.instance.id=gateway-%d", i+1)), "gateway")
		m.gateways = append(m.gateways, "http://"+addr)
	}
	m.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0}}
	t.Cleanup(m.http.CloseIdleConnections)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, g := range m.gateways {
		for {
			if resp, err := m.http.Get(g + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			for _, p := range m.orchs {
				if p != nil && !p.Running() {
					t.Fatalf("%s exited during start:\n%s", p.Name, p.Output())
				}
			}
			select {
			case <-ctx.Done():
				t.Fatalf("gateway %s not ready: %v", g, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return m
}

// startReplica starts orchestrator i on its address and waits until it
// accepts connections.
func (m *mesh) startReplica(i int) {
	m.t.Helper()
	p := startProcess(m.t, m.bin, m.replicas[i], m.orchEnvs[i], "orchestrator")
	m.orchs[i] = p
	deadline := time.Now().Add(time.Minute)
	for {
		if c, err := net.DialTimeout("tcp", m.orchAddr[i], time.Second); err == nil {
			c.Close()
			return
		}
		if !p.Running() {
			m.t.Fatalf("%s exited during start:\n%s", p.Name, p.Output())
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("%s does not accept connections on %s", p.Name, m.orchAddr[i])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gateway returns one of the gateways at random, as a load balancer would.
func (m *mesh) gateway() string { return m.gateways[rand.IntN(len(m.gateways))] }

func (m *mesh) do(ctx context.Context, method, url string, body string, header map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return m.http.Do(req)
}

func (m *mesh) createSession(ctx context.Context) (string, error) {
	resp, err := m.do(ctx, http.MethodPost, m.gateway()+"/v1/sessions", `{"hostApp":"freecad","reviewPolicy":"REVIEW_POLICY_NONE"}`, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("create session: %s: %s", resp.Status, b)
	}
	var s agentv1.Session
	if err := protojson.Unmarshal(b, &s); err != nil {
		return "", fmt.Errorf("create session: %w: %s", err, b)
	}
	return s.GetSessionId(), nil
}

// postResult posts a tool result through a gateway and returns the HTTP status.
func (m *mesh) postResult(ctx context.Context, gateway, sessionID string, tc *agentv1.ToolCall, stdout string) (int, error) {
	body := fmt.Sprintf(`{"toolCallId":%q,"resultToken":%q,"result":{"committed":false,"stdout":%q}}`,
		tc.GetToolCallId(), tc.GetResultToken(), stdout)
	resp, err := m.do(ctx, http.MethodPost, gateway+"/v1/sessions/"+sessionID+"/tool-results", body, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// events reads server-sent events from resp until it ends or fn returns
// false; each event's data is a StreamChunk (events without an id are the
// gateway's own, e.g. an error frame for a broken stream).
func events(resp *http.Response, fn func(c *agentv1.StreamChunk) bool) error {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimSpace(strings.TrimPrefix(line, "data:")))
		case line == "" && data.Len() > 0:
			var c agentv1.StreamChunk
			if err := protojson.Unmarshal([]byte(data.String()), &c); err != nil {
				return fmt.Errorf("event data: %w: %s", err, data.String())
			}
			data.Reset()
			if !fn(&c) {
				return nil
			}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
