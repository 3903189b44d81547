package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/logging"
	"nexus.local/platform/refusal"
	"nexus.local/platform/rpc"
	"nexus.local/platform/sse"
)

// chunkStream is what Run and StreamRunEvents both return.
type chunkStream interface {
	Recv() (*agentv1.StreamChunk, error)
}

// eventType is the SSE event name of c: the name of its oneof field.
func eventType(c *agentv1.StreamChunk) string {
	m := c.ProtoReflect()
	if fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("chunk")); fd != nil {
		return string(fd.Name())
	}
	return "message"
}

// handleRun starts a run and streams it as server-sent events.
func (g *Gateway) handleRun(w http.ResponseWriter, r *http.Request, params map[string]string) {
	release, ok := g.takeStream(w, userFrom(r.Context()))
	if !ok {
		return
	}
	defer release()
	req := &agentv1.RunRequest{}
	if m, ok := decodedFrom(r).(*agentv1.RunRequest); ok {
		req = m
	}
	req.SessionId = params["session_id"]
	ctx, cancel := context.WithCancel(identity.Outgoing(r.Context(), userFrom(r.Context())))
	defer cancel()
	stream, err := g.startRun(ctx, req)
	if err != nil {
		writeStatusError(r.Context(), w, err)
		return
	}
	g.streamSSE(ctx, w, g.resuming(ctx, stream, "", 0), logging.FromContext(r.Context()).With("session", req.SessionId), false)
}

// handleRunEvents rejoins a run's stream after the SSE Last-Event-ID.
func (g *Gateway) handleRunEvents(w http.ResponseWriter, r *http.Request, params map[string]string) {
	after, err := lastEventID(r)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_BAD_REQUEST, err.Error(), nil)
		return
	}
	release, ok := g.takeStream(w, userFrom(r.Context()))
	if !ok {
		return
	}
	defer release()
	req := &agentv1.StreamRunEventsRequest{RunId: params["run_id"], AfterSeq: after}
	ctx, cancel := context.WithCancel(identity.Outgoing(r.Context(), userFrom(r.Context())))
	defer cancel()
	stream, err := g.followRun(ctx, req)
	if err != nil {
		writeStatusError(r.Context(), w, err)
		return
	}
	// The orchestrator sends its headers once the caller may follow the
	// run; the client gets the stream's headers then, not at the first
	// event or keepalive of a quiet run.
	open := false
	if md, err := stream.Header(); err == nil && len(md.Get(rpc.StreamOpenHeader)) > 0 {
		open = true
	}
	g.streamSSE(ctx, w, g.resuming(ctx, stream, req.RunId, after), logging.FromContext(r.Context()).With("run", req.RunId), open)
}

// maxResumes bounds how often one client stream moves to another replica.
const maxResumes = 5

// resumeBackoff is the pause before each move, times the attempt number, so
// the balancer can notice the dead replica first.
const resumeBackoff = 100 * time.Millisecond

// resumingStream keeps a client's stream going when the orchestrator replica
// serving it goes away: on Unavailable after the run is known, it follows the
// run's event log from another replica after the last seq it passed on. The
// client then sees the rest of the run, or the replica_lost error once the
// dead replica's lease runs out, on the stream it already has.
type resumingStream struct {
	ctx     context.Context
	follow  func(context.Context, *agentv1.StreamRunEventsRequest) (headedStream, error)
	cur     chunkStream
	runID   string
	lastSeq int64
	resumes int
}

// resuming starts at afterSeq, the client's Last-Event-ID: a move to
// another replica before the first chunk must not replay what the client
// has already seen.
func (g *Gateway) resuming(ctx context.Context, first chunkStream, runID string, afterSeq int64) *resumingStream {
	return &resumingStream{ctx: ctx, follow: g.followRun, cur: first, runID: runID, lastSeq: afterSeq}
}

// Recv returns the next chunk, moving to another replica when needed.
func (s *resumingStream) Recv() (*agentv1.StreamChunk, error) {
	for {
		c, err := s.cur.Recv()
		if err == nil {
			if c.GetRunId() != "" {
				s.runID = c.GetRunId()
			}
			s.lastSeq = max(s.lastSeq, c.GetSeq())
			return c, nil
		}
		if status.Code(err) != codes.Unavailable || s.runID == "" || s.resumes >= maxResumes {
			return nil, err
		}
		s.resumes++
		select {
		case <-s.ctx.Done():
			return nil, err
		case <-time.After(time.Duration(s.resumes) * resumeBackoff):
		}
		next, rerr := s.follow(s.ctx, &agentv1.StreamRunEventsRequest{RunId: s.runID, AfterSeq: s.lastSeq})
		if rerr != nil {
			return nil, err
		}
		s.cur = next
	}
}

// lastEventID reads the Last-Event-ID header, or the lastEventId query
// parameter for clients that cannot set headers.
func lastEventID(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	name := "Last-Event-ID header"
	if v == "" {
		v, name = r.URL.Query().Get("lastEventId"), "lastEventId parameter"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q: want a non-negative event id", name, v)
	}
	return n, nil
}

// maxKeptFrameBuffer is the largest frame buffer a stream keeps between
// writes.
const maxKeptFrameBuffer = 64 << 10

// sseRetry is the reconnect delay the stream asks EventSource to use.
const sseRetry = time.Second

// received is one message read from a gRPC stream, or the error that ended it.
type received[T any] struct {
	msg T
	err error
}

