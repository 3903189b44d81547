package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/refusal"
	"nexus.local/platform/sse"
)

// maxSSELine bounds one line of the gateway's event stream; a tool call with
// its preview images is the largest event.
const maxSSELine = 64 << 20

// chunkStream is a run's stream of chunks, whichever way it arrives.
type chunkStream interface {
	Recv() (*agentv1.StreamChunk, error)
}

// backend is the part of the public API the commands use: the
// orchestrator's gRPC API directly, or the gateway's HTTP API with server-sent
// events when NEXUS_GATEWAY_URL is set.
type backend interface {
	CreateSession(ctx context.Context, req *agentv1.CreateSessionRequest) (*agentv1.Session, error)
	UpdateSession(ctx context.Context, req *agentv1.UpdateSessionRequest) (*agentv1.Session, error)
	GetSession(ctx context.Context, req *agentv1.GetSessionRequest) (*agentv1.Session, error)
	Run(ctx context.Context, req *agentv1.RunRequest) (chunkStream, error)
	// StreamRunEvents replays a run's events from the start and follows it.
	StreamRunEvents(ctx context.Context, req *agentv1.StreamRunEventsRequest) (chunkStream, error)
	// SubmitToolResult posts a result in the trace of the run's
	// traceparent, so one trace covers the run and its result.
	SubmitToolResult(ctx context.Context, req *agentv1.SubmitToolResultRequest, traceparent string) error
	ReviewToolCall(ctx context.Context, req *agentv1.ReviewToolCallRequest) (*agentv1.ReviewToolCallResponse, error)
	CancelRun(ctx context.Context, req *agentv1.CancelRunRequest) (*agentv1.CancelRunResponse, error)
	ListSessions(ctx context.Context, req *agentv1.ListSessionsRequest) (*agentv1.ListSessionsResponse, error)
	ListRuns(ctx context.Context, req *agentv1.ListRunsRequest) (*agentv1.ListRunsResponse, error)
	ListDispatches(ctx context.Context, req *agentv1.ListDispatchesRequest) (*agentv1.ListDispatchesResponse, error)
	// Where names the server in errors.
	Where() string
	Close() error
}

// Conn says how a command reaches Nexus; with neither field set, the
// running nexus dev of this user.
type Conn struct {
	// Addr is the orchestrator's gRPC address.
	Addr string
	// GatewayURL, when set, sends every call through the gateway's HTTP API
	// instead, with NEXUS_API_KEY as the bearer token.
	GatewayURL string
}

// connect opens the backend c names.
func connect(ctx context.Context, c Conn, o IO) (backend, error) {
	c, err := resolveConn(c, o.Env)
	if err != nil {
		return nil, err
	}
	if c.GatewayURL != "" {
		u, err := url.Parse(c.GatewayURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, UsageError{fmt.Errorf("gateway URL %q: want http(s)://host[:port]", c.GatewayURL)}
		}
		client := o.HTTP
		if client == nil {
			client = http.DefaultClient
		}
		return &gatewayBackend{base: strings.TrimRight(c.GatewayURL, "/"), key: o.lookup("NEXUS_API_KEY", ""), http: client}, nil
	}
	conn, client, err := dial(ctx, c.Addr, o)
	if err != nil {
		return nil, err
	}
	return &grpcBackend{conn: conn, c: client, addr: c.Addr}, nil
}

// grpcBackend speaks the orchestrator's gRPC API.
type grpcBackend struct {
	conn *grpc.ClientConn
	c    agentv1.OrchestratorServiceClient
	addr string
}

func (b *grpcBackend) Where() string { return "orchestrator at " + b.addr }
func (b *grpcBackend) Close() error  { return b.conn.Close() }

func (b *grpcBackend) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	st := status.Convert(err)
	return &apiError{what: what, where: b.Where(), status: st.Code().String(), reason: refusal.OfStatus(st), message: st.Message()}
}

func (b *grpcBackend) CreateSession(ctx context.Context, req *agentv1.CreateSessionRequest) (*agentv1.Session, error) {
	s, err := b.c.CreateSession(ctx, req)
	return s, b.wrap("create session", err)
}

func (b *grpcBackend) UpdateSession(ctx context.Context, req *agentv1.UpdateSessionRequest) (*agentv1.Session, error) {
	s, err := b.c.UpdateSession(ctx, req)
	return s, b.wrap("update session "+req.GetSessionId(), err)
}

func (b *grpcBackend) GetSession(ctx context.Context, req *agentv1.GetSessionRequest) (*agentv1.Session, error) {
	s, err := b.c.GetSession(ctx, req)
	return s, b.wrap("read session "+req.GetSessionId(), err)
}

func (b *grpcBackend) StreamRunEvents(ctx context.Context, req *agentv1.StreamRunEventsRequest) (chunkStream, error) {
	s, err := b.c.StreamRunEvents(ctx, req)
	if err != nil {
		return nil, b.wrap("join run "+req.GetRunId(), err)
	}
	return grpcStream{s: s, b: b}, nil
}

