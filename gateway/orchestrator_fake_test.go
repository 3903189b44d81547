package gateway

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/logging"
	"nexus.local/platform/rpc"
	"nexus.local/platform/serve"
	"nexus.local/platform/telemetry"
)

// testOrchestrator is a small OrchestratorService over gRPC with the
// ownership rules and the event log semantics the gateway relies on: a run
// outlives the stream that started it, StreamRunEvents replays after
// after_seq and follows live, another caller's session is NotFound.
type testOrchestrator struct {
	agentv1.UnimplementedOrchestratorServiceServer
	srv  *rpc.Server
	addr string

	mu       sync.Mutex
	sessions map[string]*agentv1.Session
	runs     map[string]*testRun
	// script is what a run does; it emits chunks and may wait for results.
	script func(ctx context.Context, run *testRun)
	// calls counts the RPCs that reached the orchestrator.
	calls atomic.Int64
	// users records the caller of every RPC, traces its traceparent.
	users, traces sync.Map
}

type testRun struct {
	id, session, owner string
	results            chan *agentv1.SubmitToolResultRequest

	mu      sync.Mutex
	events  []*agentv1.StreamChunk
	done    bool
	changed chan struct{}
}

func (r *testRun) emit(c *agentv1.StreamChunk) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.Seq = int64(len(r.events) + 1)
	c.RunId, c.SessionId = r.id, r.session
	r.events = append(r.events, c)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *testRun) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	close(r.changed)
	r.changed = make(chan struct{})
}