// pump reads a gRPC stream on a goroutine of its own into a buffered channel,
// so that the writer can wait on the stream, its keepalive timer and shutdown
// at once. It stops after the stream's error or when ctx ends, and closes the
// channel.
func pump[T any](ctx context.Context, recv func() (T, error), buffer int) <-chan received[T] {
	out := make(chan received[T], buffer)
	go func() {
		defer close(out)
		for {
			m, err := recv()
			select {
			case out <- received[T]{m, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// streamSSE copies stream to w as server-sent events until it ends, the
// client goes away or the gateway shuts down. After every keepalive period of
// silence (a run waiting on its host, say) it writes a comment frame so that
// proxies and browsers keep the connection. An error before anything was
// written is answered as JSON with its HTTP status; after that it becomes an
// error event.
func (g *Gateway) streamSSE(ctx context.Context, w http.ResponseWriter, stream chunkStream, log *slog.Logger, openNow bool) {
	// A small buffer lets events that arrive together be written together.
	recvs := pump(ctx, recvWaiting(stream), 64)
	out := sse.NewStream(w)
	// write sends frames, and flushes them with whatever came before.
	write := func(frames []byte) bool {
		g.sseWrites.Add(ctx, 1)
		return out.Write(frames) == nil
	}

	if openNow && !write(sse.AppendEnd(sse.AppendRetry(nil, sseRetry))) {
		return
	}
	keepalive := time.NewTimer(g.cfg.SSEKeepalive)
	defer keepalive.Stop()
	// The stream's frames are rendered into one buffer, reused for as long
	// as the stream lasts.
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-keepalive.C:
			if !write(sse.AppendComment(nil, "keepalive")) {
				return
			}
			keepalive.Reset(g.cfg.SSEKeepalive)
		case res, ok := <-recvs:
			if !ok {
				return
			}
			// Events that are already waiting go out in one write and one
			// flush: under load that saves system calls per event.
			buf = buf[:0]
			for res.err == nil {
				for _, c := range res.msg {
					buf = g.appendFrame(ctx, buf, c, !out.Started() && len(buf) == 0)
				}
				if len(recvs) == 0 {
					break
				}
				res = <-recvs
			}
			if len(buf) > 0 && !write(buf) {
				log.Debug("client went away")
				return
			}
			if cap(buf) > maxKeptFrameBuffer {
				// One huge event does not pin its buffer for the stream's life.
				buf = nil
			}
			if res.err != nil {
				if errors.Is(res.err, io.EOF) {
					out.Start()
					return
				}
				if ctx.Err() != nil {
					return
				}
				if !out.Started() {
					writeStatusError(ctx, w, res.err)
					return
				}
				write(errorFrame(ctx, res.err))
				return
			}
			keepalive.Reset(g.cfg.SSEKeepalive)
		}
	}
}

// appendFrame renders a chunk as a server-sent event onto dst; the first
// frame of a stream also sets the reconnect delay.
func (g *Gateway) appendFrame(ctx context.Context, dst []byte, c *agentv1.StreamChunk, first bool) []byte {
	if e := c.GetError(); e != nil {
		// A run's error is written for a person; where the services behind
		// the gateway run is not part of it.
		e.Message = scrubAddresses(e.Message)
	}
	start := len(dst)
	if first {
		// EventSource waits this long before reconnecting (3 s by default).
		dst = sse.AppendRetry(dst, sseRetry)
	}
	dst, err := sse.AppendType(dst, eventType(c))
	if err != nil {
		return append(dst[:start], errorFrame(ctx, refusal.Newf(codes.Internal, agentv1.RefusalReason_REFUSAL_REASON_INTERNAL, "encode event %d: %v", c.GetSeq(), err))...)
	}
	if c.GetSeq() > 0 {
		dst = sse.AppendSeqID(dst, c.GetSeq())
	}
	dst, data := sse.StartData(dst)
	if out, ok := appendDeltaJSON(dst, c); ok {
		return sse.EndData(out, data)
	}
	dst, err = protojson.MarshalOptions{}.MarshalAppend(dst, c)
	if err != nil {
		return append(dst[:start], errorFrame(ctx, refusal.Newf(codes.Internal, agentv1.RefusalReason_REFUSAL_REASON_INTERNAL, "encode event %d: %v", c.GetSeq(), err))...)
	}
	return sse.EndData(dst, data)
}

// errorFrame turns a gRPC error into an error event. It carries no id, so a
// client that reconnects resumes after the last real event.
func errorFrame(ctx context.Context, err error) []byte {
	return errorFrameCoded(ctx, err, streamErrorCode(status.Code(err)))
}

// errorFrameCoded is errorFrame with the run error code given.
func errorFrameCoded(ctx context.Context, err error, code agentv1.ErrorCode) []byte {
	st := status.Convert(err)
	// Only a lost replica is worth retrying: rejoining finds the run on
	// another one. Deriving it from the code keeps the two from disagreeing.
	chunk := &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Error{Error: &agentv1.Error{
		Code: code, Message: clientMessage(ctx, st), Retryable: code == agentv1.ErrorCode_ERROR_CODE_REPLICA_LOST,
	}}}
	data, _ := protojson.Marshal(chunk)
	frame, _ := sse.AppendEvent(nil, sse.Event{Type: "error", Data: data})
	return frame
}

// streamErrorCode is the run error code of a stream the gateway could not
// keep going: the orchestrator replicas serving it went away (the run may
// still be going on another one, so rejoining is the remedy), the caller
// cancelled, or something unexpected happened.
func streamErrorCode(c codes.Code) agentv1.ErrorCode {
	switch c {
	case codes.Unavailable, codes.Aborted, codes.DeadlineExceeded:
		return agentv1.ErrorCode_ERROR_CODE_REPLICA_LOST
	case codes.Canceled:
		return agentv1.ErrorCode_ERROR_CODE_CANCELLED
	default:
		return agentv1.ErrorCode_ERROR_CODE_INTERNAL
	}
}
