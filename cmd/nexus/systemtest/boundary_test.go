package systemtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/proctest"
	"nexus.local/platform/rpc"
	"nexus.local/services/orchestrator/state/statetest"
)

// mesh is the four services as their own processes.
type mesh struct {
	capAddr, routerAddr, orchAddr, httpAddr string
	procs                                   map[string]*proctest.Process
}

// base is the gateway's URL.
func (m *mesh) base() string { return "http://" + m.httpAddr }

// startMeshProcs starts capability, model-router, orchestrator and gateway,
// each with common plus its own settings, and waits until /readyz answers.
func startMeshProcs(t *testing.T, bin string, common []string, own map[string][]string) *mesh {
	t.Helper()
	m := &mesh{capAddr: freeAddr(t), routerAddr: freeAddr(t), orchAddr: freeAddr(t), httpAddr: freeAddr(t), procs: map[string]*proctest.Process{}}
	peers := append([]string{
		"NEXUS_CAPABILITY_ADDR=" + m.capAddr, "NEXUS_MODEL_ROUTER_ADDR=" + m.routerAddr,
		"NEXUS_ORCHESTRATOR_ADDR=" + m.orchAddr, "NEXUS_REDIS_URL=", "NEXUS_INTERNAL_KEY=" + meshInternalKey,
	}, common...)
	for _, svc := range []struct{ name, listen string }{
		{"capability", "NEXUS_GRPC_ADDR=" + m.capAddr}, {"model-router", "NEXUS_GRPC_ADDR=" + m.routerAddr},
		{"orchestrator", "NEXUS_GRPC_ADDR=" + m.orchAddr}, {"gateway", "NEXUS_HTTP_ADDR=" + m.httpAddr},
	} {
		env := append(append(append([]string{}, peers...), svc.listen), own[svc.name]...)
		m.procs[svc.name] = start(t, bin, env, svc.name)
	}
	waitHTTP(t, m.base()+"/readyz")
	return m
}

// get sends GET path to the gateway with key and returns status and body.
func (m *mesh) get(t *testing.T, path, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, m.base()+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func plainConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestInternalCallsAuthenticated replays the forged caller against the
// services as processes: a caller that reaches the orchestrator's or the
// capability service's port and names a user in metadata, or signs with a
// key of its own, gets Unauthenticated and changes nothing; the CLI with the
// API key the gateway accepts is admitted by the orchestrator as that user.
func TestInternalCallsAuthenticated(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	m := startMeshProcs(t, bin, []string{"NEXUS_API_KEYS=k-alice:alice"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	req, _ := http.NewRequest(http.MethodPost, m.base()+"/v1/sessions", strings.NewReader(`{"hostApp":"freecad"}`))
	req.Header.Set("Authorization", "Bearer k-alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sess struct {
		SessionID string `json:"sessionId"`
		Owner     string `json:"owner"`
	}
	err = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	if err != nil || sess.Owner != "key:alice" {
		t.Fatalf("alice's session: %v, owner %q", err, sess.Owner)
	}

	orch := agentv1.NewOrchestratorServiceClient(plainConn(t, m.orchAddr))
	capc := capabilityv1.NewCapabilityServiceClient(plainConn(t, m.capAddr))
	wrongKey, err := identity.NewSigner("someone-elses-key-0123456789abcdef", "gateway", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	forgeries := map[string]context.Context{
		"x-nexus-user key:alice": metadata.AppendToOutgoingContext(ctx, "x-nexus-user", "key:alice"),
		"x-nexus-user alice":     metadata.AppendToOutgoingContext(ctx, "x-nexus-user", "alice"),
		"assertion signed with another key": metadata.AppendToOutgoingContext(ctx, identity.AssertionKey,
			wrongKey.Sign("key:alice", "nexus.agent.v1.OrchestratorService")),
		"a user's api key at the capability service": metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer k-alice"),
	}
	for name, fctx := range forgeries {
		t.Run(name, func(t *testing.T) {
			_, err := orch.ListSessions(fctx, &agentv1.ListSessionsRequest{})
			if name != "a user's api key at the capability service" && status.Code(err) != codes.Unauthenticated {
				t.Errorf("ListSessions: %v, want Unauthenticated", err)
			}
			_, err = orch.GetSession(fctx, &agentv1.GetSessionRequest{SessionId: sess.SessionID})
			if name != "a user's api key at the capability service" && status.Code(err) != codes.Unauthenticated {
				t.Errorf("GetSession: %v, want Unauthenticated", err)
			}
			_, err = capc.RecordDispatch(fctx, &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{
				User: "key:alice", SessionId: sess.SessionID, RunId: "forged", ToolCallId: "forged",
				Kind: capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, Stamp: &capabilityv1.StampedScript{HostApp: "freecad", ContentHash: "forged"},
			}}})
			if status.Code(err) != codes.Unauthenticated {
				t.Errorf("RecordDispatch: %v, want Unauthenticated", err)
			}
		})
	}
	if code, body := m.get(t, "/v1/sessions/"+sess.SessionID+"/dispatches", "k-alice"); code != http.StatusOK || strings.Contains(body, "forged") {
		t.Errorf("alice's audit log after the forgeries: %d %s", code, body)
	}
	// Probes need no credential.
	checkHealth(t, m.orchAddr)
	checkHealth(t, m.capAddr)

	cli := func(env ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, "sessions")
		cmd.Env = append(os.Environ(), append([]string{"NEXUS_ORCHESTRATOR_ADDR=" + m.orchAddr,
			"NEXUS_DEV_STATE=" + filepath.Join(t.TempDir(), "none.json")}, env...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := cli("NEXUS_API_KEY=k-alice"); err != nil || !strings.Contains(out, sess.SessionID) {
		t.Errorf("nexus sessions with alice's key: %v\n%s", err, out)
	}
	if out, err := cli(); err == nil || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("nexus sessions without a key: %v, want a failure naming Unauthenticated\n%s", err, out)
	}
	if out, err := cli("NEXUS_API_KEY=k-mallory"); err == nil || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("nexus sessions with an unknown key: %v, want Unauthenticated\n%s", err, out)
	}

	// Wrong keys at the gateway are throttled per client address and logged.
	codes := map[int]int{}
	for range 40 {
		code, _ := m.get(t, "/v1/models", "wrong-key")
		codes[code]++
	}
	if codes[http.StatusUnauthorized] == 0 || codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("40 wrong keys: %v, want 401s then 429s", codes)
	}
	out := m.procs["gateway"].Output()
	for _, want := range []string{"authentication failed", "authentication throttled", "remote=127.0.0.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the gateway's log lacks %q", want)
		}
	}
	if !strings.Contains(m.procs["orchestrator"].Output(), "grpc authentication failed") {
		t.Errorf("the orchestrator's log does not record the forged calls")
	}
}

