package gateway

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/rpc"
)

// The gateway follows runs through the orchestrator's RunStreamService,
// whose messages carry every chunk that was waiting together; an
// orchestrator that does not serve it (one of an older release, during a
// rolling upgrade) is followed through the public Run and StreamRunEvents,
// one chunk a message.

// headedStream is a chunk stream whose header can be read.
type headedStream interface {
	chunkStream
	Header() (metadata.MD, error)
}

// batchStream reads a stream of batches one chunk at a time.
type batchStream struct {
	stream grpc.ServerStreamingClient[agentv1.StreamChunkBatch]
	*rpc.Unbatched[*agentv1.StreamChunkBatch, *agentv1.StreamChunk]
}

func newBatchStream(stream grpc.ServerStreamingClient[agentv1.StreamChunkBatch]) *batchStream {
	return &batchStream{stream: stream, Unbatched: rpc.NewUnbatched(stream.Recv, (*agentv1.StreamChunkBatch).GetChunks)}
}

func (b *batchStream) Header() (metadata.MD, error) { return b.stream.Header() }

// waiting is how many chunks of the last batch are still to be read.
func (b *batchStream) waiting() int { return b.Waiting() }

// waiter is a stream that knows how many chunks it holds already.
type waiter interface{ waiting() int }

// waiting is what the stream being followed holds already.
func (s *resumingStream) waiting() int {
	if w, ok := s.cur.(waiter); ok {
		return w.waiting()
	}
	return 0
}

// recvWaiting reads stream a chunk and what it already holds at a time, so
// that the chunks of one batch are written to the client together.
func recvWaiting(stream chunkStream) func() ([]*agentv1.StreamChunk, error) {
	w, _ := stream.(waiter)
	return func() ([]*agentv1.StreamChunk, error) {
		c, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		out := []*agentv1.StreamChunk{c}
		for w != nil && w.waiting() > 0 {
			// A held chunk is read without waiting, and without error.
			if c, err = stream.Recv(); err != nil {
				break
			}
			out = append(out, c)
		}
		return out, nil
	}
}

// failedStream is a stream that ended before it began.
type failedStream struct{ err error }

func (f failedStream) Recv() (*agentv1.StreamChunk, error) { return nil, f.err }
func (f failedStream) Header() (metadata.MD, error)        { return nil, nil }

// openBatches opens a batched stream, falling back to plain when the
// orchestrator does not serve batches. A stream that serves them says so in
// its header before anything else, which tells it apart from one that ended
// at once (Unimplemented, or a refusal).
func openBatches(batched func() (grpc.ServerStreamingClient[agentv1.StreamChunkBatch], error), plain func() (headedStream, error)) (headedStream, error) {
	bs, err := batched()
	if err != nil {
		return nil, err
	}
	if md, err := bs.Header(); err == nil && len(md.Get(rpc.BatchesHeader)) > 0 {
		return newBatchStream(bs), nil
	}
	// No header: the stream ended at once; its status says why.
	_, err = bs.Recv()
	if status.Code(err) == codes.Unimplemented {
		return plain()
	}
	return failedStream{err: err}, nil
}

// startRun starts a run and follows it.
func (g *Gateway) startRun(ctx context.Context, req *agentv1.RunRequest) (headedStream, error) {
	plain := func() (headedStream, error) { return g.client.Run(ctx, req) }
	if g.runStreams == nil {
		return plain()
	}
	return openBatches(func() (grpc.ServerStreamingClient[agentv1.StreamChunkBatch], error) {
		return g.runStreams.RunBatches(ctx, &orchestratorv1.RunBatchesRequest{Run: req})
	}, plain)
}

// followRun follows a run after afterSeq.
func (g *Gateway) followRun(ctx context.Context, req *agentv1.StreamRunEventsRequest) (headedStream, error) {
	plain := func() (headedStream, error) { return g.client.StreamRunEvents(ctx, req) }
	if g.runStreams == nil {
		return plain()
	}
	return openBatches(func() (grpc.ServerStreamingClient[agentv1.StreamChunkBatch], error) {
		return g.runStreams.StreamRunEventBatches(ctx, &orchestratorv1.StreamRunEventBatchesRequest{Follow: req})
	}, plain)
}
