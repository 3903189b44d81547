package orchestrator

import (
	"context"

	"google.golang.org/grpc/metadata"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/rpc"
)

// runStreams serves RunStreamService: the gateway's way of following runs,
// with the chunks that were waiting together sent as one message.
type runStreams struct {
	orchestratorv1.UnimplementedRunStreamServiceServer
	s *Service
}

// RunBatches is Run, its chunks in batches.
func (r runStreams) RunBatches(req *orchestratorv1.RunBatchesRequest, stream orchestratorv1.RunStreamService_RunBatchesServer) error {
	if err := stream.SendHeader(metadata.Pairs(rpc.BatchesHeader, "1")); err != nil {
		return err
	}
	run := req.GetRun()
	runID, err := r.s.startRun(stream.Context(), run.GetSessionId(), run.GetPrompt(), run.GetModel())
	if err != nil {
		return err
	}
	return r.s.follow(stream.Context(), runID, 0, r.s.batches(stream.Context(), stream.Send))
}

// StreamRunEventBatches is StreamRunEvents, its chunks in batches.
func (r runStreams) StreamRunEventBatches(req *orchestratorv1.StreamRunEventBatchesRequest, stream orchestratorv1.RunStreamService_StreamRunEventBatchesServer) error {
	ctx := stream.Context()
	follow := req.GetFollow()
	withBatches := func(md metadata.MD) error {
		md.Set(rpc.BatchesHeader, "1")
		return stream.SendHeader(md)
	}
	if err := r.s.openRunEvents(ctx, follow, withBatches); err != nil {
		return err
	}
	return r.s.follow(ctx, follow.GetRunId(), follow.GetAfterSeq(), r.s.batches(stream.Context(), stream.Send))
}

// batches sends the chunks that were waiting together as one message.
func (s *Service) batches(ctx context.Context, send func(*agentv1.StreamChunkBatch) error) func([]*agentv1.StreamChunk) error {
	return func(cs []*agentv1.StreamChunk) error {
		s.metrics.StreamMessage(ctx)
		return send(&agentv1.StreamChunkBatch{Chunks: cs})
	}
}

// oneByOne sends each chunk as a message of its own, as the public Run and
// StreamRunEvents do.
func (s *Service) oneByOne(ctx context.Context, send func(*agentv1.StreamChunk) error) func([]*agentv1.StreamChunk) error {
	return func(cs []*agentv1.StreamChunk) error {
		for _, c := range cs {
			s.metrics.StreamMessage(ctx)
			if err := send(c); err != nil {
				return err
			}
		}
		return nil
	}
}
