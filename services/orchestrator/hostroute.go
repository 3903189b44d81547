package orchestrator

// This file routes a session's calls to its bound host's durable delivery
// log: written there before anyone is told of the call, removed once the
// call is decided, so a host that was offline or lost its link gets it on
// its next connect.

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// bindHost names the linked host call goes to: the session's, or, for a
// session not bound yet, the owner's one host of the application, which the
// session is then bound to. Empty while the owner has none (or several):
// the call then waits in the owner's waiting log for the first to link.
func (r *runner) bindHost(ctx context.Context, call *agentv1.ToolCall) error {
	if r.s.hosts == nil || call.GetResultToken() == "" {
		return nil
	}
	sess, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) { return r.s.store.Get(ctx, r.sessionID) })
	if err != nil {
		return r.stateErr(ctx, "read session", err)
	}
	hostID := sess.GetHostId()
	if hostID != "" {
		if _, err := r.s.hosts.GetHost(ctx, hostID); errors.Is(err, state.ErrNotFound) {
			// Revoked since: the session waits for a host again.
			hostID = ""
		}
	}
	if hostID == "" {
		hosts, err := r.s.ownHosts(ctx, r.owner, r.hostApp)
		if err != nil {
			return r.stateErr(ctx, "list linked hosts", err)
		}
		if len(hosts) == 1 {
			hostID = hosts[0].GetHostId()
		}
	}
	if hostID != sess.GetHostId() {
		if _, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
			return r.s.store.Update(ctx, r.sessionID, func(x *agentv1.Session) error { x.HostId = hostID; return nil })
		}); err != nil {
			return r.stateErr(ctx, "bind session to host", err)
		}
	}
	call.HostId = hostID
	return nil
}

// logKey is the delivery log a call of this run goes to.
func (r *runner) logKey(call *agentv1.ToolCall) string {
	if call.GetHostId() != "" {
		return call.GetHostId()
	}
	return state.WaitingKey(r.owner, r.hostApp)
}

// routeToHost writes the pending call to its host's delivery log (a call
// sent again after a replica stopped is the same entry) and, when that host
// is not online, tells every follower that the call waits for it.
func (r *runner) routeToHost(ctx context.Context) error {
	call := r.rs.GetPending().GetToolCall()
	if r.s.hosts == nil || call.GetResultToken() == "" {
		return nil
	}
	hc := &agentv1.HostCall{SessionId: r.sessionID, RunId: r.runID, ToolCall: proto.Clone(call).(*agentv1.ToolCall), OfferTime: timestamppb.New(r.s.now())}
	if err := retry(ctx, func(ctx context.Context) error {
		seq, err := r.s.hosts.Offer(ctx, r.logKey(call), hc)
		hc.Seq = seq
		return err
	}); err != nil {
		return r.stateErr(ctx, "write the call to the host's delivery log", err)
	}
	if call.GetHostId() != "" {
		r.s.links.hand(call.GetHostId(), hc)
	}
	return nil
}

// hostWaiting tells followers that the call waits for a host: the
// session's, which is offline, or, for a session bound to none yet, the
// first host of its application the owner links. Nothing when the host is
// online.
func (r *runner) hostWaiting(ctx context.Context) error {
	call := r.rs.GetPending().GetToolCall()
	if r.s.hosts == nil || call.GetResultToken() == "" {
		return nil
	}
	name := r.host.GetDisplayName()
	if name == "" {
		name = r.hostApp
	}
	w := &agentv1.HostWaiting{ToolCallId: call.GetToolCallId(), HostId: call.GetHostId(), HostApp: r.hostApp}
	if call.GetHostId() == "" {
		w.Text = fmt.Sprintf("Waiting for a %s to connect: the first %s host you link (nexus host %s --connect URL) gets the call, unless a client paired with a runtime carries it first.", name, name, r.hostApp)
		return r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_HostWaiting{HostWaiting: w}})
	}
	h, err := r.s.hosts.GetHost(ctx, call.GetHostId())
	if err != nil || h.GetOnline() {
		return nil
	}
	w.OfflineSince = h.GetOfflineSince()
	since := ""
	if t := h.GetOfflineSince(); t != nil {
		since = ", offline since " + t.AsTime().UTC().Format("15:04:05 UTC")
	}
	w.Text = fmt.Sprintf("Waiting for %s host %s%s: the call is delivered when it connects again.", name, call.GetHostId(), since)
	return r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_HostWaiting{HostWaiting: w}})
}

// unrouteHost removes the decided call from its delivery log, so it is not
// offered again. A failure is logged only: a stale entry is answered by the
// host's ledger and its result refused. sess, when set, is the session as
// just stored, which saves reading it again.
func (r *runner) unrouteHost(ctx context.Context, call *agentv1.ToolCall, sess *agentv1.Session) {
	if r.s.hosts == nil || call.GetResultToken() == "" {
		return
	}
	keys := []string{r.logKey(call)}
	if sess == nil {
		got, err := r.s.store.Get(ctx, r.sessionID)
		if err == nil {
			sess = got
		}
	}
	// A waiting call may have moved to the host the session bound to since.
	if sess.GetHostId() != "" && sess.GetHostId() != call.GetHostId() {
		keys = append(keys, sess.GetHostId())
	}
	for _, key := range keys {
		if err := r.s.hosts.Ack(ctx, key, r.sessionID, call.GetToolCallId()); err != nil {
			r.log.Warn("remove the call from the host's delivery log", "tool_call", call.GetToolCallId(), "err", err)
		}
	}
}

// ownHosts lists owner's linked hosts of hostApp.
func (s *Service) ownHosts(ctx context.Context, owner, hostApp string) ([]*agentv1.LinkedHost, error) {
	all, err := s.hosts.ListHosts(ctx, owner)
	if err != nil {
		return nil, err
	}
	var out []*agentv1.LinkedHost
	for _, h := range all {
		if h.GetHostApp() == hostApp {
			out = append(out, h)
		}
	}
	return out, nil
}