// writeCerts makes a CA and a certificate per service in dir, as Kubernetes
// would mount them, and returns each service's NEXUS_TLS_* settings.
func writeCerts(t *testing.T, dir string, names ...string) (map[string][]string, *rpc.DevCA) {
	t.Helper()
	ca, err := rpc.NewDevCA(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caPath := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, ca.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, n := range names {
		cert, key, err := ca.Issue(n, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		cp, kp := filepath.Join(dir, n+".pem"), filepath.Join(dir, n+"-key.pem")
		if err := os.WriteFile(cp, cert, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kp, key, 0o600); err != nil {
			t.Fatal(err)
		}
		out[n] = []string{"NEXUS_TLS_CA=" + caPath, "NEXUS_TLS_CERT=" + cp, "NEXUS_TLS_KEY=" + kp}
	}
	return out, ca
}

// TestMeshWithCertificates: with certificates configured, the three internal
// hops (gateway to orchestrator, orchestrator to model-router and to
// capability) are TLS with client certificates: the routes that cross them
// work, and at each port a client without a certificate, or without TLS,
// is refused.
func TestMeshWithCertificates(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	names := []string{"capability", "model-router", "orchestrator", "gateway", "stranger"}
	certs, ca := writeCerts(t, t.TempDir(), names...)
	m := startMeshProcs(t, bin, []string{"NEXUS_API_KEYS=k-alice:alice"}, certs)
	for _, path := range []string{"/v1/models", "/v1/hosts", "/readyz"} {
		if code, body := m.get(t, path, "k-alice"); code != http.StatusOK {
			t.Errorf("%s across the TLS hops: %d %s", path, code, body)
		}
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	strangerCert, strangerKey, err := ca.Issue("stranger", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(strangerCert, strangerKey)
	if err != nil {
		t.Fatal(err)
	}
	probe := func(addr string, creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	for _, peer := range []struct{ name, addr string }{{"orchestrator", m.orchAddr}, {"model-router", m.routerAddr}, {"capability", m.capAddr}} {
		t.Run(peer.name, func(t *testing.T) {
			withCert := credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13})
			if err := probe(peer.addr, withCert); err != nil {
				t.Errorf("TLS with a client certificate: %v", err)
			}
			noCert := credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13})
			if err := probe(peer.addr, noCert); err == nil {
				t.Errorf("TLS without a client certificate was admitted")
			} else {
				t.Logf("without a client certificate: %v", err)
			}
			if err := probe(peer.addr, insecure.NewCredentials()); err == nil {
				t.Errorf("plaintext was admitted")
			}
		})
	}
}

// TestReadyzFollowsRedisAndRouter: /readyz answers 503 while the
// orchestrator's Redis is stopped or its model-router is gone, without
// naming where they run, and 200 again once Redis is back.
func TestReadyzFollowsRedisAndRouter(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	redis := statetest.StartRedis(t, "no")
	m := startMeshProcs(t, bin, []string{"NEXUS_API_KEYS=k-alice:alice"},
		map[string][]string{"orchestrator": {"NEXUS_REDIS_URL=" + redis.URL()}})
	waitReady := func(want int) string {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			code, body := m.get(t, "/readyz", "")
			if code == want {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz answered %d %s, not %d, within 90s", code, body, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	redis.Stop(syscall.SIGKILL)
	body := waitReady(http.StatusServiceUnavailable)
	t.Logf("redis stopped: /readyz %s", strings.TrimSpace(body))
	if strings.Contains(body, redis.Addr()) || strings.Contains(body, "6379") {
		t.Errorf("/readyz names Redis's address: %s", body)
	}
	redis.Start()
	waitReady(http.StatusOK)

	if _, err := m.procs["model-router"].Interrupt(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	body = waitReady(http.StatusServiceUnavailable)
	t.Logf("model-router stopped: /readyz %s", strings.TrimSpace(body))
}
