package orchestrator

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/enumname"
	"nexus.local/platform/identity"
	"nexus.local/platform/refusal"
	"nexus.local/platform/rpc"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/state"
)

// SubmitToolResult puts a host result into the session's mailbox and wakes
// the suspended run; this replica carries it on at once, or, when it cannot,
// any replica's sweeper does.
//
// Refusals change nothing and map to codes the gateway turns into sensible
// HTTP statuses:
//   - a call id the session does not wait on and never decided: Aborted
//     (409, a conflict with the session's state);
//   - a wrong result token: PermissionDenied (403);
//   - a different result for a call that already has one, or that was
//     given up (timeout or cancel): Aborted (409).
//
// The same result posted again (same call, token and body) is accepted
// again, so a courier that lost the answer can simply retry.
func (s *Service) SubmitToolResult(ctx context.Context, req *agentv1.SubmitToolResultRequest) (*agentv1.SubmitToolResultResponse, error) {
	sess, err := s.ownedSession(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	switch {
	case req.GetToolCallId() == "":
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "tool_call_id is required")
	case req.GetResultToken() == "":
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "result_token is required: send the one from the tool_call event")
	case req.GetResult() == nil && req.GetCourierFailure() == nil:
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "result is required: send what the host runtime returned (or courier_failure when it could not be reached)")
	case req.GetResult() != nil && req.GetCourierFailure() != nil:
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "send either result or courier_failure, not both")
	case req.GetCourierFailure() != nil:
		if !call.IsCourierFailure(req.GetCourierFailure().GetCode()) {
			return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "courier_failure.code must be ERROR_CODE_HOST_UNREACHABLE, _HOST_UNAUTHORIZED, _HOST_NOT_PAIRED or _HOST_MISMATCH, got %s", req.GetCourierFailure().GetCode())
		}
	}
	result := state.ResultDelivery(withCondition(req.GetResult()))
	if f := req.GetCourierFailure(); f != nil {
		result = call.CourierDelivery(f)
	}
	trace := map[string]string{}
	s.env.Tel.Propagator.Inject(ctx, propagation.MapCarrier(trace))
	metrics.StampDelivered(trace, s.now())
	err = s.store.Deliver(ctx, req.GetSessionId(), req.GetToolCallId(), req.GetResultToken(), state.Delivery{
		ToolCallID: req.GetToolCallId(),
		Content:    result,
		Trace:      trace,
	})
	switch {
	case err == nil:
	case errors.Is(err, state.ErrNoPendingCall):
		return nil, refusal.Newf(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_NO_PENDING_CALL, "session %s is not waiting on tool call %s; only the pending call's result is accepted", req.GetSessionId(), req.GetToolCallId())
	case errors.Is(err, state.ErrBadToken):
		return nil, refusal.Newf(codes.PermissionDenied, agentv1.RefusalReason_REFUSAL_REASON_RESULT_TOKEN_MISMATCH, "result token does not match tool call %s; send the token from its tool_call event", req.GetToolCallId())
	case errors.Is(err, state.ErrConflict):
		return nil, refusal.Newf(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_ALREADY_DECIDED, "tool call %s was already decided with another result (or with none, after a timeout or a cancel); this one was refused", req.GetToolCallId())
	case errors.Is(err, state.ErrUnavailable):
		// The result may have reached the store with only the answer lost:
		// the run is woken once the store is back, in case the courier
		// does not post again. A run woken without it waits on.
		if p := sess.GetPendingToolCall(); p.GetToolCallId() == req.GetToolCallId() && p.GetRunId() != "" {
			s.wake(context.WithoutCancel(ctx), state.Lease{RunID: p.GetRunId(), SessionID: req.GetSessionId()}, req.GetToolCallId())
		}
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "deliver result for tool call %s: %v", req.GetToolCallId(), err)
	default:
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "deliver result for tool call %s: %v", req.GetToolCallId(), err)
	}
	if p := sess.GetPendingToolCall(); p.GetToolCallId() == req.GetToolCallId() && p.GetRunId() != "" {
		s.wake(context.WithoutCancel(ctx), state.Lease{RunID: p.GetRunId(), SessionID: req.GetSessionId()}, req.GetToolCallId())
	}
	s.link.AckDelivered(context.WithoutCancel(ctx), sess, req.GetToolCallId())
	return &agentv1.SubmitToolResultResponse{Accepted: true}, nil
}

