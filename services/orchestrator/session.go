package orchestrator

import (
	"context"
	"errors"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/refusal"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/state"
)

// Sessions: create, read, list, and cancel a session's run.

// ownedSession returns the caller's session. Someone else's session is
// reported as missing, never as forbidden, so ids cannot be probed.
func (s *Service) ownedSession(ctx context.Context, sessionID string) (*agentv1.Session, error) {
	if sessionID == "" {
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "session_id is required")
	}
	sess, err := s.store.Get(ctx, sessionID)
	if errors.Is(err, state.ErrNotFound) || (err == nil && sess.GetOwner() != identity.FromIncoming(ctx)) {
		return nil, refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_SESSION_NOT_FOUND, "session %s not found", sessionID)
	}
	if err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "read session %s: %v", sessionID, err)
	}
	return sess, nil
}

// CreateSession checks the host and the model and stores a new session.
func (s *Service) CreateSession(ctx context.Context, req *agentv1.CreateSessionRequest) (*agentv1.Session, error) {
	host := strings.TrimSpace(req.GetHostApp())
	if host == "" {
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "host_app is required, e.g. \"freecad\"")
	}
	hosts, err := s.capability.ListHosts(ctx, &capabilityv1.ListHostsRequest{})
	if err != nil {
		return nil, peerStatus(err, "list hosts from the capability service")
	}
	var known []string
	found := false
	for _, h := range hosts.GetHosts() {
		known = append(known, h.GetHostApp())
		found = found || h.GetHostApp() == host
	}
	if !found {
		return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_UNKNOWN_HOST_APP, "unknown host_app %q; known hosts: %s", host, strings.Join(known, ", "))
	}
	if err := validPolicy(req.GetReviewPolicy()); err != nil {
		return nil, err
	}
	model, err := s.resolveModel(ctx, req.GetModel())
	if err != nil {
		return nil, err
	}
	hostID := ""
	if req.GetEval() {
		// An eval session's client carries its calls to runtimes of its
		// own: no linked host of the person's may take one.
		if req.GetHostId() != "" {
			return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, "an eval session binds to no linked host: leave host_id empty")
		}
	} else if hostID, err = s.link.SessionHost(ctx, host, req.GetHostId()); err != nil {
		return nil, err
	}
	sess := &agentv1.Session{
		Eval:         req.GetEval(),
		HostId:       hostID,
		NewDocument:  req.GetNewDocument(),
		ReviewPolicy: call.EffectivePolicy(req.GetReviewPolicy()),
		UpdateTime:   timestamppb.New(s.now()),
		SessionId:    state.NewID("s_"),
		HostApp:      host,
		Model:        model.GetId(),
		Owner:        identity.FromIncoming(ctx),
		CreateTime:   timestamppb.New(s.now()),
	}
	if err := s.store.Create(ctx, sess); err != nil {
		return nil, state.Status(err, "store session")
	}
	return sess, nil
}

// resolveModel finds id in the router's catalog; empty id means the default.
func (s *Service) resolveModel(ctx context.Context, id string) (*modelv1.ModelInfo, error) {
	cat, err := s.listModels(ctx)
	if err != nil {
		return nil, peerStatus(err, "list models from the model-router")
	}
	if id == "" {
		id = cat.GetDefaultModel()
	}
	var ids []string
	for _, m := range cat.GetModels() {
		if m.GetId() == id {
			return m, nil
		}
		ids = append(ids, m.GetId())
	}
	return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_UNKNOWN_MODEL, "unknown model %q; the catalog has: %s", id, strings.Join(ids, ", "))
}

// GetSession returns the caller's session.
func (s *Service) GetSession(ctx context.Context, req *agentv1.GetSessionRequest) (*agentv1.Session, error) {
	return s.ownedSession(ctx, req.GetSessionId())
}

// ListSessions returns the caller's sessions, newest first.
func (s *Service) ListSessions(ctx context.Context, req *agentv1.ListSessionsRequest) (*agentv1.ListSessionsResponse, error) {
	size, err := pageSize(req.GetPageSize(), 50, 500)
	if err != nil {
		return nil, err
	}
	list, err := s.store.List(ctx, identity.FromIncoming(ctx))
	if err != nil {
		return nil, refusal.Newf(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "list sessions: %v", err)
	}
	if !req.GetIncludeEval() {
		// nexus eval's sessions are measurements, not the person's work.
		list = slices.DeleteFunc(list, (*agentv1.Session).GetEval)
	}
	page, next, err := paginate(list, func(x *agentv1.Session) string { return x.GetSessionId() }, size, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &agentv1.ListSessionsResponse{Sessions: page, NextPageToken: next}, nil
}
