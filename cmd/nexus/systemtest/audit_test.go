package systemtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/rpc"
	"nexus.local/platform/sqlstore/sqlstoretest"
	"nexus.local/services/modelrouter/replay"
)

// dialGRPC connects to one service as a fellow service of the mesh would:
// every call carries an assertion signed with the mesh's internal key.
func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	signer, err := identity.NewSigner(meshInternalKey, "orchestrator", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, append(signer.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// dialDev connects to the orchestrator of the nexus dev started with env as
// the person at this machine does: over TLS from nexus dev's in-memory CA,
// as the local user a loopback caller is in dev.
func dialDev(t *testing.T, env []string) *grpc.ClientConn {
	t.Helper()
	st := devState(t, env)
	cfg := rpc.TLSConfig{CA: st.CAPEM}
	creds, err := cfg.DialOption()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(st.OrchestratorAddr, creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// followRun reads a run's whole event log.
func followRun(ctx context.Context, t *testing.T, c agentv1.OrchestratorServiceClient, runID string) []*agentv1.StreamChunk {
	t.Helper()
	stream, err := c.StreamRunEvents(ctx, &agentv1.StreamRunEventsRequest{RunId: runID}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	var out []*agentv1.StreamChunk
	for {
		ch, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("follow run %s: %v", runID, err)
		}
		out = append(out, ch)
	}
}

// TestDemoRunAuditSurvivesDevRestart runs the demo on the real FreeCAD
// runtime under nexus dev, checks that the audit log holds the exact bytes
// the host ran with the outcomes that happened (read-only, the rollback, the
// commit), restarts nexus dev on the same SQLite file, and reads them again,
// also through `nexus audit`.
func TestDemoRunAuditSurvivesDevRestart(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	dataDir := t.TempDir()
	env := append(devEnv(t, httpAddr), "NEXUS_DATA_DIR="+dataDir)
	dev := start(t, bin, env, "dev")
	waitHTTP(t, "http://"+httpAddr+"/readyz")
	if !strings.Contains(dev.Output(), "data: "+dataDir) {
		t.Errorf("nexus dev must print its data folder %s:\n%s", dataDir, dev.Output())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--yes", "--views", t.TempDir(), demoPrompt)
	cmd.Env = append(os.Environ(), append(env, "NEXUS_GATEWAY_URL=http://"+httpAddr)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nexus run: %v\n%s", err, out)
	}

	orch := agentv1.NewOrchestratorServiceClient(dialDev(t, env))
	sessions, err := orch.ListSessions(ctx, &agentv1.ListSessionsRequest{})
	if err != nil || len(sessions.GetSessions()) != 1 {
		t.Fatalf("want the demo's one session, got %v %v", sessions, err)
	}
	sess := sessions.GetSessions()[0]
	chunks := followRun(ctx, t, orch, sess.GetLastRunId())
	sent := map[string]*agentv1.ToolCall{}
	reported := map[string]string{}
	for _, c := range chunks {
		if tc := c.GetToolCall(); tc != nil {
			sent[tc.GetToolCallId()] = tc
		}
		if tr := c.GetMetadata().GetToolResult(); tr != nil {
			reported[tr.GetToolCallId()] = tr.GetResult().GetEpilogue().GetContentHash()
		}
	}

	ds, err := orch.ListDispatches(ctx, &agentv1.ListDispatchesRequest{SessionId: sess.GetSessionId(), IncludeCode: true})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		kind    capabilityv1.ScriptKind
		outcome capabilityv1.DispatchOutcome
		errType string
	}
	want := []row{
		{capabilityv1.ScriptKind_SCRIPT_KIND_DATA_COLLECTION, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_READ_ONLY, ""},
		{capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_ROLLED_BACK, "NameError"},
		{capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_ROLLED_BACK, "NameError"},
		{capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED, ""},
		{capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED, ""},
	}
	if len(ds.GetDispatches()) != len(want) {
		t.Fatalf("want %d audit rows, got %d: %v", len(want), len(ds.GetDispatches()), ds.GetDispatches())
	}
	epilogues := 0
	for i, d := range ds.GetDispatches() {
		got := row{d.GetKind(), d.GetOutcome(), d.GetErrorType()}
		if got != want[i] {
			t.Errorf("row %d: want %v, got %v", i, want[i], got)
		}
		code := d.GetStamp().GetCode()
		if sha256Hex(code) != d.GetStamp().GetContentHash() {
			t.Errorf("row %d: the stored bytes do not hash to the stamp %s", i, d.GetStamp().GetContentHash())
		}
		tc := sent[d.GetToolCallId()]
		switch d.GetKind() {
		case capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE:
			if code != tc.GetExecute().GetEpilogue().GetCode() {
				t.Errorf("row %d: stored epilogue is not the epilogue sent to the host", i)
			}
			// The runtime reports the sha256 of the epilogue bytes it ran; it
			// runs the epilogue only after a commit.
			host := reported[d.GetToolCallId()]
			switch d.GetOutcome() {
			case capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED:
				epilogues++
				if sha256Hex(code) != host {
					t.Errorf("row %d: stored epilogue hashes to %s, the host runtime reported %q", i, sha256Hex(code), host)
				}
			default:
				if host != "" {
					t.Errorf("row %d: the host ran the epilogue of a rolled-back script (reported %s)", i, host)
				}
			}
		default:
			if code != tc.GetExecute().GetCode() {
				t.Errorf("row %d: stored script is not the script sent to the host", i)
			}
		}
	}
	if epilogues != 1 {
		t.Errorf("want the committed epilogue checked against the host's report, got %d", epilogues)
	}
	runs, err := orch.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: sess.GetSessionId()})
	if err != nil || len(runs.GetRuns()) != 1 || runs.GetRuns()[0].GetOutcome() != "completed" || runs.GetRuns()[0].GetPrompt() != demoPrompt {
		t.Fatalf("want the completed demo run in the history, got %v %v", runs, err)
	}
	before := ds.GetDispatches()

	interrupt(t, dev)
	start(t, bin, env, "dev")
	waitHTTP(t, "http://"+httpAddr+"/readyz")
	// The restarted nexus dev has a new CA and key; its orchestrator reads
	// the audit log from the same SQLite file.
	orch = agentv1.NewOrchestratorServiceClient(dialDev(t, env))
	after, err := orch.ListDispatches(ctx, &agentv1.ListDispatchesRequest{SessionId: sess.GetSessionId(), IncludeCode: true}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(after.GetDispatches()) != len(before) {
		t.Fatalf("after the restart: %d audit rows, want %d", len(after.GetDispatches()), len(before))
	}
	for i, d := range after.GetDispatches() {
		if d.GetStamp().GetCode() != before[i].GetStamp().GetCode() || d.GetOutcome() != before[i].GetOutcome() {
			t.Errorf("row %d changed across the restart", i)
		}
	}
	t.Logf("%d audit rows before and after restarting nexus dev", len(before))

	// The session's hot state lived in the old process; its owner still
	// reads its audit from the history.
	audit := exec.CommandContext(ctx, bin, "audit", "--wide", "--addr", envValue(env, "NEXUS_ORCHESTRATOR_ADDR"), sess.GetSessionId())
	audit.Env = append(os.Environ(), env...)
	out, err := audit.CombinedOutput()
	if err != nil {
		t.Fatalf("nexus audit: %v\n%s", err, out)
	}
	for _, w := range []string{"1 run(s), 5 dispatch(es)", "completed", "rolled back (NameError)", "committed", "read only", before[1].GetStamp().GetContentHash(), "Build a small room"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("nexus audit output lacks %q:\n%s", w, out)
		}
	}
}

// TestCapabilityReplicasShareOneLog runs two capability processes on one
// PostgreSQL database: what one records the other lists, and both keep it
// across a restart. On SQLite one process keeps its log across a restart.
func TestCapabilityReplicasShareOneLog(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	record := func(t *testing.T, c capabilityv1.CapabilityServiceClient, session string, n int) {
		t.Helper()
		for i := range n {
			code := "print(" + strings.Repeat("1", i+1) + ")"
			_, err := c.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{
				SessionId: session, RunId: "r1", ToolCallId: "call-" + string(rune('a'+i)), Kind: capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION,
				Stamp: &capabilityv1.StampedScript{HostApp: "freecad", CapabilityVersion: "1", Code: code, ContentHash: sha256Hex(code)},
			}}}, grpc.WaitForReady(true))
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(t *testing.T, c capabilityv1.CapabilityServiceClient, session string) int {
		t.Helper()
		r, err := c.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: session}, grpc.WaitForReady(true))
		if err != nil {
			t.Fatal(err)
		}
		return len(r.GetDispatches())
	}
	t.Run("postgres, two replicas", func(t *testing.T) {
		dbEnv := "NEXUS_DATABASE_URL=" + sqlstoretest.Postgres(t)
		key := "NEXUS_INTERNAL_KEY=" + meshInternalKey
		addrA, addrB := freeAddr(t), freeAddr(t)
		a := start(t, bin, []string{dbEnv, key, "NEXUS_GRPC_ADDR=" + addrA}, "capability")
		start(t, bin, []string{dbEnv, key, "NEXUS_GRPC_ADDR=" + addrB}, "capability")
		ca := capabilityv1.NewCapabilityServiceClient(dialGRPC(t, addrA))
		cb := capabilityv1.NewCapabilityServiceClient(dialGRPC(t, addrB))
		record(t, ca, "shared", 3)
		record(t, cb, "shared", 2)
		if na, nb := count(t, ca, "shared"), count(t, cb, "shared"); na != 5 || nb != 5 {
			t.Fatalf("want 5 entries through both replicas, got %d and %d", na, nb)
		}
		interrupt(t, a)
		start(t, bin, []string{dbEnv, key, "NEXUS_GRPC_ADDR=" + addrA}, "capability")
		if n := count(t, ca, "shared"); n != 5 {
			t.Fatalf("after restarting replica A: %d entries, want 5", n)
		}
	})
	t.Run("sqlite, restart", func(t *testing.T) {
		env := []string{"NEXUS_DATA_DIR=" + t.TempDir(), "NEXUS_GRPC_ADDR=" + freeAddr(t), "NEXUS_INTERNAL_KEY=" + meshInternalKey}
		p := start(t, bin, env, "capability")
		c := capabilityv1.NewCapabilityServiceClient(dialGRPC(t, envValue(env, "NEXUS_GRPC_ADDR")))
		record(t, c, "kept", 5)
		interrupt(t, p)
		start(t, bin, env, "capability")
		if n := count(t, c, "kept"); n != 5 {
			t.Fatalf("after the restart: %d entries, want 5", n)
		}
	})
}