// StreamRunEvents replays a run's events after after_seq and follows it live.
// Ending this stream never cancels the run.
func (s *Service) StreamRunEvents(req *agentv1.StreamRunEventsRequest, stream agentv1.OrchestratorService_StreamRunEventsServer) error {
	ctx := stream.Context()
	if err := s.openRunEvents(ctx, req, stream.SendHeader); err != nil {
		return err
	}
	return s.follow(ctx, req.GetRunId(), req.GetAfterSeq(), s.oneByOne(stream.Context(), stream.Send))
}

// openRunEvents checks that the caller may follow the run named in req and
// tells them so in the stream's header; StreamRunEvents and its batched
// form both begin with it.
func (s *Service) openRunEvents(ctx context.Context, req *agentv1.StreamRunEventsRequest, sendHeader func(metadata.MD) error) error {
	if req.GetRunId() == "" {
		return refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "run_id is required")
	}
	if req.GetAfterSeq() < 0 {
		return refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "after_seq must not be negative, got %d", req.GetAfterSeq())
	}
	rs, err := s.store.GetRun(ctx, req.GetRunId())
	switch {
	case errors.Is(err, state.ErrNotFound):
		return refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_RUN_NOT_FOUND, "run %s not found", req.GetRunId())
	case err != nil:
		return refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "read run %s: %v", req.GetRunId(), err)
	case rs.GetUser() != identity.FromIncoming(ctx):
		return refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_RUN_NOT_FOUND, "run %s not found", req.GetRunId())
	}
	// Headers go out at once, so a client rejoining a quiet run learns now
	// that it is following, not after the first event or keepalive.
	return sendHeader(metadata.Pairs(rpc.StreamOpenHeader, "1"))
}

// follow sends the run's events after afterSeq until the run ends, the
// client goes away, or this replica starts draining; then the client is told
// to follow from another replica.
func (s *Service) follow(ctx context.Context, runID string, afterSeq int64, send func([]*agentv1.StreamChunk) error) error {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.drainCtx, cancel)
	defer stop()
	// A position past the log's end follows from its end, so a client that
	// names one gets what comes next, or the end, not a wait for events
	// that never come.
	if afterSeq > 0 {
		if last, _, err := s.store.LastSeq(ctx, runID); err == nil && afterSeq > last {
			afterSeq = last
		}
	}
	err := s.local.FollowBatches(fctx, s.store, runID, afterSeq, send)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return nil
	case s.isDraining():
		return refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_SHUTTING_DOWN, "this orchestrator replica is shutting down; follow run %s from another replica", runID)
	case errors.Is(err, state.ErrNotFound):
		return refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_RUN_NOT_FOUND, "run %s not found", runID)
	}
	return refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "follow run %s: %v", runID, err)
}

// withCondition fills in the condition of a result's error from its type
// when the runtime named it only there (a runtime older than the field):
// the type is then an ExecCondition value's name in CamelCase. An exception
// of the script's own keeps no condition.
func withCondition(hr *hostv1.HostResult) *hostv1.HostResult {
	e := hr.GetError()
	if e == nil || e.GetCondition() != hostv1.ExecCondition_EXEC_CONDITION_UNSPECIFIED {
		return hr
	}
	if n, ok := enumname.ParseCamel(hostv1.ExecCondition(0).Descriptor(), e.GetType()); ok {
		hr = proto.Clone(hr).(*hostv1.HostResult)
		hr.Error.Condition = hostv1.ExecCondition(n)
	}
	return hr
}
