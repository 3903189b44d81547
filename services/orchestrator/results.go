package orchestrator

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/identity"
	"nexus.local/services/orchestrator/state"
)

// SubmitToolResult puts a host result into the session's mailbox; the run
// waiting on it may live on another replica.
//
// Refusals change nothing and map to codes the gateway turns into sensible
// HTTP statuses:
//   - a call id the session does not wait on (unknown, stale or already
//     answered and closed): FailedPrecondition (400);
//   - a wrong result token: PermissionDenied (403);
//   - a second result for the pending call: AlreadyExists (409).
func (s *Service) SubmitToolResult(ctx context.Context, req *agentv1.SubmitToolResultRequest) (*agentv1.SubmitToolResultResponse, error) {
	if _, err := s.ownedSession(ctx, req.GetSessionId()); err != nil {
		return nil, err
	}
	switch {
	case req.GetToolCallId() == "":
		return nil, status.Error(codes.InvalidArgument, "tool_call_id is required")
	case req.GetResultToken() == "":
		return nil, status.Error(codes.InvalidArgument, "result_token is required: send the one from the tool_call event")
	case req.GetResult() == nil:
		return nil, status.Error(codes.InvalidArgument, "result is required: send what the host runtime returned")
	}
	trace := map[string]string{}
	s.env.Tel.Propagator.Inject(ctx, propagation.MapCarrier(trace))
	stampDelivered(trace, s.now())
	err := s.store.Deliver(ctx, req.GetSessionId(), req.GetToolCallId(), req.GetResultToken(), state.Delivery{
		ToolCallID: req.GetToolCallId(),
		Result:     req.GetResult(),
		Trace:      trace,
	})
	switch {
	case err == nil:
		return &agentv1.SubmitToolResultResponse{Accepted: true}, nil
	case errors.Is(err, state.ErrNoPendingCall):
		return nil, status.Errorf(codes.FailedPrecondition, "session %s is not waiting on tool call %s; only the pending call's result is accepted", req.GetSessionId(), req.GetToolCallId())
	case errors.Is(err, state.ErrBadToken):
		return nil, status.Errorf(codes.PermissionDenied, "result token does not match tool call %s; send the token from its tool_call event", req.GetToolCallId())
	case errors.Is(err, state.ErrAlreadyDelivered):
		return nil, status.Errorf(codes.AlreadyExists, "a result for tool call %s was already accepted; the second one was ignored", req.GetToolCallId())
	default:
		return nil, status.Errorf(codes.Unavailable, "deliver result for tool call %s: %v", req.GetToolCallId(), err)
	}
}

// errStopFollow ends a Follow after the first chunk.
const errStopFollow = state.Error("stop following")

// StreamRunEvents replays a run's events after after_seq and follows it live.
// Ending this stream never cancels the run.
func (s *Service) StreamRunEvents(req *agentv1.StreamRunEventsRequest, stream agentv1.OrchestratorService_StreamRunEventsServer) error {
	ctx := stream.Context()
	if req.GetRunId() == "" {
		return status.Error(codes.InvalidArgument, "run_id is required")
	}
	if req.GetAfterSeq() < 0 {
		return status.Errorf(codes.InvalidArgument, "after_seq must not be negative, got %d", req.GetAfterSeq())
	}
	// The log does not name its owner; its first chunk names the session,
	// and the session names the owner.
	var sessionID string
	err := s.store.Follow(ctx, req.GetRunId(), 0, func(c *agentv1.StreamChunk) error {
		sessionID = c.GetSessionId()
		return errStopFollow
	})
	if err != nil && !errors.Is(err, errStopFollow) {
		if errors.Is(err, state.ErrNotFound) {
			return status.Errorf(codes.NotFound, "run %s not found", req.GetRunId())
		}
		return status.Errorf(codes.Unavailable, "read run %s: %v", req.GetRunId(), err)
	}
	sess, err := s.store.Get(ctx, sessionID)
	if err != nil || sess.GetOwner() != identity.FromIncoming(ctx) {
		return status.Errorf(codes.NotFound, "run %s not found", req.GetRunId())
	}
	err = s.store.Follow(ctx, req.GetRunId(), req.GetAfterSeq(), stream.Send)
	if err != nil && ctx.Err() == nil {
		return status.Errorf(codes.Unavailable, "follow run %s: %v", req.GetRunId(), err)
	}
	return nil
}
