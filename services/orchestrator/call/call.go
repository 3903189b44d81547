// Package call carries one pending tool call of a run through its stages:
// its dispatch (offered to the host, previewed first, or held for a
// person's review), the collect step that takes up what came back, the
// decision that closes its mailbox, and the outcome record of each sending.
// The runner asks it for a call's result or a suspension.
package call

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/propagation"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/hostlink"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/state"
)

// Limits are the loop's limits, as the orchestrator's configuration sets
// them.
type Limits struct {
	ToolResultTimeout  time.Duration
	ReviewTimeout      time.Duration
	HostScriptTimeout  time.Duration
	MaxFixRetries      int
	MaxIterations      int
	HeavyMaxTokens     int
	LightMaxTokens     int
	MaxToolResultChars int
	RunLease           time.Duration
	CompactAt          float64
	MaxTurns           int
	// ReviewModelBytes bounds each 3D review model asked of a host; 0 asks
	// for none.
	ReviewModelBytes int64
}

// LeaseTTL is how long one renewal keeps a run's lease: two thirds of
// RunLease, renewed every third.
func (l Limits) LeaseTTL() time.Duration { return l.RunLease * 2 / 3 }

// Deps is what the replica lends every run's calls.
type Deps struct {
	Store      state.Store
	Hosts      state.Hosts
	Models     state.Models
	Links      *hostlink.Links
	Capability capabilityv1.CapabilityServiceClient
	Metrics    *metrics.Metrics
	Outbox     *Outbox
	Cfg        Limits
	Propagator propagation.TextMapPropagator
	Now        func() time.Time
}

// Writer is how a call writes to its run: the run's event log and state.
type Writer interface {
	// Emit appends a chunk to the run's event log.
	Emit(ctx context.Context, c *agentv1.StreamChunk) error
	// EmitTo is Emit even when ctx was cancelled.
	EmitTo(ctx context.Context, c *agentv1.StreamChunk) error
	// EmitToWith is EmitTo with steps run before the append, in one batch.
	EmitToWith(ctx context.Context, c *agentv1.StreamChunk, steps ...state.Step) error
	// SaveRun stores the run's state.
	SaveRun(ctx context.Context) error
}

// Call is the pending call of one run, with the run it belongs to, for as
// long as one replica holds the run. What must outlive it is in the run's
// state (RS.Pending) and the store.
type Call struct {
	s *Deps
	w Writer

	Log       *slog.Logger
	RS        *orchestratorv1.RunState
	Cancelled <-chan struct{}
	SessionID string
	RunID     string
	Owner     string
	HostApp   string
	Host      *capabilityv1.HostProvider
	// Seq is the seq of the last chunk of the run's log.
	Seq int64
	// Sess is the session as the last step that wrote it stored it, for the
	// next turn to use instead of reading it again; taken once.
	Sess *agentv1.Session
	// Peeked is the pending call's mailbox as the run read it when it was
	// resumed; taken once.
	Peeked *Peeked
	// SessRead is the session as the run read it when it was resumed, which
	// the decision's update starts from; taken once.
	SessRead *agentv1.Session
	// known is the result Collect found delivered for the call it decides.
	known *state.Delivery
	// SuspendFor is how long the run waits once a stage returns
	// ErrSuspended: until its tool call's deadline, or zero to hand it over
	// at once.
	SuspendFor time.Duration
	// Cancelling says the run is being cancelled: a host result taken now
	// is of a script the cancel could not unrun.
	Cancelling bool
	// Ran is what the host did with a call whose result the cancelled run
	// took ("committed", "rolled back", ...); LeftUnanswered says a call
	// that had left got no result before its deadline.
	Ran            string
	LeftUnanswered bool
}

// New returns the call desk of a run that w writes.
func New(d *Deps, w Writer) *Call { return &Call{s: d, w: w} }

// metadata tells the run's followers md.
func (r *Call) metadata(ctx context.Context, md *agentv1.Metadata) error {
	return r.w.Emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: md}})
}

// route is the run's way to its host, as the run stands now.
func (r *Call) route() *hostlink.Route {
	return &hostlink.Route{Store: r.s.Store, Hosts: r.s.Hosts, Links: r.s.Links, Now: r.s.Now, Log: r.Log,
		SessionID: r.SessionID, RunID: r.RunID, Owner: r.Owner, HostApp: r.HostApp, HostName: r.Host.GetDisplayName(), Eval: r.RS.GetEval(),
		Metadata: r.metadata, StateErr: r.StateErr}
}
