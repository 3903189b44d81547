// Package routertest starts the real model router in process on a loopback
// gRPC listener, for tests of the router and of the services that call it.
// Point it at a loopback vendor server through the vendors' own variables
// (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL,
// NEXUS_OPENAI_COMPAT_BASE_URL); replay/demo works with an empty env, from a
// replay vendor started as nexus dev starts one.
package routertest

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"sync"
	"testing"
	"time"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/rpc"
	"nexus.local/services/modelrouter"
	"nexus.local/services/modelrouter/replay"
)

// Router is a running router and a client dialed to it.
type Router struct {
	// Client calls the router over real gRPC.
	Client modelv1.ModelRouterServiceClient
	// Addr is the router's loopback address, for a process that dials it itself.
	Addr string
	// MetricsAddr is the internal metrics listener when NEXUS_METRICS_ADDR is set.
	MetricsAddr string

	mu     sync.Mutex
	sleeps []time.Duration
}

// Sleeps returns the backoff waits the router asked for, in order. The test
// router does not actually wait, so retries cost no time.
func (r *Router) Sleeps() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.sleeps...)
}

// Start runs the router configured from env (variable name to value, nothing
// from the process environment) until the test ends.
func Start(t testing.TB, env map[string]string) *Router {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if env["NEXUS_REPLAY_BASE_URL"] == "" {
		// As nexus dev does: the replay models from a vendor of their own.
		url, err := replay.Serve(ctx, env["NEXUS_REPLAY_CASSETTE"])
		if err != nil {
			t.Fatalf("replay vendor: %v", err)
		}
		env = maps.Clone(env)
		env["NEXUS_REPLAY_BASE_URL"] = url
	}
	l := config.Map(env)
	cfg, err := modelrouter.LoadConfig(ctx, l)
	if err != nil {
		t.Fatalf("router config: %v", err)
	}
	e, err := app.NewEnv(ctx, modelrouter.ServiceName, l)
	if err != nil {
		t.Fatalf("router env: %v", err)
	}
	// Closing the env flushes the spans the router made.
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	r := &Router{MetricsAddr: e.MetricsAddr()}
	sleep := func(ctx context.Context, d time.Duration) error {
		r.mu.Lock()
		r.sleeps = append(r.sleeps, d)
		r.mu.Unlock()
		return ctx.Err()
	}
	svc, err := modelrouter.New(ctx, e, cfg, modelrouter.WithSleeper(sleep))
	if err != nil {
		t.Fatalf("start router: %v", err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	srv := rpc.NewServer(e.Tel, e.Log)
	svc.Register(srv)
	srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := rpc.Dial(lis.Addr().String(), e.Tel)
	if err != nil {
		t.Fatalf("dial router: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	r.Client = modelv1.NewModelRouterServiceClient(conn)
	r.Addr = lis.Addr().String()
	return r
}

// Turn is one streamed turn, collected.
type Turn struct {
	// Events are every event in order, the end included.
	Events []*modelv1.StreamTurnResponse
	// Thinking, Text and ToolInput concatenate the deltas of each kind.
	Thinking, Text, ToolInput string
	// End is the final event, nil when the turn ended with an error.
	End *modelv1.TurnEnd
	// Error is the TurnError event, if any.
	Error *modelv1.TurnError
	// Messages is how many messages carried the events.
	Messages int
}

// Collect runs one turn to its end through StreamTurnBatches, as the
// orchestrator does, and gathers its events; err is the gRPC error when the
// call itself failed.
func Collect(ctx context.Context, c modelv1.ModelRouterServiceClient, req *modelv1.StreamTurnRequest) (*Turn, error) {
	stream, err := c.StreamTurnBatches(ctx, &modelv1.StreamTurnBatchesRequest{Turn: req})
	if err != nil {
		return nil, err
	}
	t := &Turn{}
	for {
		batch, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return t, nil
			}
			return t, err
		}
		t.Messages++
		for _, ev := range batch.GetEvents() {
			t.add(ev)
		}
	}
}

func (t *Turn) add(ev *modelv1.StreamTurnResponse) {
	t.Events = append(t.Events, ev)
	switch v := ev.GetEvent().(type) {
	case *modelv1.StreamTurnResponse_Thinking:
		t.Thinking += v.Thinking.GetText()
	case *modelv1.StreamTurnResponse_Text:
		t.Text += v.Text.GetText()
	case *modelv1.StreamTurnResponse_ToolInputDelta:
		t.ToolInput += v.ToolInputDelta.GetPartialJson()
	case *modelv1.StreamTurnResponse_End:
		t.End = v.End
	case *modelv1.StreamTurnResponse_Error:
		t.Error = v.Error
	}
}
