package capability

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/refusal"
	"nexus.local/platform/sqlstore"
)

// sweepEvery is how often the audit retention runs.
const sweepEvery = time.Hour

// Pages of ListDispatches: entries by default and at most, and the script
// bytes after which a page with code ends, well under a gRPC message's 4 MiB.
const (
	DefaultDispatchPageSize  = 100
	MaxDispatchPageSize      = 1000
	MaxDispatchPageCodeBytes = 2 << 20
)

// RecordDispatch appends entries to the audit log with their exact bytes, in
// one transaction. The orchestrator sends a script to the host only after
// this returns, so a dispatch whose rows cannot be written never leaves: the
// error names the database. A missing user is the caller, a missing time is
// now.
func (s *Service) RecordDispatch(ctx context.Context, req *capabilityv1.RecordDispatchRequest) (*capabilityv1.RecordDispatchResponse, error) {
	ds := req.GetDispatches()
	if len(ds) == 0 {
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "dispatches is empty")
	}
	if len(ds) > MaxDispatchesPerRequest {
		return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_LIMIT_REACHED, "%d dispatches exceed the limit of %d per request", len(ds), MaxDispatchesPerRequest)
	}
	for i, d := range ds {
		switch {
		case d.GetSessionId() == "":
			return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "dispatches[%d].session_id is empty", i)
		case d.GetStamp().GetContentHash() == "":
			return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "dispatches[%d].stamp.content_hash is empty", i)
		case d.GetStamp().GetCode() == "":
			return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "dispatches[%d].stamp.code is empty: the audit log keeps the exact bytes that leave", i)
		case sha256Hex(d.GetStamp().GetCode()) != strings.ToLower(d.GetStamp().GetContentHash()):
			return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "dispatches[%d].stamp.content_hash %s is not the sha256 of its code (%s)", i, d.GetStamp().GetContentHash(), sha256Hex(d.GetStamp().GetCode()))
		case d.GetReviewer() == "" && d.GetEdited():
			return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "dispatches[%d].edited is set but reviewer is empty: only a person reviewing edits a script", i)
		case d.GetReviewer() == "" && d.GetReviewTime() != nil:
			return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "dispatches[%d].review_time is set but reviewer is empty", i)
		}
	}
	caller := identity.FromIncoming(ctx)
	rows := make([]sqlstore.Dispatch, len(ds))
	for i, d := range ds {
		at := s.now()
		if d.GetDispatchTime() != nil {
			at = d.GetDispatchTime().AsTime()
		}
		user := d.GetUser()
		if user == "" {
			user = caller
		}
		st := d.GetStamp()
		rows[i] = sqlstore.Dispatch{
			SessionID: d.GetSessionId(), RunID: d.GetRunId(), ToolCallID: d.GetToolCallId(), Kind: kindName(d.GetKind()), User: user,
			HostApp: st.GetHostApp(), CapabilityVersion: st.GetCapabilityVersion(), SHA256: strings.ToLower(st.GetContentHash()),
			Code: []byte(st.GetCode()), DispatchedAt: at, Reviewer: d.GetReviewer(), ReviewedAt: timeOf(d.GetReviewTime()), Edited: d.GetEdited(),
		}
	}
	if err := s.db.AppendDispatches(ctx, rows); err != nil {
		s.env.Log.ErrorContext(ctx, "dispatch refused: audit log unavailable", "session", rows[0].SessionID, "run", rows[0].RunID,
			"tool_call", rows[0].ToolCallID, "err", err)
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "the audit log could not record the dispatch, so it must not leave: %v", err)
	}
	for _, r := range rows {
		s.env.Log.InfoContext(ctx, "dispatch recorded", "session", r.SessionID, "run", r.RunID, "tool_call", r.ToolCallID,
			"kind", r.Kind, "sha256", r.SHA256, "bytes", len(r.Code), "reviewer", r.Reviewer, "edited", r.Edited)
	}
	return &capabilityv1.RecordDispatchResponse{Attempt: int32(rows[0].Attempt)}, nil
}

