package runner

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
)

// countedStore is a real store that records the chunks of each append.
type countedStore struct {
	state.Store
	mu      sync.Mutex
	appends [][]int64
}

func (s *countedStore) Append(ctx context.Context, runID string, cs ...*agentv1.StreamChunk) error {
	var seqs []int64
	for _, c := range cs {
		seqs = append(seqs, c.GetSeq())
	}
	s.mu.Lock()
	s.appends = append(s.appends, seqs)
	s.mu.Unlock()
	return s.Store.Append(ctx, runID, cs...)
}

func (s *countedStore) seen() [][]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.appends)
}

// batchRouter answers StreamTurnBatches with the messages given, in order,
// as the model router sends a turn's events: each message is what was
// waiting together at the router. Before it hands over a message it calls
// before with the message's index.
type batchRouter struct {
	modelv1.ModelRouterServiceClient
	batches [][]*modelv1.StreamTurnResponse
	before  func(i int)
}

func (b *batchRouter) StreamTurnBatches(context.Context, *modelv1.StreamTurnBatchesRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[modelv1.StreamTurnBatch], error) {
	return &batchStream{r: b}, nil
}

type batchStream struct {
	grpc.ClientStream
	r    *batchRouter
	next int
}

func (s *batchStream) Recv() (*modelv1.StreamTurnBatch, error) {
	if s.next == len(s.r.batches) {
		return nil, io.EOF
	}
	i := s.next
	s.next++
	s.r.before(i)
	return &modelv1.StreamTurnBatch{Events: s.r.batches[i]}, nil
}

// TestTurnAppendsWhatArrivedTogether: the deltas of one message from the
// model router go to the run's log in one append, each under its own seq;
// a delta that came alone is appended alone, and before the runner reads
// the router's next message (counting, not timing: the log holds it when
// the next message is asked for).
func TestTurnAppendsWhatArrivedTogether(t *testing.T) {
	ctx := t.Context()
	text := func(s string) *modelv1.StreamTurnResponse {
		return &modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_Text{Text: &modelv1.TextDelta{Text: s}}}
	}
	end := &modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_End{End: &modelv1.TurnEnd{
		Message: &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT}, StopReason: modelv1.StopReason_STOP_REASON_END_TURN, Usage: &modelv1.Usage{}}}}
	store := &countedStore{Store: memory.New(nil)}
	d := testDeps(store)
	m, err := metrics.New(noop.NewMeterProvider().Meter("test"), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	d.Metrics = m
	const run, session = "run-together", "s-together"
	var logged []int64
	router := &batchRouter{
		batches: [][]*modelv1.StreamTurnResponse{{text("a"), text("b"), text("c")}, {text("d")}, {text("e"), text("f"), end}},
		before: func(i int) {
			last, _, err := store.LastSeq(ctx, run)
			if err != nil {
				t.Errorf("last seq: %v", err)
			}
			logged = append(logged, last)
		},
	}
	d.Router = router
	r := newRunner(d, slog.New(slog.DiscardHandler), state.Lease{RunID: run, SessionID: session})
	r.RS = &orchestratorv1.RunState{RunId: run, SessionId: session, Total: &modelv1.Usage{}}
	r.model = &modelv1.ModelInfo{Id: "anthropic/claude-sonnet-4-5"}
	if _, _, err := r.turn(ctx, phaseInitial, 1000, false); err != nil {
		t.Fatalf("turn: %v", err)
	}
	// The turn's start, then the three messages' deltas, then the usage.
	want := [][]int64{{1}, {2, 3, 4}, {5}, {6, 7}, {8}}
	if got := store.seen(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("appends %v, want %v: one append per message from the router", got, want)
	}
	// Before each message is asked for, the log holds every delta before it.
	if want := []int64{1, 4, 5}; !slices.Equal(logged, want) {
		t.Errorf("the log's last seq when each message was asked for: %v, want %v", logged, want)
	}
	var texts string
	err = store.Follow(ctx, run, 0, state.EachChunk(func(c *agentv1.StreamChunk) error {
		texts += c.GetMessage().GetText()
		if c.GetSeq() == 8 {
			return errLogRead
		}
		return nil
	}))
	if err != errLogRead || texts != "abcdef" {
		t.Errorf("the log reads %q (%v), want the deltas abcdef in order", texts, err)
	}
}
