package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/refusal"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/state"
)

// cancelWait bounds how long a cancel waits for its run to end: a run whose
// script already left for its host ends once the host's outcome is recorded,
// and the cancel says what the host did if that comes in this time.
const cancelWait = 30 * time.Second

// errCancelAnswered stops reading the run's log once the cancel knows what
// to answer.
const errCancelAnswered = state.Error("the cancel has its answer")

// CancelRun signals the session's active run to stop, on whichever replica
// runs it. A script not yet on its host never runs; one that already left
// cannot be unrun, so the run waits for its outcome and records it, and the
// answer says that the script had already left and, once known, what the
// host did.
func (s *Service) CancelRun(ctx context.Context, req *agentv1.CancelRunRequest) (*agentv1.CancelRunResponse, error) {
	sess, err := s.ownedSession(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	runID := sess.GetActiveRunId()
	if runID == "" {
		return &agentv1.CancelRunResponse{}, nil
	}
	// What the run says after the cancel is logged after this seq.
	from, _, err := s.store.LastSeq(ctx, runID)
	if err != nil {
		from = 0
	}
	if err := s.store.Cancel(ctx, runID); err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "cancel run %s: %v", runID, err)
	}
	// A suspended run has nobody watching: wake it so it ends now.
	s.wake(context.WithoutCancel(ctx), state.Lease{RunID: runID, SessionID: sess.GetSessionId()}, "")
	resp := &agentv1.CancelRunResponse{RunId: runID}
	s.cancelOutcome(ctx, resp, from)
	return resp, nil
}

// cancelOutcome reads the cancelled run's log after seq from until it ends
// (or cancelWait passes) and fills in resp what it tells of a script that
// had already left for its host: its call, what the host did, and the
// run's last words on it.
func (s *Service) cancelOutcome(ctx context.Context, resp *agentv1.CancelRunResponse, from int64) {
	wait := cancelWait
	if d, ok := ctx.Deadline(); ok {
		// A caller with a deadline of its own gets an answer before it.
		wait = min(wait, time.Until(d)*4/5)
	}
	wctx, stop := context.WithTimeout(ctx, wait)
	defer stop()
	var left *agentv1.ScriptLeft
	if rs, err := s.store.GetRun(ctx, resp.GetRunId()); err == nil && rs.GetPending().GetCancelAwaitsOutcome() {
		// An earlier cancel found the script on its way; the run waits.
		left = &agentv1.ScriptLeft{ToolCallId: call.BaseCallID(rs.GetPending().GetToolCall().GetToolCallId()), Text: call.ScriptLeftText(s.cfg.ToolResultTimeout)}
		resp.LeftToolCallId, resp.Message = left.GetToolCallId(), left.GetText()
	}
	// ran is the last host result the run took after the cancel: a call
	// that ran while the run stopped, whether or not it was told it left.
	var ran *agentv1.ToolResult
	err := s.store.Follow(wctx, resp.GetRunId(), from, state.EachChunk(func(c *agentv1.StreamChunk) error {
		md := c.GetMetadata()
		switch {
		case md.GetScriptLeft() != nil:
			left = md.GetScriptLeft()
			resp.LeftToolCallId = left.GetToolCallId()
			resp.Message = left.GetText()
		case md.GetToolResult() != nil:
			ran = md.GetToolResult()
		case c.GetError() != nil || c.GetComplete() != nil:
			if ran != nil && (left != nil || !ran.GetNoResult()) {
				resp.LeftToolCallId = call.BaseCallID(ran.GetToolCallId())
				resp.Outcome = call.ResultOutcome(ran)
			}
			if resp.GetLeftToolCallId() != "" {
				resp.Message = c.GetError().GetMessage()
			}
			return errCancelAnswered
		}
		return nil
	}))
	if err != nil && !errors.Is(err, errCancelAnswered) && left != nil {
		resp.Message = fmt.Sprintf("%s The host has not answered yet; the run records what it did when it does.", left.GetText())
	}
}