// RecordOutcome appends how a dispatched tool call ended.
func (s *Service) RecordOutcome(ctx context.Context, req *capabilityv1.RecordOutcomeRequest) (*capabilityv1.RecordOutcomeResponse, error) {
	switch {
	case req.GetSessionId() == "":
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "session_id is empty")
	case req.GetRunId() == "":
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "run_id is empty")
	case req.GetToolCallId() == "":
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "tool_call_id is empty")
	case req.GetOutcome() == capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_UNSPECIFIED:
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "outcome is unspecified: say how the tool call ended")
	case req.GetReviewer() != "" && req.GetOutcome() != capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_DECLINED:
		return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "reviewer is set with outcome %s: only DISPATCH_OUTCOME_DECLINED carries who declined (an approval goes with the dispatch)", req.GetOutcome())
	case req.GetReviewer() == "" && req.GetReviewTime() != nil:
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "review_time is set but reviewer is empty")
	case req.GetAttempt() < 0:
		return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "attempt is %d: it numbers sendings from 1 (0 is the latest)", req.GetAttempt())
	}
	if _, ok := capabilityv1.DispatchOutcome_name[int32(req.GetOutcome())]; !ok {
		return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "outcome %d is not a known outcome", req.GetOutcome())
	}
	err := s.db.RecordOutcome(ctx, sqlstore.Outcome{
		SessionID: req.GetSessionId(), RunID: req.GetRunId(), ToolCallID: req.GetToolCallId(), Attempt: int(req.GetAttempt()),
		Outcome: outcomeName(req.GetOutcome()), ErrorType: req.GetErrorType(), At: s.now(),
		Reviewer: req.GetReviewer(), ReviewedAt: timeOf(req.GetReviewTime()),
	})
	switch {
	case errors.Is(err, sqlstore.ErrNoSuchAttempt):
		return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_AUDIT_ENTRY_NOT_FOUND, "tool call %s of run %s has no attempt %d in the audit log", req.GetToolCallId(), req.GetRunId(), req.GetAttempt())
	case errors.Is(err, sqlstore.ErrOutcomeRecorded):
		return nil, refusal.Newf(codes.AlreadyExists, agentv1.RefusalReason_REFUSAL_REASON_ALREADY_DECIDED, "tool call %s of run %s already has a different outcome; the audit log is append-only", req.GetToolCallId(), req.GetRunId())
	case err != nil:
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "record the outcome of tool call %s: %v", req.GetToolCallId(), err)
	}
	s.env.Log.InfoContext(ctx, "dispatch outcome recorded", "session", req.GetSessionId(), "run", req.GetRunId(),
		"tool_call", req.GetToolCallId(), "attempt", req.GetAttempt(), "outcome", outcomeName(req.GetOutcome()), "error_type", req.GetErrorType(), "reviewer", req.GetReviewer())
	return &capabilityv1.RecordOutcomeResponse{}, nil
}

