package runner

import (
	"context"

	"google.golang.org/grpc"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// turnEvents reads a turn's batches from the model router one event at a
// time: a batch is the events that were waiting together at the router, each
// handled here as if it had come alone.
type turnEvents struct {
	stream  grpc.ServerStreamingClient[modelv1.StreamTurnBatch]
	pending []*modelv1.StreamTurnResponse
}

// streamTurn asks the router for one turn, its events in batches.
func streamTurn(ctx context.Context, router modelv1.ModelRouterServiceClient, req *modelv1.StreamTurnRequest) (*turnEvents, error) {
	stream, err := router.StreamTurnBatches(ctx, &modelv1.StreamTurnBatchesRequest{Turn: req})
	if err != nil {
		return nil, err
	}
	return &turnEvents{stream: stream}, nil
}

// Recv returns the next event, reading the next batch when the last is used up.
func (t *turnEvents) Recv() (*modelv1.StreamTurnResponse, error) {
	for len(t.pending) == 0 {
		b, err := t.stream.Recv()
		if err != nil {
			return nil, err
		}
		t.pending = b.GetEvents()
	}
	ev := t.pending[0]
	t.pending = t.pending[1:]
	return ev, nil
}
