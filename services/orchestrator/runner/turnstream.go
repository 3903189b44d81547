package runner

import (
	"context"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/rpc"
)

// turnEvents reads a turn's batches from the model router one event at a
// time: a batch is the events that were waiting together at the router, each
// handled here as if it had come alone.
type turnEvents = rpc.Unbatched[*modelv1.StreamTurnBatch, *modelv1.StreamTurnResponse]

// streamTurn asks the router for one turn, its events in batches.
func streamTurn(ctx context.Context, router modelv1.ModelRouterServiceClient, req *modelv1.StreamTurnRequest) (*turnEvents, error) {
	stream, err := router.StreamTurnBatches(ctx, &modelv1.StreamTurnBatchesRequest{Turn: req})
	if err != nil {
		return nil, err
	}
	return rpc.NewUnbatched(stream.Recv, (*modelv1.StreamTurnBatch).GetEvents), nil
}