// TestDispatchRefusedWhenAuditDatabaseStopped stops the capability service's
// PostgreSQL server before a run: the run's first script is refused with an
// error naming the database, and no tool call is sent toward the host.
func TestDispatchRefusedWhenAuditDatabaseStopped(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	pg := sqlstoretest.StartServer(t)
	capAddr, routerAddr, orchAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	peers := []string{"NEXUS_CAPABILITY_ADDR=" + capAddr, "NEXUS_MODEL_ROUTER_ADDR=" + routerAddr, "NEXUS_REDIS_URL=", "NEXUS_INTERNAL_KEY=" + meshInternalKey}
	start(t, bin, append(peers, "NEXUS_GRPC_ADDR="+capAddr, "NEXUS_DATABASE_URL="+pg.URL), "capability")
	// The model-router alone serves no replay model: the demo's vendor is
	// started as nexus dev starts it.
	replayURL, err := replay.Serve(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	start(t, bin, append(peers, "NEXUS_GRPC_ADDR="+routerAddr, "NEXUS_REPLAY_BASE_URL="+replayURL), "model-router")
	start(t, bin, append(peers, "NEXUS_GRPC_ADDR="+orchAddr), "orchestrator")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	orch := agentv1.NewOrchestratorServiceClient(dialGRPC(t, orchAddr))
	sess, err := orch.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad", Model: "replay/demo"}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	stream, err := orch.Run(ctx, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: demoPrompt})
	if err != nil {
		t.Fatal(err)
	}
	var toolCalls int
	var runErr *agentv1.Error
	for {
		ch, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ch.GetToolCall() != nil {
			toolCalls++
		}
		if e := ch.GetError(); e != nil {
			runErr = e
		}
	}
	if toolCalls != 0 {
		t.Fatalf("%d tool call(s) left for the host with the audit database stopped", toolCalls)
	}
	if runErr == nil || !strings.Contains(runErr.GetMessage(), `PostgreSQL database "postgres" at 127.0.0.1:`) ||
		!strings.Contains(runErr.GetMessage(), "must not leave") {
		t.Fatalf("want an error naming the audit database, got %v", runErr)
	}
	t.Logf("refused: %s: %s", runErr.GetCode(), runErr.GetMessage())
}