// follow sends every event after after, then live ones until the run ends.
func (r *testRun) follow(ctx context.Context, after int64, send func(*agentv1.StreamChunk) error) error {
	for {
		r.mu.Lock()
		var pending []*agentv1.StreamChunk
		if int(after) < len(r.events) {
			pending = r.events[after:]
		}
		done, changed := r.done, r.changed
		r.mu.Unlock()
		for _, c := range pending {
			if err := send(c); err != nil {
				return err
			}
			after = c.Seq
		}
		if done && len(pending) == 0 {
			return nil
		}
		if len(pending) > 0 {
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// startTestOrchestrator serves a testOrchestrator on loopback until the test ends.
func startTestOrchestrator(t testing.TB, script func(ctx context.Context, run *testRun)) *testOrchestrator {
	t.Helper()
	tel, err := telemetry.New(t.Context(), "orchestrator-test", telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	o := &testOrchestrator{sessions: map[string]*agentv1.Session{}, runs: map[string]*testRun{}, script: script}
	// The fake checks callers the way the real orchestrator does: by the
	// assertion the gateway signs with the internal key.
	verifier, err := identity.NewVerifier(testInternalKey, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	auth := identity.NewServerAuth(verifier, nil, false, logging.FromContext(t.Context()))
	o.srv = rpc.NewServer(tel, logging.FromContext(t.Context()), auth.ServerOptions()...)
	agentv1.RegisterOrchestratorServiceServer(o.srv, o)
	o.srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.addr = lis.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = serve.GRPC(ctx, lis, o.srv.Server) }()
	t.Cleanup(func() { cancel(); <-done })
	return o
}

func (o *testOrchestrator) caller(ctx context.Context, method string) string {
	o.calls.Add(1)
	u := identity.FromIncoming(ctx)
	o.users.Store(method, u)
	o.traces.Store(method, traceparentOf(ctx))
	return u
}

func (o *testOrchestrator) session(ctx context.Context, method, id string) (*agentv1.Session, error) {
	user := o.caller(ctx, method)
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.sessions[id]
	if !ok || s.Owner != user {
		return nil, status.Errorf(codes.NotFound, "session %q not found", id)
	}
	return s, nil
}

func (o *testOrchestrator) CreateSession(ctx context.Context, req *agentv1.CreateSessionRequest) (*agentv1.Session, error) {
	user := o.caller(ctx, "CreateSession")
	if req.GetHostApp() == "" {
		return nil, status.Error(codes.InvalidArgument, "host_app is required")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s := &agentv1.Session{SessionId: fmt.Sprintf("s%d", len(o.sessions)+1), HostApp: req.GetHostApp(), Model: "anthropic/claude-test", Owner: user}
	o.sessions[s.SessionId] = s
	return s, nil
}

func (o *testOrchestrator) GetSession(ctx context.Context, req *agentv1.GetSessionRequest) (*agentv1.Session, error) {
	return o.session(ctx, "GetSession", req.GetSessionId())
}

func (o *testOrchestrator) ListModels(ctx context.Context, _ *agentv1.ListModelsRequest) (*agentv1.ListModelsResponse, error) {
	o.caller(ctx, "ListModels")
	return &agentv1.ListModelsResponse{DefaultModel: "anthropic/claude-test", Models: []*agentv1.Model{{Id: "anthropic/claude-test"}}}, nil
}

func (o *testOrchestrator) Run(req *agentv1.RunRequest, stream agentv1.OrchestratorService_RunServer) error {
	s, err := o.session(stream.Context(), "Run", req.GetSessionId())
	if err != nil {
		return err
	}
	if req.GetPrompt() == "" {
		return status.Error(codes.InvalidArgument, "prompt is required")
	}
	o.mu.Lock()
	run := &testRun{id: fmt.Sprintf("r%d", len(o.runs)+1), session: s.SessionId, owner: s.Owner,
		results: make(chan *agentv1.SubmitToolResultRequest, 1), changed: make(chan struct{})}
	o.runs[run.id] = run
	s.ActiveRunId, s.LastRunId = run.id, run.id
	o.mu.Unlock()
	// The run lives on when the stream that started it goes away.
	go func() {
		defer run.finish()
		o.script(context.WithoutCancel(stream.Context()), run)
	}()
	return run.follow(stream.Context(), 0, stream.Send)
}

func (o *testOrchestrator) StreamRunEvents(req *agentv1.StreamRunEventsRequest, stream agentv1.OrchestratorService_StreamRunEventsServer) error {
	user := o.caller(stream.Context(), "StreamRunEvents")
	o.mu.Lock()
	run, ok := o.runs[req.GetRunId()]
	o.mu.Unlock()
	if !ok || run.owner != user {
		return status.Errorf(codes.NotFound, "run %q not found", req.GetRunId())
	}
	if err := stream.SendHeader(metadata.Pairs(rpc.StreamOpenHeader, "1")); err != nil {
		return err
	}
	return run.follow(stream.Context(), req.GetAfterSeq(), stream.Send)
}

func (o *testOrchestrator) SubmitToolResult(ctx context.Context, req *agentv1.SubmitToolResultRequest) (*agentv1.SubmitToolResultResponse, error) {
	s, err := o.session(ctx, "SubmitToolResult", req.GetSessionId())
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	run := o.runs[s.ActiveRunId]
	o.mu.Unlock()
	if run == nil {
		return nil, status.Error(codes.FailedPrecondition, "no tool call is pending")
	}
	select {
	case run.results <- req:
		return &agentv1.SubmitToolResultResponse{Accepted: true}, nil
	default:
		return nil, status.Error(codes.FailedPrecondition, "a result for this call was already accepted")
	}
}

func (o *testOrchestrator) CancelRun(ctx context.Context, req *agentv1.CancelRunRequest) (*agentv1.CancelRunResponse, error) {
	s, err := o.session(ctx, "CancelRun", req.GetSessionId())
	if err != nil {
		return nil, err
	}
	return &agentv1.CancelRunResponse{RunId: s.ActiveRunId}, nil
}

func (o *testOrchestrator) setServing(serving bool) {
	st := healthpb.HealthCheckResponse_SERVING
	if !serving {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	o.srv.Health.SetServingStatus("", st)
}

// toolRunScript is a run with one tool call: it waits for the host result,
// then answers and completes.
func toolRunScript(ctx context.Context, run *testRun) {
	run.emit(&agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_RunStarted{RunStarted: &agentv1.RunStarted{Model: "anthropic/claude-test", HostApp: "freecad"}}}}})
	run.emit(&agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Thinking{Thinking: &agentv1.Thinking{Text: "A box is one Part::Box."}}})
	run.emit(&agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolInputDelta{ToolInputDelta: &agentv1.ToolInputDelta{ToolCallId: "call_1", ToolName: agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION, PartialJson: `{"code":"import FreeCAD\n`}}})
	run.emit(&agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolInputDelta{ToolInputDelta: &agentv1.ToolInputDelta{ToolCallId: "call_1", PartialJson: `box = doc.addObject(\"Part::Box\")"}`}}})
	run.emit(&agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolCall{ToolCall: &agentv1.ToolCall{
		ToolCallId: "call_1", ToolName: agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION, ResultToken: "tok_1", HostApp: "freecad",
		HostRequest: &agentv1.ToolCall_Execute{Execute: &hostv1.ExecuteRequest{ToolCallId: "call_1", Mode: hostv1.Mode_MODE_TRANSACTION, Code: "import FreeCAD\nbox = doc.addObject(\"Part::Box\")"}},
	}}})
	var res *agentv1.SubmitToolResultRequest
	select {
	case res = <-run.results:
	case <-ctx.Done():
		return
	}
	run.emit(&agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ToolResult{ToolResult: &agentv1.ToolResult{ToolCallId: res.GetToolCallId(), ToolName: agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION, Result: res.GetResult()}}}}})
	run.emit(&agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "Added **one box**."}}})
	run.emit(&agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Complete{Complete: &agentv1.Complete{Text: "Added one box.", StopReason: agentv1.StopReason_STOP_REASON_END_TURN}}})
	run.emit(&agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Usage{Usage: &agentv1.Usage{Model: "anthropic/claude-test", Turns: 2, Final: true,
		Total: &agentv1.TokenUsage{InputTokens: 1200, OutputTokens: 300, CostUsd: 0.0081}}}})
}

// traceparentOf returns the W3C trace context an RPC carried.
func traceparentOf(ctx context.Context) string {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("traceparent"); len(v) > 0 {
			return v[0]
		}
	}
	return ""
}
