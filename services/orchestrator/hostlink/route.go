package hostlink

// This file routes a session's calls to its bound host's durable delivery
// log: written there before anyone is told of the call, removed once the
// call is decided, so a host that was offline or lost its link gets it on
// its next connect.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// Route is one run's way to its host: the delivery log its calls go to,
// and what its followers are told while a call waits for a host.
type Route struct {
	Store state.Store
	Hosts state.Hosts
	Links *Links
	Now   func() time.Time
	Log   *slog.Logger

	SessionID, RunID, Owner, HostApp string
	// Eval says the run is an eval session's: its calls go to no host's
	// delivery log, only to the client that carries them (nexus eval, to
	// runtimes of its own), so no person's host ever gets one.
	Eval bool
	// HostName is the application's name as people know it; empty, HostApp.
	HostName string
	// Metadata tells the run's followers something.
	Metadata func(context.Context, *agentv1.Metadata) error
	// StateErr reports a store failure, or the cause when the run stopped.
	StateErr func(ctx context.Context, what string, err error) error
}

// Bind names the linked host call goes to: the session's, or, for a
// session not bound yet, the owner's one host of the application, which the
// session is then bound to. Empty while the owner has none (or several):
// the call then waits in the owner's waiting log for the first to link.
func (r *Route) Bind(ctx context.Context, call *agentv1.ToolCall) error {
	if !r.routed(call) {
		return nil
	}
	sess, err := state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) { return r.Store.Get(ctx, r.SessionID) })
	if err != nil {
		return r.StateErr(ctx, "read session", err)
	}
	// The host lookups wait a store outage out like every other step of a
	// durable run: a blip delays the call, it never fails the run.
	hostID := sess.GetHostId()
	if hostID != "" {
		_, err := state.RetryStore(ctx, func(ctx context.Context) (*agentv1.LinkedHost, error) { return r.Hosts.GetHost(ctx, hostID) })
		if errors.Is(err, state.ErrNotFound) {
			// Revoked since: the session waits for a host again.
			hostID = ""
		}
	}
	if hostID == "" {
		hosts, err := state.RetryStore(ctx, func(ctx context.Context) ([]*agentv1.LinkedHost, error) {
			return OwnHosts(ctx, r.Hosts, r.Owner, r.HostApp)
		})
		if err != nil {
			return r.StateErr(ctx, "list linked hosts", err)
		}
		if len(hosts) == 1 {
			hostID = hosts[0].GetHostId()
		}
	}
	if hostID != sess.GetHostId() {
		if _, err := state.RetryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
			return r.Store.Update(ctx, r.SessionID, func(x *agentv1.Session) error { x.HostId = hostID; return nil })
		}); err != nil {
			return r.StateErr(ctx, "bind session to host", err)
		}
	}
	call.HostId = hostID
	return nil
}

// routed says whether call goes through a host's delivery log: a call with
// a result token, of a run whose calls hosts may carry.
func (r *Route) routed(call *agentv1.ToolCall) bool {
	return r.Hosts != nil && !r.Eval && call.GetResultToken() != ""
}

// logKey is the delivery log a call of this run goes to.
func (r *Route) logKey(call *agentv1.ToolCall) string {
	if call.GetHostId() != "" {
		return call.GetHostId()
	}
	return state.WaitingKey(r.Owner, r.HostApp)
}

// Offer writes the pending call to its host's delivery log (a call
// sent again after a replica stopped is the same entry) and, when that host
// is not online, tells every follower that the call waits for it.
func (r *Route) Offer(ctx context.Context, call *agentv1.ToolCall) error {
	if !r.routed(call) {
		return nil
	}
	hc := &agentv1.HostCall{SessionId: r.SessionID, RunId: r.RunID, ToolCall: proto.Clone(call).(*agentv1.ToolCall), OfferTime: timestamppb.New(r.Now())}
	if err := state.Retry(ctx, func(ctx context.Context) error {
		seq, err := r.Hosts.Offer(ctx, r.logKey(call), hc)
		hc.Seq = seq
		return err
	}); err != nil {
		return r.StateErr(ctx, "write the call to the host's delivery log", err)
	}
	if call.GetHostId() != "" {
		r.Links.Hand(call.GetHostId(), hc)
	}
	return nil
}

// Waiting tells followers that the call waits for a host: the
// session's, which is offline, or, for a session bound to none yet, the
// first host of its application the owner links. Nothing when the host is
// online.
func (r *Route) Waiting(ctx context.Context, call *agentv1.ToolCall) error {
	if !r.routed(call) {
		return nil
	}
	name := r.HostName
	if name == "" {
		name = r.HostApp
	}
	w := &agentv1.HostWaiting{ToolCallId: call.GetToolCallId(), HostId: call.GetHostId(), HostApp: r.HostApp}
	if call.GetHostId() == "" {
		w.Text = fmt.Sprintf("Waiting for a %s to connect: the first %s host you link (nexus host %s --connect URL) gets the call, unless a client paired with a runtime carries it first.", name, name, r.HostApp)
		return r.Metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_HostWaiting{HostWaiting: w}})
	}
	h, err := r.Hosts.GetHost(ctx, call.GetHostId())
	if err != nil || h.GetOnline() {
		return nil
	}
	w.OfflineSince = h.GetOfflineSince()
	since := ""
	if t := h.GetOfflineSince(); t != nil {
		since = ", offline since " + t.AsTime().UTC().Format("15:04:05 UTC")
	}
	w.Text = fmt.Sprintf("Waiting for %s host %s%s: the call is delivered when it connects again.", name, call.GetHostId(), since)
	return r.Metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_HostWaiting{HostWaiting: w}})
}

// Unroute removes the decided call from its delivery log, so it is not
// offered again. A failure is logged only: a stale entry is answered by the
// host's ledger and its result refused. sess, when set, is the session as
// just stored, which saves reading it again.
func (r *Route) Unroute(ctx context.Context, call *agentv1.ToolCall, sess *agentv1.Session) {
	if !r.routed(call) {
		return
	}
	keys := []string{r.logKey(call)}
	if sess == nil {
		got, err := r.Store.Get(ctx, r.SessionID)
		if err == nil {
			sess = got
		}
	}
	// A waiting call may have moved to the host the session bound to since.
	if sess.GetHostId() != "" && sess.GetHostId() != call.GetHostId() {
		keys = append(keys, sess.GetHostId())
	}
	for _, key := range keys {
		if err := r.Hosts.Ack(ctx, key, r.SessionID, call.GetToolCallId()); err != nil {
			r.Log.Warn("remove the call from the host's delivery log", "tool_call", call.GetToolCallId(), "err", err)
		}
	}
}

// OwnHosts lists owner's linked hosts of hostApp.
func OwnHosts(ctx context.Context, hosts state.Hosts, owner, hostApp string) ([]*agentv1.LinkedHost, error) {
	all, err := hosts.ListHosts(ctx, owner)
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
