// Package hostlink links host runtimes to their users and carries their
// calls: pairing, the link's stream, the routing of a run's calls to its
// host's delivery log, and the links open on this replica.
package hostlink

// This file serves the host link: a linked host runtime's stream of the
// calls in its delivery log, its results, and the binding of sessions to
// hosts.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/refusal"
	"nexus.local/services/orchestrator/state"
)

// hostTokenPrefix starts every host token, so the gateway can tell one from
// a user's credential without asking anyone.
const hostTokenPrefix = "nxh_"

// presenceTTL is how long an open link counts as online without being
// renewed; a link renews it every third of it, so a link whose replica died
// shows offline within presenceTTL.
const presenceTTL = 15 * time.Second

// renewEvery is when a link next renews its presence: about every third of
// presenceTTL, spread by a quarter either way. Links that opened together
// (every host of a gateway that restarted reconnects at once) would
// otherwise renew together for as long as they stay open, in one burst of
// store writes that holds up the calls due at that moment.
func renewEvery() time.Duration {
	base := presenceTTL / 3
	return base*3/4 + rand.N(base/2)
}

// sentWindow is how many of the latest seqs a link remembers sending. The
// seqs of a host's log count up by one per call in the order the calls
// entered it, so a call the window has passed was in the log before the
// sentWindow calls sent since it, and a read of the log sent it already.
const sentWindow = 256

// devHostID is the host nexus dev links its own runtime as.
const devHostID = "h_dev"

// Server implements agentv1.HostLinkServiceServer: pairing, the links of
// host runtimes and the results and documents they hand in.
type Server struct {
	agentv1.UnimplementedHostLinkServiceServer
	Store     state.Store
	Hosts     state.Hosts
	Documents state.Documents
	// Links is the host links open on this replica.
	Links *Links
	Log   *slog.Logger
	Now   func() time.Time
	// Draining ends when the replica is told to stop: links then move to
	// another replica.
	Draining context.Context
	// Submit takes a host's result for the session's pending call.
	Submit func(context.Context, *agentv1.SubmitToolResultRequest) (*agentv1.SubmitToolResultResponse, error)
}

// tokenDigest is what the store keeps of a host token.
func tokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// hostByToken authenticates a host token; a revoked or unknown one is
// Unauthenticated.
func (s *Server) hostByToken(ctx context.Context, token string) (*agentv1.LinkedHost, error) {
	if !strings.HasPrefix(token, hostTokenPrefix) {
		return nil, refusal.New(codes.Unauthenticated, agentv1.RefusalReason_REFUSAL_REASON_HOST_TOKEN_UNKNOWN, "host_token is missing or is not a host token (nxh_...): pair the runtime first")
	}
	h, err := s.Hosts.HostByToken(ctx, tokenDigest(token))
	if errors.Is(err, state.ErrNotFound) {
		return nil, refusal.New(codes.Unauthenticated, agentv1.RefusalReason_REFUSAL_REASON_HOST_TOKEN_UNKNOWN, "the host token is unknown or was revoked: pair the runtime again")
	}
	if err != nil {
		return nil, state.Status(err, "check host token")
	}
	return h, nil
}

// LinkDevHost links nexus dev's own runtime to the local user with the
// token nexus dev gave it, so the person pairs nothing.
func (s *Server) LinkDevHost(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	if !strings.HasPrefix(token, hostTokenPrefix) {
		return fmt.Errorf("NEXUS_DEV_LINK_TOKEN must start with %s", hostTokenPrefix)
	}
	if _, err := s.Hosts.HostByToken(ctx, tokenDigest(token)); err == nil {
		return nil
	}
	h := &agentv1.LinkedHost{HostId: devHostID, HostApp: "freecad", Owner: identity.LocalUser, CreateTime: timestamppb.New(s.Now())}
	if err := s.Hosts.CreateHost(ctx, h, tokenDigest(token)); err != nil && !errors.Is(err, state.ErrConflict) {
		return fmt.Errorf("link the dev host: %w", err)
	}
	return nil
}

// SessionHost is the host a new session of hostApp binds to: the one named
// (the caller's, of that application), else the caller's one host of the
// application, else none yet. Several are a conflict the caller resolves.
func (s *Server) SessionHost(ctx context.Context, hostApp, hostID string) (string, error) {
	if s.Hosts == nil {
		return "", nil
	}
	owner := identity.FromIncoming(ctx)
	if hostID != "" {
		h, err := s.Hosts.GetHost(ctx, hostID)
		if errors.Is(err, state.ErrNotFound) || (err == nil && h.GetOwner() != owner) {
			return "", refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_HOST_NOT_FOUND, "host %s not found among your linked hosts (GET /v1/hosts lists them)", hostID)
		}
		if err != nil {
			return "", state.Status(err, "read host")
		}
		if h.GetHostApp() != hostApp {
			return "", refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_HOST_MISMATCH, "host %s serves %s, not %s", hostID, h.GetHostApp(), hostApp)
		}
		return hostID, nil
	}
	hosts, err := OwnHosts(ctx, s.Hosts, owner, hostApp)
	if err != nil {
		return "", state.Status(err, "list linked hosts")
	}
	switch len(hosts) {
	case 0:
		return "", nil
	case 1:
		return hosts[0].GetHostId(), nil
	}
	var names []string
	for _, h := range hosts {
		names = append(names, fmt.Sprintf("%s (%s, online %t)", h.GetHostId(), h.GetDocument(), h.GetOnline()))
	}
	return "", refusal.Newf(codes.Aborted, agentv1.RefusalReason_REFUSAL_REASON_HOST_AMBIGUOUS, "you have %d linked %s hosts; name one in host_id: %s", len(hosts), hostApp, strings.Join(names, ", "))
}

