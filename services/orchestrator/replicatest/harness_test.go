package replicatest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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
	redis    *statetest.RedisServer
	vendor   *vendor
	orchs    []*proctest.Process
	replicas []string
	gateways []string
	http     *http.Client
}

func startMesh(t *testing.T, orchEnv ...string) *mesh {
	t.Helper()
	return startMeshWith(t, nil, orchEnv...)
}

// startMeshWith starts the mesh with allEnv given to every process and
// orchEnv to the orchestrators. Each process names itself in its spans'
// service.instance.id.
func startMeshWith(t *testing.T, allEnv []string, orchEnv ...string) *mesh {
	t.Helper()
	bin := nexusBinary(t)
	m := &mesh{redis: statetest.StartRedis(t, "everysec"), vendor: newVendor(t)}
	capAddr, routerAddr := freeAddr(t), freeAddr(t)
	common := append([]string{"NEXUS_LOG_LEVEL=warn", "NEXUS_CAPABILITY_ADDR=" + capAddr, "NEXUS_MODEL_ROUTER_ADDR=" + routerAddr,
		"NEXUS_INTERNAL_KEY=replicatest-internal-key-0123456789"}, allEnv...)
	startProcess(t, bin, "capability", append(common, "NEXUS_GRPC_ADDR="+capAddr), "capability")
	startProcess(t, bin, "model-router", append(common, "NEXUS_GRPC_ADDR="+routerAddr,
		"ANTHROPIC_BASE_URL="+m.vendor.url, "ANTHROPIC_API_KEY=test", "NEXUS_DEFAULT_MODEL="+model), "model-router")

	var orchAddrs []string
	for i := range 3 {
		addr, id := freeAddr(t), fmt.Sprintf("replica-%d", i+1)
		env := append(append([]string{}, common...), "NEXUS_GRPC_ADDR="+addr, "NEXUS_REDIS_URL="+m.redis.URL(), "NEXUS_REPLICA_ID="+id,
			"OTEL_RESOURCE_ATTRIBUTES=service.instance.id="+id)
		m.orchs = append(m.orchs, startProcess(t, bin, id, append(env, orchEnv...), "orchestrator"))
		m.replicas = append(m.replicas, id)
		orchAddrs = append(orchAddrs, addr)
	}
	for i := range 2 {
		addr := freeAddr(t)
		// One user drives every session here, so the per-user rate limit (the
		// gateway's own tests cover it) is off.
		startProcess(t, bin, fmt.Sprintf("gateway-%d", i+1), append(common, "NEXUS_HTTP_ADDR="+addr,
			"NEXUS_ORCHESTRATOR_ADDR="+strings.Join(orchAddrs, ","), "NEXUS_API_KEYS="+apiKey+":ada", "NEXUS_MAX_STREAMS_PER_USER=1000",
			"NEXUS_RATE_LIMIT_RPS=0", fmt.Sprintf("OTEL_RESOURCE_ATTRIBUTES=service.instance.id=gateway-%d", i+1)), "gateway")
		m.gateways = append(m.gateways, "http://"+addr)
	}
	m.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0}}
	t.Cleanup(m.http.CloseIdleConnections)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, p := range m.orchs {
		// An orchestrator that exits at once was refused its configuration.
		select {
		case <-p.Exited():
			t.Fatalf("%s exited during start:\n%s", p.Name, p.Output())
		default:
		}
	}
	for _, g := range m.gateways {
		for {
			if resp, err := m.http.Get(g + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			for _, p := range m.orchs {
				if !p.Running() {
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
	resp, err := m.do(ctx, http.MethodPost, m.gateway()+"/v1/sessions", `{"hostApp":"freecad"}`, nil)
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
