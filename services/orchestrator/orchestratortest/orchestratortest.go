// Package orchestratortest starts the orchestrator with its real peers in
// process, each on its own loopback gRPC listener: the model-router (pointed
// at a loopback vendor server) and the capability service. Tests of the
// orchestrator and of the services in front of it use it.
package orchestratortest

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/identity"
	"nexus.local/platform/rpc"
	"nexus.local/services/capability"
	"nexus.local/services/modelrouter/routertest"
	"nexus.local/services/orchestrator"
)

// InternalKey is the internal key (NEXUS_INTERNAL_KEY) the stack's services
// share; a test's gateway signs with it too.
const InternalKey = "test-internal-key-0123456789abcdef"

// Model is the catalog model the stack's sessions use by default.
const Model = "anthropic/claude-sonnet-4-5"

// Stack is a running orchestrator with its peers.
type Stack struct {
	// Client calls the orchestrator over real gRPC.
	Client agentv1.OrchestratorServiceClient
	// Addr is the orchestrator's loopback address.
	Addr string
	// RouterAddr and CapabilityAddr are its peers' addresses.
	RouterAddr, CapabilityAddr string
}

// Start runs the stack until the test ends. vendorURL is the loopback
// Anthropic server (ANTHROPIC_BASE_URL); env overrides orchestrator settings
// such as NEXUS_MAX_FIX_RETRIES.
func Start(t testing.TB, vendorURL string, env map[string]string) *Stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	router := routertest.Start(t, map[string]string{
		"ANTHROPIC_BASE_URL":  vendorURL,
		"ANTHROPIC_API_KEY":   "test",
		"NEXUS_DEFAULT_MODEL": Model,
	})

	// Both services keep what must last in one database: a SQLite file in a
	// folder of the test's own unless env names another database.
	dbEnv := map[string]string{"NEXUS_DATA_DIR": t.TempDir()}
	capVars := map[string]string{"NEXUS_INTERNAL_KEY": InternalKey}
	for _, k := range []string{"NEXUS_DATA_DIR", "NEXUS_DATABASE_URL"} {
		if v, ok := env[k]; ok {
			dbEnv[k] = v
		}
	}
	maps.Copy(capVars, dbEnv)
	capEnv := config.Map(capVars)
	capCfg, err := capability.LoadConfig(ctx, capEnv)
	if err != nil {
		t.Fatalf("capability config: %v", err)
	}
	capAddr := serve(ctx, t, capability.ServiceName, capEnv, capability.Builder(capCfg))

	orchEnv := map[string]string{
		"NEXUS_MODEL_ROUTER_ADDR": router.Addr,
		"NEXUS_CAPABILITY_ADDR":   capAddr,
		"NEXUS_REPLICA_ID":        "test-replica",
		"NEXUS_INTERNAL_KEY":      InternalKey,
	}
	maps.Copy(orchEnv, dbEnv)
	maps.Copy(orchEnv, env)
	l := config.Map(orchEnv)
	cfg, err := orchestrator.LoadConfig(ctx, l)
	if err != nil {
		t.Fatalf("orchestrator config: %v", err)
	}
	addr := serve(ctx, t, orchestrator.ServiceName, l, orchestrator.Builder(cfg))

	// The client signs its calls as the gateway does, for the user As names.
	e, err := app.NewEnv(ctx, "orchestratortest", config.Map(map[string]string{"NEXUS_INTERNAL_KEY": InternalKey}))
	if err != nil {
		t.Fatalf("client env: %v", err)
	}
	conn, err := e.Dial(addr, "orchestrator")
	if err != nil {
		t.Fatalf("dial orchestrator: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &Stack{Client: agentv1.NewOrchestratorServiceClient(conn), Addr: addr, RouterAddr: router.Addr, CapabilityAddr: capAddr}
}

// serve builds a component and serves it on a loopback listener until ctx
// ends; it returns the listener's address.
func serve(ctx context.Context, t testing.TB, service string, l config.Lookuper, build app.Builder) string {
	t.Helper()
	e, err := app.NewEnv(ctx, service, l)
	if err != nil {
		t.Fatalf("%s env: %v", service, err)
	}
	c, err := build(e.Context(ctx), e)
	if err != nil {
		t.Fatalf("start %s: %v", service, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, users := c.(app.UserFacing)
	opts, err := e.ServerOptions(ctx, users)
	if err != nil {
		t.Fatalf("%s server: %v", service, err)
	}
	srv := rpc.NewServer(e.Tel, e.Log, opts...)
	c.Register(srv)
	srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for %s: %v", service, err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// As returns ctx calling as user, the way the gateway passes the caller: the
// stack's client signs an assertion for user.
func As(ctx context.Context, user string) context.Context { return identity.Outgoing(ctx, user) }

// Courier answers a tool call the way a browser or the CLI would after
// running it on the host; returning nil leaves the call unanswered.
type Courier func(tc *agentv1.ToolCall) *hostv1.HostResult

// RunAndServe starts a run and reads it to its end, answering each tool call
// through SubmitToolResult with what courier returns. It returns every chunk
// in the order received.
func RunAndServe(ctx context.Context, c agentv1.OrchestratorServiceClient, req *agentv1.RunRequest, courier Courier) ([]*agentv1.StreamChunk, error) {
	stream, err := c.Run(ctx, req)
	if err != nil {
		return nil, err
	}
	var chunks []*agentv1.StreamChunk
	for {
		ch, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return chunks, nil
		}
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, ch)
		tc := ch.GetToolCall()
		if tc == nil || courier == nil {
			continue
		}
		res := courier(tc)
		if res == nil {
			continue
		}
		if _, err := c.SubmitToolResult(ctx, &agentv1.SubmitToolResultRequest{
			SessionId: req.GetSessionId(), ToolCallId: tc.GetToolCallId(), ResultToken: tc.GetResultToken(), Result: res,
		}); err != nil {
			return chunks, err
		}
	}
}