func (b *grpcBackend) Run(ctx context.Context, req *agentv1.RunRequest) (chunkStream, error) {
	s, err := b.c.Run(ctx, req)
	if err != nil {
		return nil, b.wrap("start run", err)
	}
	return grpcStream{s: s, b: b}, nil
}

type grpcStream struct {
	s grpc.ServerStreamingClient[agentv1.StreamChunk]
	b *grpcBackend
}

func (s grpcStream) Recv() (*agentv1.StreamChunk, error) {
	c, err := s.s.Recv()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, s.b.wrap("run", err)
	}
	return c, err
}

func (b *grpcBackend) SubmitToolResult(ctx context.Context, req *agentv1.SubmitToolResultRequest, traceparent string) error {
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
	_, err := b.c.SubmitToolResult(ctx, req)
	return b.wrap("submit tool result "+req.GetToolCallId(), err)
}

func (b *grpcBackend) ReviewToolCall(ctx context.Context, req *agentv1.ReviewToolCallRequest) (*agentv1.ReviewToolCallResponse, error) {
	r, err := b.c.ReviewToolCall(ctx, req)
	return r, b.wrap("review "+req.GetToolCallId(), err)
}

func (b *grpcBackend) CancelRun(ctx context.Context, req *agentv1.CancelRunRequest) (*agentv1.CancelRunResponse, error) {
	r, err := b.c.CancelRun(ctx, req)
	return r, b.wrap("cancel", err)
}

func (b *grpcBackend) ListSessions(ctx context.Context, req *agentv1.ListSessionsRequest) (*agentv1.ListSessionsResponse, error) {
	r, err := b.c.ListSessions(ctx, req)
	return r, b.wrap("list sessions", err)
}

func (b *grpcBackend) ListRuns(ctx context.Context, req *agentv1.ListRunsRequest) (*agentv1.ListRunsResponse, error) {
	r, err := b.c.ListRuns(ctx, req)
	return r, b.wrap("list the runs of session "+req.GetSessionId(), err)
}

func (b *grpcBackend) ListDispatches(ctx context.Context, req *agentv1.ListDispatchesRequest) (*agentv1.ListDispatchesResponse, error) {
	r, err := b.c.ListDispatches(ctx, req)
	return r, b.wrap("list the dispatches of session "+req.GetSessionId(), err)
}

// gatewayBackend speaks the gateway's public HTTP API: JSON routes and
// server-sent events.
type gatewayBackend struct {
	base string
	key  string
	http *http.Client
}

func (b *gatewayBackend) Where() string { return "gateway at " + b.base }
func (b *gatewayBackend) Close() error  { return nil }

func (b *gatewayBackend) request(ctx context.Context, what, method, path string, body proto.Message) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		data, err := protojson.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s: encode request: %w", what, err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.key != "" {
		req.Header.Set("Authorization", "Bearer "+b.key)
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := b.http.Do(req)
	if err != nil {
		return nil, &apiError{what: what, where: b.Where(), status: "UNAVAILABLE", reason: agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, message: err.Error()}
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, problemError(what, b.Where(), resp)
	}
	return resp, nil
}

func (b *gatewayBackend) unary(ctx context.Context, what, method, path string, body, out proto.Message) error {
	resp, err := b.request(ctx, what, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxHostResponse))
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", what, err)
	}
	if out == nil {
		return nil
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: decode answer: %w", what, err)
	}
	return nil
}

func (b *gatewayBackend) CreateSession(ctx context.Context, req *agentv1.CreateSessionRequest) (*agentv1.Session, error) {
	var s agentv1.Session
	return &s, b.unary(ctx, "create session", http.MethodPost, "/v1/sessions", req, &s)
}

func (b *gatewayBackend) UpdateSession(ctx context.Context, req *agentv1.UpdateSessionRequest) (*agentv1.Session, error) {
	var s agentv1.Session
	body := &agentv1.UpdateSessionRequest{ReviewPolicy: req.GetReviewPolicy()}
	return &s, b.unary(ctx, "update session "+req.GetSessionId(), http.MethodPatch, "/v1/sessions/"+url.PathEscape(req.GetSessionId()), body, &s)
}

func (b *gatewayBackend) GetSession(ctx context.Context, req *agentv1.GetSessionRequest) (*agentv1.Session, error) {
	var s agentv1.Session
	return &s, b.unary(ctx, "read session "+req.GetSessionId(), http.MethodGet, "/v1/sessions/"+url.PathEscape(req.GetSessionId()), nil, &s)
}

func (b *gatewayBackend) Run(ctx context.Context, req *agentv1.RunRequest) (chunkStream, error) {
	body := &agentv1.RunRequest{Prompt: req.GetPrompt(), Model: req.GetModel()}
	return b.events(b.request(ctx, "start run", http.MethodPost, "/v1/sessions/"+url.PathEscape(req.GetSessionId())+"/runs", body))
}

