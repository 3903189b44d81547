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
	"strings"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/app/apptest"
	"nexus.local/platform/config"
	"nexus.local/platform/identity"
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

	routerEnv := map[string]string{
		"ANTHROPIC_BASE_URL":  vendorURL,
		"ANTHROPIC_API_KEY":   "test",
		"NEXUS_DEFAULT_MODEL": Model,
	}
	// The model-router exports its spans where the orchestrator does, so a
	// run's trace is whole.
	for k, v := range env {
		if strings.HasPrefix(k, "OTEL_") {
			routerEnv[k] = v
		}
	}
	router := routertest.Start(t, routerEnv)

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
	capAddr := apptest.Serve(ctx, t, capability.ServiceName, capEnv, capability.Builder(capCfg))

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
	addr := apptest.Serve(ctx, t, orchestrator.ServiceName, l, orchestrator.Builder(cfg))

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