// AckDelivered removes an answered call from the delivery logs it may be
// in, so it is not offered again; the run removes it too once it decides.
func (s *Server) AckDelivered(ctx context.Context, sess *agentv1.Session, toolCallID string) {
	if s.Hosts == nil {
		return
	}
	for _, key := range []string{sess.GetHostId(), state.WaitingKey(sess.GetOwner(), sess.GetHostApp())} {
		if key == "" {
			continue
		}
		if err := s.Hosts.Ack(ctx, key, sess.GetSessionId(), toolCallID); err != nil {
			s.Log.Warn("remove the answered call from the delivery log", "session", sess.GetSessionId(), "tool_call", toolCallID, "err", err)
		}
	}
}

// RevokeHost unlinks one of the caller's hosts.
func (s *Server) RevokeHost(ctx context.Context, req *agentv1.RevokeHostRequest) (*agentv1.RevokeHostResponse, error) {
	h, err := s.Hosts.GetHost(ctx, req.GetHostId())
	if errors.Is(err, state.ErrNotFound) || (err == nil && h.GetOwner() != identity.FromIncoming(ctx)) {
		return nil, refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_HOST_NOT_FOUND, "host %s not found", req.GetHostId())
	}
	if err != nil {
		return nil, state.Status(err, "read host")
	}
	if err := s.Hosts.RevokeHost(ctx, req.GetHostId()); err != nil {
		return nil, state.Status(err, "revoke host")
	}
	s.Log.Info("host revoked", "host", req.GetHostId())
	return &agentv1.RevokeHostResponse{}, nil
}

// SubmitHostResult is SubmitToolResult for the host's owner, for a session
// bound to the host.
func (s *Server) SubmitHostResult(ctx context.Context, req *agentv1.SubmitHostResultRequest) (*agentv1.SubmitHostResultResponse, error) {
	h, err := s.hostByToken(ctx, req.GetHostToken())
	if err != nil {
		return nil, err
	}
	sess, err := s.Store.Get(ctx, req.GetSessionId())
	if errors.Is(err, state.ErrNotFound) || (err == nil && (sess.GetOwner() != h.GetOwner() || sess.GetHostId() != h.GetHostId())) {
		return nil, refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_HOST_NOT_LINKED, "session %s is not bound to host %s", req.GetSessionId(), h.GetHostId())
	}
	if err != nil {
		return nil, state.Status(err, "read session")
	}
	resp, err := s.Submit(identity.WithCaller(ctx, h.GetOwner()), &agentv1.SubmitToolResultRequest{
		SessionId: req.GetSessionId(), ToolCallId: req.GetToolCallId(), ResultToken: req.GetResultToken(), Result: req.GetResult(),
	})
	if err != nil {
		return nil, err
	}
	return &agentv1.SubmitHostResultResponse{Accepted: resp.GetAccepted()}, nil
}