func (b *gatewayBackend) StreamRunEvents(ctx context.Context, req *agentv1.StreamRunEventsRequest) (chunkStream, error) {
	return b.events(b.request(ctx, "join run "+req.GetRunId(), http.MethodGet, "/v1/runs/"+url.PathEscape(req.GetRunId())+"/events", nil))
}

// events reads an answer of server-sent events as a run's stream.
func (b *gatewayBackend) events(resp *http.Response, err error) (chunkStream, error) {
	if err != nil {
		return nil, err
	}
	return &sseStream{body: resp.Body, events: sse.NewReader(resp.Body, maxSSELine), where: b.Where()}, nil
}

// sseStream reads StreamChunks from server-sent events: every event's data
// is one chunk's protojson (the gateway's own stream errors included).
type sseStream struct {
	body   io.ReadCloser
	events *sse.Reader
	where  string
}

func (s *sseStream) Recv() (*agentv1.StreamChunk, error) {
	ev, err := s.events.Next()
	if err != nil {
		s.body.Close()
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("run (%s): read events: %w", s.where, err)
	}
	var c agentv1.StreamChunk
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(ev.Data, &c); err != nil {
		return nil, fmt.Errorf("run (%s): decode event: %w", s.where, err)
	}
	return &c, nil
}

func (b *gatewayBackend) SubmitToolResult(ctx context.Context, req *agentv1.SubmitToolResultRequest, traceparent string) error {
	body := proto.CloneOf(req)
	body.SessionId = ""
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
	return b.unary(ctx, "submit tool result "+req.GetToolCallId(), http.MethodPost, "/v1/sessions/"+url.PathEscape(req.GetSessionId())+"/tool-results", body, nil)
}

func (b *gatewayBackend) ReviewToolCall(ctx context.Context, req *agentv1.ReviewToolCallRequest) (*agentv1.ReviewToolCallResponse, error) {
	body := &agentv1.ReviewToolCallRequest{Verdict: req.GetVerdict(), Code: req.GetCode(), Reason: req.GetReason()}
	var r agentv1.ReviewToolCallResponse
	path := "/v1/sessions/" + url.PathEscape(req.GetSessionId()) + "/tool-calls/" + url.PathEscape(req.GetToolCallId()) + ":review"
	return &r, b.unary(ctx, "review "+req.GetToolCallId(), http.MethodPost, path, body, &r)
}

func (b *gatewayBackend) CancelRun(ctx context.Context, req *agentv1.CancelRunRequest) (*agentv1.CancelRunResponse, error) {
	var r agentv1.CancelRunResponse
	return &r, b.unary(ctx, "cancel", http.MethodPost, "/v1/sessions/"+url.PathEscape(req.GetSessionId())+":cancel", &agentv1.CancelRunRequest{}, &r)
}

func (b *gatewayBackend) ListSessions(ctx context.Context, req *agentv1.ListSessionsRequest) (*agentv1.ListSessionsResponse, error) {
	q := url.Values{}
	if req.GetPageSize() > 0 {
		q.Set("pageSize", strconv.Itoa(int(req.GetPageSize())))
	}
	if req.GetPageToken() != "" {
		q.Set("pageToken", req.GetPageToken())
	}
	if req.GetIncludeEval() {
		q.Set("includeEval", "true")
	}
	var r agentv1.ListSessionsResponse
	return &r, b.unary(ctx, "list sessions", http.MethodGet, "/v1/sessions?"+q.Encode(), nil, &r)
}

func (b *gatewayBackend) ListRuns(ctx context.Context, req *agentv1.ListRunsRequest) (*agentv1.ListRunsResponse, error) {
	q := url.Values{}
	if req.GetPageToken() != "" {
		q.Set("pageToken", req.GetPageToken())
	}
	var r agentv1.ListRunsResponse
	return &r, b.unary(ctx, "list the runs of session "+req.GetSessionId(), http.MethodGet, "/v1/sessions/"+url.PathEscape(req.GetSessionId())+"/runs?"+q.Encode(), nil, &r)
}

func (b *gatewayBackend) ListDispatches(ctx context.Context, req *agentv1.ListDispatchesRequest) (*agentv1.ListDispatchesResponse, error) {
	q := url.Values{}
	if req.GetIncludeCode() {
		q.Set("includeCode", "true")
	}
	if req.GetPageToken() != "" {
		q.Set("pageToken", req.GetPageToken())
	}
	var r agentv1.ListDispatchesResponse
	return &r, b.unary(ctx, "list the dispatches of session "+req.GetSessionId(), http.MethodGet, "/v1/sessions/"+url.PathEscape(req.GetSessionId())+"/dispatches?"+q.Encode(), nil, &r)
}

// UsageError is a command line that cannot run as written: nexus exits 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }
