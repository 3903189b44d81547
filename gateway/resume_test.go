package gateway

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// failingStream is a replica's stream that fails before its first chunk.
type failingStream struct{}

func (failingStream) Recv() (*agentv1.StreamChunk, error) {
	return nil, status.Error(codes.Unavailable, "the run's store is away")
}

// followAfter records where each resumed stream starts and then serves the
// run's log from there: events 1 to 9.
type followAfter struct {
	agentv1.OrchestratorServiceClient
	asked []int64
}

func (f *followAfter) StreamRunEvents(_ context.Context, req *agentv1.StreamRunEventsRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[agentv1.StreamChunk], error) {
	f.asked = append(f.asked, req.GetAfterSeq())
	return &logStream{next: req.GetAfterSeq() + 1, last: 9}, nil
}

type logStream struct {
	grpc.ServerStreamingClient[agentv1.StreamChunk]
	next, last int64
}

func (s *logStream) Recv() (*agentv1.StreamChunk, error) {
	if s.next > s.last {
		return nil, status.Error(codes.Canceled, "the test's log ends here")
	}
	s.next++
	return &agentv1.StreamChunk{RunId: "run-1", Seq: s.next - 1}, nil
}

// TestResumeBeforeFirstChunkKeepsLastEventID: a client rejoins after event
// 7; the replica answering fails before sending anything (its store is away,
// say), and the gateway follows the run from another replica. That one must
// start after 7, the client's Last-Event-ID, not from the log's start: the
// client has seen 1 to 7 already, and its courier would run 7's tool call
// again.
func TestResumeBeforeFirstChunkKeepsLastEventID(t *testing.T) {
	client := &followAfter{}
	g := &Gateway{client: client}
	s := g.resuming(t.Context(), failingStream{}, "run-1", 7)
	c, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if c.GetSeq() != 8 || len(client.asked) != 1 || client.asked[0] != 7 {
		t.Errorf("after Last-Event-ID 7 the resumed stream asked after %v and gave event %d first; want after [7] and event 8", client.asked, c.GetSeq())
	}
}
