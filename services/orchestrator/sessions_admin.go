package orchestrator

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/refusal"
	"nexus.local/platform/sqlstore"
)

// OutcomeUnfinished is the outcome of a run whose end was never recorded.
const OutcomeUnfinished = "unfinished"

// ListRuns answers with the run history of the caller's session, oldest
// first. It outlives the runs' event logs.
func (s *Service) ListRuns(ctx context.Context, req *agentv1.ListRunsRequest) (*agentv1.ListRunsResponse, error) {
	if err := s.ownedHistory(ctx, req.GetSessionId()); err != nil {
		return nil, err
	}
	size, err := pageSize(req.GetPageSize(), 100, 1000)
	if err != nil {
		return nil, err
	}
	runs, err := s.history.db.ListRuns(ctx, req.GetSessionId())
	if err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "list runs: %v", err)
	}
	// A run still marked running that is not the session's active run ended
	// without its end being recorded: its replica died and the reaper failed
	// it, or the session's hot state is gone.
	active := ""
	if sess, err := s.store.Get(ctx, req.GetSessionId()); err == nil {
		active = sess.GetActiveRunId()
	}
	out := make([]*agentv1.RunRecord, len(runs))
	for i, r := range runs {
		if r.Outcome == sqlstore.OutcomeRunning && r.RunID != active {
			r.Outcome, r.ErrorMessage = OutcomeUnfinished, "the run ended without its end being recorded (its replica stopped)"
		}
		out[i] = runRecord(r)
	}
	page, next, err := paginate(out, func(x *agentv1.RunRecord) string { return x.GetRunId() }, size, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &agentv1.ListRunsResponse{Runs: page, NextPageToken: next}, nil
}

// DeleteSession removes the caller's session: its run history first, then
// every key of its hot state (session, transcript, mailbox, owner index
// entry, the event logs of its runs). A session with an active run is
// refused, so nothing writes it back meanwhile. A session whose hot state is
// gone (expired, or lost with the process of nexus dev) but whose history
// stays is its owner's to delete too. The audit log is kept: it follows its
// own retention (NEXUS_AUDIT_RETENTION).
func (s *Service) DeleteSession(ctx context.Context, req *agentv1.DeleteSessionRequest) (*agentv1.DeleteSessionResponse, error) {
	id := req.GetSessionId()
	sess, err := s.ownedSession(ctx, id)
	switch {
	case err == nil:
		if run := sess.GetActiveRunId(); run != "" {
			return nil, refusal.Newf(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_RUN_ACTIVE, "session %s has an active run %s; cancel it (POST /v1/sessions/%s:cancel) and delete the session after it ends", id, run, id)
		}
	case status.Code(err) == codes.NotFound:
		// Only the history may be left; someone else's is missing too.
		if err := s.ownedHistory(ctx, id); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	runIDs, err := s.history.db.RunIDs(ctx, id)
	if err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "delete session %s: %v", id, err)
	}
	if err := s.history.db.DeleteHistory(ctx, id); err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "delete session %s: %v", id, err)
	}
	if err := s.store.Delete(ctx, id, runIDs...); err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "delete session %s: %v", id, err)
	}
	if err := s.documents.DeleteDocument(ctx, id); err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "delete session %s's document: %v", id, err)
	}
	if err := s.models.DeleteModels(ctx, id); err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "delete session %s's review models: %v", id, err)
	}
	s.env.Log.InfoContext(ctx, "session deleted", "session", id, "runs", len(runIDs), "hot_state", sess != nil)
	return &agentv1.DeleteSessionResponse{}, nil
}

// ownedHistory checks that the caller owns the session, from its hot state
// or, once that expired or was lost (nexus dev keeps it in memory), from its
// run history, which outlives it. Someone else's session is missing.
func (s *Service) ownedHistory(ctx context.Context, sessionID string) error {
	_, err := s.ownedSession(ctx, sessionID)
	if status.Code(err) != codes.NotFound {
		return err
	}
	owner, found, herr := s.history.db.SessionOwner(ctx, sessionID)
	if herr == nil && found && owner == identity.FromIncoming(ctx) {
		return nil
	}
	return err
}

// timestamp is t as a protobuf timestamp, or nil for the zero time.
func timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