// ListDispatches answers with a page of a session's audit log, oldest first,
// with the exact code when include_code is set.
func (s *Service) ListDispatches(ctx context.Context, req *capabilityv1.ListDispatchesRequest) (*capabilityv1.ListDispatchesResponse, error) {
	if req.GetSessionId() == "" {
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "session_id is empty")
	}
	page := sqlstore.Page{Limit: int(req.GetPageSize())}
	switch {
	case req.GetPageSize() < 0 || req.GetPageSize() > MaxDispatchPageSize:
		return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "page_size must be between 1 and %d (0 means %d), got %d", MaxDispatchPageSize, DefaultDispatchPageSize, req.GetPageSize())
	case req.GetPageSize() == 0:
		page.Limit = DefaultDispatchPageSize
	}
	if t := req.GetPageToken(); t != "" {
		id, err := strconv.ParseInt(t, 10, 64)
		if err != nil || id < 1 {
			return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_BAD_PAGE_TOKEN, "page_token %q is not one this service gave out; pass next_page_token of the previous page", t)
		}
		page.AfterID = id
	}
	if req.GetIncludeCode() {
		page.MaxCodeBytes = MaxDispatchPageCodeBytes
	}
	rows, more, err := s.db.ListDispatchPage(ctx, req.GetSessionId(), req.GetIncludeCode(), page)
	if err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "list dispatches: %v", err)
	}
	resp := &capabilityv1.ListDispatchesResponse{Dispatches: make([]*capabilityv1.Dispatch, len(rows))}
	for i, r := range rows {
		d := &capabilityv1.Dispatch{
			User: r.User, SessionId: r.SessionID, RunId: r.RunID, ToolCallId: r.ToolCallID, Kind: kindValue(r.Kind),
			Stamp:        &capabilityv1.StampedScript{HostApp: r.HostApp, CapabilityVersion: r.CapabilityVersion, ContentHash: r.SHA256, Code: string(r.Code)},
			DispatchTime: timestamppb.New(r.DispatchedAt),
			Reviewer:     r.Reviewer, ReviewTime: timestampOf(r.ReviewedAt), Edited: r.Edited,
		}
		if r.HasOutcome {
			d.Outcome, d.ErrorType, d.OutcomeTime = outcomeValue(r.Outcome), r.ErrorType, timestamppb.New(r.OutcomeAt)
			// A decline is recorded with the outcome, since the script never
			// left approved; the entry names who declined it and when.
			if d.Reviewer == "" && r.OutcomeReviewer != "" {
				d.Reviewer, d.ReviewTime = r.OutcomeReviewer, timestampOf(r.OutcomeReviewedAt)
			}
		}
		resp.Dispatches[i] = d
	}
	if more && len(rows) > 0 {
		resp.NextPageToken = strconv.FormatInt(rows[len(rows)-1].ID, 10)
	}
	return resp, nil
}

// sweep removes audit rows older than retention every sweepEvery until ctx
// ends; a retention of 0 keeps them forever.
func (s *Service) sweep(ctx context.Context, retention time.Duration) {
	if retention <= 0 {
		return
	}
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		s.expire(ctx, retention)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expire removes the audit rows written more than retention ago.
func (s *Service) expire(ctx context.Context, retention time.Duration) {
	n, err := s.db.ExpireAudit(ctx, s.now().Add(-retention))
	switch {
	case err != nil && ctx.Err() == nil:
		s.env.Log.WarnContext(ctx, "audit retention", "err", err)
	case n > 0:
		s.env.Log.InfoContext(ctx, "audit rows expired", "rows", n, "retention", retention.String())
	}
}

// kindName is the stored name of a script kind, e.g. "task_automation".
func kindName(k capabilityv1.ScriptKind) string {
	return strings.ToLower(strings.TrimPrefix(k.String(), "SCRIPT_KIND_"))
}

func kindValue(name string) capabilityv1.ScriptKind {
	return capabilityv1.ScriptKind(capabilityv1.ScriptKind_value["SCRIPT_KIND_"+strings.ToUpper(name)])
}

// outcomeName is the stored name of an outcome, e.g. "rolled_back".
func outcomeName(o capabilityv1.DispatchOutcome) string {
	return strings.ToLower(strings.TrimPrefix(o.String(), "DISPATCH_OUTCOME_"))
}

func outcomeValue(name string) capabilityv1.DispatchOutcome {
	return capabilityv1.DispatchOutcome(capabilityv1.DispatchOutcome_value["DISPATCH_OUTCOME_"+strings.ToUpper(name)])
}

// timeOf is an optional time: zero when ts is unset.
func timeOf(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}

// timestampOf is an optional timestamp: unset when t is zero.
func timestampOf(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
