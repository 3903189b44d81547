package orchestrator

// This file holds the 3D models of calls' results, for the person's review.

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/refusal"
	"nexus.local/services/orchestrator/state"
)

// GetCallModel returns the model the host exported with a call's result of
// the caller's session.
func (s *Service) GetCallModel(ctx context.Context, req *agentv1.GetCallModelRequest) (*hostv1.ExportedModel, error) {
	if req.GetToolCallId() == "" {
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "tool_call_id is required: the call whose result carried the model")
	}
	sess, err := s.ownedSession(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	which, what := state.ModelAfter, "after its script"
	if req.GetState() == agentv1.ModelState_MODEL_STATE_BEFORE {
		which, what = state.ModelBefore, "before its script"
	}
	m, err := s.models.Model(ctx, sess.GetSessionId(), req.GetToolCallId(), which)
	if errors.Is(err, state.ErrNotFound) {
		return nil, refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_NO_MODEL, "call %s of session %s has no 3D model %s: its host exported none (a read-only script, "+
			"a host runtime that exports no model, or a model over NEXUS_REVIEW_MODEL_BYTES, which its result's note says)", req.GetToolCallId(), sess.GetSessionId(), what)
	}
	if err != nil {
		return nil, state.Status(err, "read review model")
	}
	return m, nil
}