// LinkHost registers the runtime and streams its calls: every call of its
// log without a result first (a reconnect gets again what it may have
// lost), then each new one, until the link ends or the host is revoked.
func (s *Server) LinkHost(req *agentv1.LinkHostRequest, stream agentv1.HostLinkService_LinkHostServer) error {
	ctx := stream.Context()
	h, err := s.hostByToken(ctx, req.GetHostToken())
	if err != nil {
		return err
	}
	if app := req.GetHostApp(); app != "" && app != h.GetHostApp() {
		return refusal.Newf(codes.FailedPrecondition, agentv1.RefusalReason_REFUSAL_REASON_HOST_MISMATCH, "this host was paired for %s but the runtime serves %s; pair it again", h.GetHostApp(), app)
	}
	if h, err = s.Hosts.UpdateHost(ctx, h.GetHostId(), func(x *agentv1.LinkedHost) error {
		x.Document, x.RuntimeVersion, x.HostVersion = req.GetDocument(), req.GetRuntimeVersion(), req.GetHostVersion()
		return nil
	}); err != nil {
		return state.Status(err, "register host")
	}
	id := h.GetHostId()
	log := s.Log.With("host", id)
	conn := state.NewID("l_")
	// The handed calls are registered before the log is first read, so a
	// call offered in between comes one way or the other.
	handed, unhand := s.Links.Open(id)
	defer unhand()
	kick, stop, err := s.Hosts.Watch(ctx, id)
	if err != nil {
		return state.Status(err, "watch host log")
	}
	defer stop()
	if err := s.Hosts.SetOnline(ctx, id, conn, presenceTTL); err != nil {
		return state.Status(err, "record host online")
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
		defer cancel()
		if err := s.Hosts.SetOffline(cctx, id, conn); err != nil {
			log.Warn("record host offline", "err", err)
		}
		log.Info("host link closed")
	}()
	if err := s.adoptWaiting(ctx, h); err != nil {
		return err
	}
	h.Online = true
	if err := stream.Send(&agentv1.HostLinkEvent{Event: &agentv1.HostLinkEvent_Linked{Linked: h}}); err != nil {
		return err
	}
	log.Info("host linked", "after_seq", req.GetAfterSeq(), "document", h.GetDocument())
	renew := time.NewTimer(renewEvery())
	defer renew.Stop()
	// sent holds the seqs this link sent, the last sentWindow of them: a
	// handed call may come before one with a lower seq that the log brings,
	// and after the log brought the same call.
	sent := map[int64]bool{}
	var top int64
	send := func(c *agentv1.HostCall) error {
		seq := c.GetSeq()
		if sent[seq] || seq <= top-sentWindow {
			return nil
		}
		if err := stream.Send(&agentv1.HostLinkEvent{Event: &agentv1.HostLinkEvent_Call{Call: c}}); err != nil {
			return err
		}
		sent[seq], top = true, max(top, seq)
		if len(sent) > 2*sentWindow {
			maps.DeleteFunc(sent, func(s int64, _ bool) bool { return s <= top-sentWindow })
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.Draining.Done():
			return refusal.New(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_SHUTTING_DOWN, "this orchestrator replica is shutting down; link again")
		case <-renew.C:
			err := s.Hosts.RenewOnline(ctx, id, conn, presenceTTL)
			if errors.Is(err, state.ErrLeaseLost) {
				return superseded(log)
			}
			if err != nil {
				log.Warn("renew host presence", "err", err)
			}
			renew.Reset(renewEvery())
			continue
		case c := <-handed:
			if err := send(c); err != nil {
				return err
			}
			continue
		case <-kick:
		}
		if _, err := s.Hosts.GetHost(ctx, id); errors.Is(err, state.ErrNotFound) {
			return refusal.New(codes.PermissionDenied, agentv1.RefusalReason_REFUSAL_REASON_HOST_REVOKED, "this host was revoked; pair it again to link it")
		}
		if live, err := s.Hosts.LinkConn(ctx, id); err == nil && live != "" && live != conn {
			return superseded(log)
		}
		calls, err := s.Hosts.Calls(ctx, id)
		if err != nil {
			log.Warn("read host log", "err", err)
			continue
		}
		for _, c := range calls {
			if err := send(c); err != nil {
				return err
			}
		}
	}
}

// superseded ends a link a newer link of its host took over: a host has one
// live link, so one executor carries each call. The reason rides as a typed
// detail the gateway turns into the link's closing event.
func superseded(log *slog.Logger) error {
	log.Info("host link superseded by a newer link of the host")
	msg := "a newer link of this host took over (another runtime with this host's token, or this one reconnected); this link is closed so that one runtime carries each call"
	st, err := status.New(codes.Aborted, msg).WithDetails(&agentv1.Error{Code: agentv1.ErrorCode_ERROR_CODE_HOST_SUPERSEDED, Message: msg})
	if err != nil {
		return status.Error(codes.Aborted, msg)
	}
	return st.Err()
}

// adoptWaiting binds the owner's sessions that wait for a first host of h's
// application to h, and moves their waiting calls into h's log.
func (s *Server) adoptWaiting(ctx context.Context, h *agentv1.LinkedHost) error {
	key := state.WaitingKey(h.GetOwner(), h.GetHostApp())
	calls, err := s.Hosts.Calls(ctx, key)
	if err != nil {
		return state.Status(err, "read waiting calls")
	}
	for _, c := range calls {
		sess, err := s.Store.Update(ctx, c.GetSessionId(), func(x *agentv1.Session) error {
			if x.GetHostId() == "" {
				x.HostId = h.GetHostId()
			}
			return nil
		})
		if err == nil && sess.GetHostId() == h.GetHostId() {
			c.GetToolCall().HostId = h.GetHostId()
			if _, err := s.Hosts.Offer(ctx, h.GetHostId(), c); err != nil {
				return state.Status(err, "move a waiting call to the host")
			}
		} else if err != nil && !errors.Is(err, state.ErrNotFound) {
			return state.Status(err, "bind a waiting session")
		}
		if err := s.Hosts.Ack(ctx, key, c.GetSessionId(), c.GetToolCall().GetToolCallId()); err != nil {
			return state.Status(err, "move a waiting call to the host")
		}
	}
	return nil
}
