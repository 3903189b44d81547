package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/logging"
	"nexus.local/services/orchestrator/state"
)

// Causes that end a worker's hold on a run; the first two end the run.
const (
	errCancelled = state.Error("the run was cancelled")
	// errToolInputCut means a turn ended inside a tool call's arguments.
	errToolInputCut = state.Error("the model's tool call was cut off before its arguments were complete")
	// errLeaseLost means another replica took the run over; this one stops
	// touching it at once.
	errLeaseLost = state.Error("this replica lost the run's lease")
	// errDraining means this replica is shutting down: the run is handed
	// over, not ended.
	errDraining = state.Error("this replica is shutting down")
	// errSuspended is no failure: the run waits for its tool result (or is
	// handed over) and its worker ends; the run lives on in the store.
	errSuspended = state.Error("the run is suspended")
)

// cleanupTimeout bounds the work done after a worker's context ended: the
// last chunks, clearing the session and releasing the lease. It is long
// enough to wait out a short store outage.
const cleanupTimeout = 2 * time.Minute

// maxRestarts bounds how often a run's turn is redone because the replica
// working on it stopped, so a turn that kills replicas cannot go round the
// mesh forever.
const maxRestarts = 5

// maxRunIDs is how many run ids a session remembers for clients that reopen it.
const maxRunIDs = 100

// runError is a failure that ends a run with an error chunk.
type runError struct {
	code agentv1.ErrorCode
	// vendorCode is the model vendor's failure as the model-router named
	// it ("overloaded", "rate_limited", ...), when code is
	// ERROR_CODE_MODEL_ERROR because of one.
	vendorCode string
	message    string
	retryable  bool
}

func (e *runError) Error() string { return errorCodeName(e.public()) + ": " + e.message }

// runner carries one run on for as long as one replica holds it: from a
// start, a claim after a result, a timeout, a cancel or a replica that
// stopped, until the run suspends, ends, or the replica lets it go. What
// must outlive the runner is in the store: the session, the transcript and
// the run's state.
type runner struct {
	s         *Service
	log       *slog.Logger
	lease     state.Lease
	rs        *orchestratorv1.RunState
	cancelled <-chan struct{}

	sessionID string
	runID     string
	owner     string
	hostApp   string
	host      *capabilityv1.HostProvider
	model     *modelv1.ModelInfo
	system    string
	msgs      []*modelv1.Message
	seq       int64
	// suspendFor is how long the run waits once loop returns errSuspended:
	// until its tool call's deadline, or zero to hand it over at once.
	suspendFor time.Duration
}

// Run starts a run on the caller's session and follows it. Closing the
// stream stops following only: the run goes on, and StreamRunEvents rejoins it.
func (s *Service) Run(req *agentv1.RunRequest, stream agentv1.OrchestratorService_RunServer) error {
	runID, err := s.startRun(stream.Context(), req.GetSessionId(), req.GetPrompt(), req.GetModel())
	if err != nil {
		return err
	}
	return s.follow(stream.Context(), runID, 0, stream.Send)
}

// StartRun starts a run and answers with its id at once.
func (s *Service) StartRun(ctx context.Context, req *agentv1.StartRunRequest) (*agentv1.StartRunResponse, error) {
	runID, err := s.startRun(ctx, req.GetSessionId(), req.GetPrompt(), req.GetModel())
	if err != nil {
		return nil, err
	}
	return &agentv1.StartRunResponse{RunId: runID, SessionId: req.GetSessionId()}, nil
}

// startRun records a new run (session, run state, transcript, first events
// and lease) and sets a worker on it. Everything the run needs from here on
// is in the store, so the worker does not depend on the caller's request.
func (s *Service) startRun(ctx context.Context, sessionID, prompt, modelID string) (string, error) {
	sess, err := s.ownedSession(ctx, sessionID)
	if err != nil {
		return "", err
	}
	prompt = strings.TrimSpace(prompt)
	if prompt == "" {
		return "", status.Error(codes.InvalidArgument, "prompt is required: say what should be done")
	}
	if s.isDraining() {
		return "", status.Error(codes.Unavailable, "this orchestrator replica is shutting down; start the run again")
	}
	if modelID == "" {
		modelID = sess.GetModel()
	}
	model, err := s.resolveModel(ctx, modelID)
	if err != nil {
		return "", err
	}

	runID := newID("r_")
	sess, err = s.store.Update(ctx, sess.GetSessionId(), func(x *agentv1.Session) error {
		if x.GetActiveRunId() != "" {
			return state.ErrRunActive
		}
		x.ActiveRunId = runID
		x.LastRunId = runID
		x.RunIds = append(x.RunIds, runID)
		if n := len(x.RunIds); n > maxRunIDs {
			x.RunIds = x.RunIds[n-maxRunIDs:]
		}
		x.Model = model.GetId()
		x.LastPrompt = firstRunes(prompt, 200)
		x.UpdateTime = timestamppb.New(s.now())
		// Budgets and phase hints are per run; the held script stays, so the
		// next request can edit what the last one wrote.
		x.FixRetryCount = 0
		x.IterationCount = 0
		x.LastCompletedTool = ""
		x.LastTaskCommitted = false
		x.PendingToolCall = nil
		return nil
	})
	if errors.Is(err, state.ErrRunActive) {
		return "", status.Errorf(codes.Aborted, "session %s already has an active run; cancel it or wait for it to end", sessionID)
	}
	// The store may be away right now: the session is freed for the next
	// run as soon as it is back, not left busy with a run that never
	// started. The caller hears at once.
	free := func() {
		go func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			s.clearActiveRun(cctx, sessionID, runID)
		}()
	}
	if err != nil {
		if errors.Is(err, state.ErrUnavailable) {
			// The write may have landed with only its answer lost.
			free()
		}
		return "", storeStatus(err, "start run")
	}
	fail := func(what string, err error) (string, error) {
		free()
		return "", storeStatus(err, "start run: "+what)
	}

	carrier := propagation.MapCarrier{}
	s.env.Tel.Propagator.Inject(ctx, carrier)
	rs := &orchestratorv1.RunState{
		RunId: runID, SessionId: sessionID, User: identity.FromIncoming(ctx), Model: model.GetId(), HostApp: sess.GetHostApp(),
		Total: &modelv1.Usage{}, StartTime: timestamppb.New(s.now()), Traceparent: carrier.Get("traceparent"),
	}
	if err := s.store.SaveRun(ctx, rs); err != nil {
		return fail("save run", err)
	}
	if err := s.recordRunStart(ctx, rs, prompt); err != nil {
		return fail("record the run", err)
	}
	msgs, err := s.store.Transcript(ctx, sessionID)
	if err != nil {
		return fail("read transcript", err)
	}
	if err := s.store.SaveTranscript(ctx, sessionID, appendPrompt(msgs, prompt)); err != nil {
		return fail("save transcript", err)
	}
	first := []*agentv1.Metadata{{Kind: &agentv1.Metadata_RunStarted{RunStarted: &agentv1.RunStarted{
		Model: model.GetId(), HostApp: sess.GetHostApp(), Prompt: prompt, ReviewPolicy: effectivePolicy(sess.GetReviewPolicy()),
	}}}}
	if model.GetVendor() == "replay" {
		first = append(first, &agentv1.Metadata{Kind: &agentv1.Metadata_Notice{Notice: &agentv1.Notice{
			Text: "This is the demo model: it replays recorded turns and only builds its one room. Set a vendor API key and pick a real model to automate your document."}}})
	}
	for i, md := range first {
		c := &agentv1.StreamChunk{Seq: int64(i + 1), RunId: runID, SessionId: sessionID, Chunk: &agentv1.StreamChunk_Metadata{Metadata: md}}
		if err := s.store.Append(ctx, runID, c); err != nil {
			return fail("log the run's start", err)
		}
	}
	lease := state.Lease{RunID: runID, SessionID: sessionID, Owner: s.replica}
	if err := s.store.Acquire(ctx, lease, s.cfg.leaseTTL()); err != nil {
		return fail("acquire run lease", err)
	}
	s.env.Log.Info("run started", "session", sessionID, "run", runID, "model", model.GetId(), "host", sess.GetHostApp())
	s.metrics.runStarted(ctx, model.GetId())
	s.launch(lease)
	return runID, nil
}

// clearActiveRun leaves the session ready for the next run.
// A store outage delays it, within ctx.
func (s *Service) clearActiveRun(ctx context.Context, sessionID, runID string) {
	_, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) {
		return s.store.Update(ctx, sessionID, func(x *agentv1.Session) error {
			if x.GetActiveRunId() == runID {
				x.ActiveRunId = ""
				x.UpdateTime = timestamppb.New(s.now())
			}
			if x.GetPendingToolCall().GetRunId() == runID {
				x.PendingToolCall = nil
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		s.env.Log.Error("clear active run", "session", sessionID, "run", runID, "err", err)
	}
}

// work carries the run of lease on, on this replica, which holds the lease.
func (s *Service) work(l state.Lease) {
	log := s.env.Log.With("session", l.SessionID, "run", l.RunID)
	ctx, cancel := context.WithCancelCause(logging.WithLogger(s.workCtx, log))
	defer cancel(nil)

	rs, err := retryStore(ctx, func(ctx context.Context) (*orchestratorv1.RunState, error) { return s.store.GetRun(ctx, l.RunID) })
	switch {
	case err != nil && ctx.Err() != nil:
		return
	case errors.Is(err, state.ErrNotFound):
		log.Error("a scheduled run has no state; forgetting it", "err", err)
		_ = s.store.Release(context.WithoutCancel(ctx), l)
		return
	case err != nil:
		// A state that cannot be read would fail on every replica that
		// claims it: end the run where its followers see it, rather than
		// leave the session busy for good.
		log.Error("read run state", "err", err)
		r := &runner{s: s, log: log, lease: l, sessionID: l.SessionID, runID: l.RunID, rs: &orchestratorv1.RunState{
			RunId: l.RunID, SessionId: l.SessionID, Finished: true,
			Ending: []*agentv1.StreamChunk{{Chunk: &agentv1.StreamChunk_Error{Error: &agentv1.Error{
				Code: agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, Message: fmt.Sprintf("the run's saved state could not be read (%v), so it was ended; the session is ready for the next run", err), Retryable: true,
			}}}},
		}}
		r.close(ctx)
		return
	}
	parent := s.env.Tel.Propagator.Extract(ctx, propagation.MapCarrier{"traceparent": rs.GetTraceparent()})
	ctx, span := s.env.Tel.Tracer(ServiceName).Start(trace.ContextWithRemoteSpanContext(ctx, trace.SpanContextFromContext(parent)), "run",
		trace.WithAttributes(attribute.String("run", l.RunID), attribute.String("session", l.SessionID)))
	defer span.End()

	r := &runner{
		s: s, log: log, lease: l, rs: rs, sessionID: rs.GetSessionId(), runID: rs.GetRunId(), owner: rs.GetUser(), hostApp: rs.GetHostApp(),
	}
	if rs.GetTotal() == nil {
		rs.Total = &modelv1.Usage{}
	}
	if rs.GetFinished() {
		r.close(ctx)
		return
	}

	// The lease is renewed, and a cancel watched, only while this worker
	// holds the run; both stop before the run is suspended.
	hold, release := context.WithCancel(ctx)
	var held sync.WaitGroup
	held.Go(func() { s.renewLease(hold, l, cancel, log) })
	if done, stop, err := s.store.Cancelled(ctx, l.RunID); err != nil {
		log.Warn("watch cancel signal", "err", err)
	} else {
		defer stop()
		r.cancelled = done
		held.Go(func() {
			select {
			case <-done:
				cancel(errCancelled)
			case <-hold.Done():
			}
		})
	}
	complete, err := r.resume(ctx)
	release()
	held.Wait()

	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errLeaseLost):
		log.Warn("stopped working on a run another replica took over")
	case errors.Is(err, errSuspended):
		r.suspend(ctx)
	case errors.Is(cause, errDraining) || (err != nil && errors.Is(err, state.ErrUnavailable) && s.isDraining()):
		r.suspendFor = 0
		r.suspend(ctx)
	default:
		r.end(ctx, complete, err)
	}
}

// renewLease keeps the run's lease while ctx lasts. A renewal that fails
// because the store is away is tried again soon, so an owner renews as soon
// as the store is back, well before any other replica may claim the run.
func (s *Service) renewLease(ctx context.Context, l state.Lease, cancel context.CancelCauseFunc, log *slog.Logger) {
	period := max(s.cfg.RunLease/3, time.Millisecond)
	t := time.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.store.Renew(ctx, l, s.cfg.leaseTTL())
		switch {
		case errors.Is(err, state.ErrLeaseLost):
			log.Error("run lease lost", "err", err)
			cancel(errLeaseLost)
			return
		case err != nil:
			if ctx.Err() == nil {
				log.Warn("renew run lease", "err", err)
			}
			t.Reset(min(period, renewRetry))
		default:
			t.Reset(period)
		}
	}
}

// renewRetry paces renewals while the store is away.
const renewRetry = 200 * time.Millisecond

// resume loads what the run needs and carries it on from where it was.
func (r *runner) resume(ctx context.Context) (*agentv1.Complete, error) {
	g, err := r.s.guidance(ctx, r.hostApp)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, &runError{code: agentv1.ErrorCode_ERROR_CODE_CAPABILITY_UNAVAILABLE, message: fmt.Sprintf("get prompt guidance for host %q from the capability service: %v", r.hostApp, status.Convert(err).Message()), retryable: true}
	}
	r.host = g.GetHost()
	r.system = systemPrompt(g.GetHost().GetDisplayName(), g.GetGuidance())
	if r.model, err = r.s.resolveModel(ctx, r.rs.GetModel()); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, &runError{code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, message: status.Convert(err).Message(), retryable: false}
	}
	if r.msgs, err = retryStore(ctx, func(ctx context.Context) ([]*modelv1.Message, error) { return r.s.store.Transcript(ctx, r.sessionID) }); err != nil {
		return nil, r.stateErr(ctx, "read transcript", err)
	}
	if r.seq, err = r.lastSeq(ctx); err != nil {
		return nil, err
	}
	if r.rs.GetInTurn() && lastRole(r.msgs) == modelv1.Role_ROLE_USER {
		r.rs.Restarts++
		r.rs.InTurn = false
		if r.rs.GetRestarts() > maxRestarts {
			return nil, &runError{code: agentv1.ErrorCode_ERROR_CODE_REPLICA_LOST, message: fmt.Sprintf("the replicas working on this run stopped %d times in the middle of a model turn, so the run was ended; the session is ready for the next run", r.rs.GetRestarts()), retryable: true}
		}
		if err := r.saveRun(ctx); err != nil {
			return nil, err
		}
		r.log.Warn("redoing a model turn whose replica stopped", "restarts", r.rs.GetRestarts())
		if err := r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_TurnRestarted{TurnRestarted: &agentv1.TurnRestarted{Model: r.model.GetId(),
			Text: "The model turn was interrupted because the server working on it stopped; it is redone from the last saved step."}}}); err != nil {
			return nil, err
		}
	}
	return r.loop(ctx)
}

func (r *runner) lastSeq(ctx context.Context) (int64, error) {
	seq, err := retryStore(ctx, func(ctx context.Context) (int64, error) {
		seq, _, err := r.s.store.LastSeq(ctx, r.runID)
		return seq, err
	})
	if err != nil {
		return 0, r.stateErr(ctx, "read the run's last event", err)
	}
	return seq, nil
}

func lastRole(msgs []*modelv1.Message) modelv1.Role {
	if len(msgs) == 0 {
		return modelv1.Role_ROLE_UNSPECIFIED
	}
	return msgs[len(msgs)-1].GetRole()
}

// suspend gives the run up: it waits in the store for its result (or, with
// suspendFor zero, for another replica to take it over at once).
func (r *runner) suspend(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err := retry(cctx, func(ctx context.Context) error { return r.s.store.Suspend(ctx, r.lease, r.suspendFor) })
	switch {
	case errors.Is(err, state.ErrLeaseLost):
		// Most likely an earlier try suspended the run and only its answer
		// was lost: the run is suspended, so still look for what arrived
		// meanwhile. Had another replica taken it, a wake-up leaves it be.
		r.log.Warn("suspend run", "err", err)
	case err != nil:
		// The lease runs out and another replica takes the run over.
		r.log.Error("suspend run", "err", err)
		return
	}
	if r.suspendFor == 0 {
		r.log.Info("run handed over")
		return
	}
	r.log.Info("run suspended", "tool_call", r.rs.GetPending().GetToolCall().GetToolCallId(), "wait", r.suspendFor)
	// A result or a cancel that arrived while this replica still held the
	// run found it owned and left it for the owner to see, here.
	callID := r.rs.GetPending().GetToolCall().GetToolCallId()
	_, delivered, err := r.s.store.Peek(cctx, r.sessionID, callID)
	if err != nil {
		r.log.Warn("look for a tool result after suspending", "err", err)
		delivered = true
	}
	select {
	case <-r.cancelled:
		delivered = true
	default:
	}
	if delivered {
		r.s.wake(cctx, r.lease)
	}
}

// end finishes the run: the session is ready for the next run before the
// last chunks announce the end, then the event log and the lease close.
func (r *runner) end(ctx context.Context, complete *agentv1.Complete, loopErr error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	last := &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Complete{Complete: complete}}
	var failure *agentv1.Error
	if complete == nil {
		failure = r.asRunError(loopErr, context.Cause(ctx)).public()
		r.log.Info("run ended without complete", "code", errorCodeName(failure), "err", failure.GetMessage())
		last = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Error{Error: failure}}
		if err := r.settle(cctx); err != nil {
			r.log.Error("settle the run's last tool calls", "err", err)
		}
	} else {
		r.log.Info("run completed", "turns", r.rs.GetTurns())
	}
	r.s.metrics.runEnded(cctx, r.rs.GetModel(), failure)
	r.rs.Finished = true
	r.rs.Pending = nil
	r.rs.InTurn = false
	r.rs.Ending = []*agentv1.StreamChunk{{Chunk: &agentv1.StreamChunk_Usage{Usage: r.usage(nil, true)}}, last}
	if err := r.saveRun(cctx); err != nil {
		// The lease runs out; whoever claims the run ends it again.
		r.log.Error("record the end of the run", "err", err)
		return
	}
	r.close(cctx)
}

// close does what is left of a finished run; every step may be done twice
// (by a replica that takes over a run whose closing was cut short).
func (r *runner) close(ctx context.Context) {
	r.s.recordRunEnd(ctx, r.rs, r.log)
	r.s.clearActiveRun(ctx, r.sessionID, r.runID)
	var finished bool
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		r.seq, finished, err = r.s.store.LastSeq(ctx, r.runID)
		return err
	})
	if err == nil && !finished {
		for _, c := range r.rs.GetEnding() {
			if err = r.emitTo(ctx, proto.Clone(c).(*agentv1.StreamChunk)); err != nil {
				break
			}
		}
		if err == nil {
			err = retry(ctx, func(ctx context.Context) error { return r.s.store.Finish(ctx, r.runID) })
		}
	}
	if err != nil {
		r.log.Error("close the run's event log", "err", err)
		return
	}
	if err := retry(ctx, func(ctx context.Context) error { return r.s.store.Release(ctx, r.lease) }); err != nil {
		r.log.Warn("release run lease", "err", err)
	}
}

func (r *runner) asRunError(err, cause error) *runError {
	var re *runError
	switch {
	case errors.Is(cause, errCancelled), errors.Is(err, errCancelled):
		return &runError{code: agentv1.ErrorCode_ERROR_CODE_CANCELLED, message: "The run was cancelled. The session is ready for the next run.", retryable: true}
	case errors.As(err, &re):
		return re
	case errors.Is(err, errToolInputCut):
		return &runError{code: agentv1.ErrorCode_ERROR_CODE_MAX_TOKENS, message: "The model ran out of its output budget in the middle of a tool call, even with the heavy budget (NEXUS_HEAVY_MAX_TOKENS). Ask for smaller steps, or raise the budget.", retryable: true}
	}
	return &runError{code: agentv1.ErrorCode_ERROR_CODE_INTERNAL, message: err.Error(), retryable: true}
}

// emit stamps c with the next seq and appends it to the run's event log,
// from which every follower reads it.
func (r *runner) emit(ctx context.Context, c *agentv1.StreamChunk) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return r.emitTo(ctx, c)
}

// emitTo appends c even when ctx was cancelled; a store outage delays it.
func (r *runner) emitTo(ctx context.Context, c *agentv1.StreamChunk) error {
	c.Seq = r.seq + 1
	c.RunId = r.runID
	c.SessionId = r.sessionID
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := retry(actx, func(ctx context.Context) error { return r.s.store.Append(ctx, r.runID, c) }); err != nil {
		return &runError{code: agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, message: fmt.Sprintf("append event %d of run %s: %v", c.Seq, r.runID, err), retryable: true}
	}
	r.seq = c.Seq
	return nil
}

func (r *runner) metadata(ctx context.Context, md *agentv1.Metadata) error {
	return r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: md}})
}

// usage returns the run's accounting so far.
func (r *runner) usage(turn *modelv1.Usage, final bool) *agentv1.Usage {
	return &agentv1.Usage{Model: r.rs.GetModel(), Total: tokenUsage(r.rs.GetTotal()), Turn: tokenUsage(turn), Turns: r.rs.GetTurns(), Final: final}
}

func addUsage(total, u *modelv1.Usage) {
	total.InputTokens += u.GetInputTokens()
	total.OutputTokens += u.GetOutputTokens()
	total.CacheReadTokens += u.GetCacheReadTokens()
	total.CacheWriteTokens += u.GetCacheWriteTokens()
	total.ReasoningTokens += u.GetReasoningTokens()
	total.CostUsd += u.GetCostUsd()
}

// loop is the agentic loop: stream a turn; no tool call means complete;
// otherwise run the tools, append the assistant turn and the results, and go
// again. The transcript is the state machine, so the loop starts wherever
// the saved transcript says the run is.
func (r *runner) loop(ctx context.Context) (*agentv1.Complete, error) {
	for {
		if n := len(r.msgs); n > 0 && r.msgs[n-1].GetRole() == modelv1.Role_ROLE_ASSISTANT {
			last := r.msgs[n-1]
			uses := toolUses(last)
			if len(uses) == 0 {
				return &agentv1.Complete{Text: messageText(last), StopReason: stopReasonEnum(r.rs.GetStopReason())}, nil
			}
			if err := r.runTools(ctx, uses); err != nil {
				return nil, err
			}
			continue
		}
		if r.s.isDraining() {
			// A new turn starts on a replica that stays.
			r.suspendFor = 0
			return nil, errSuspended
		}
		if int(r.rs.GetTurns()) >= r.s.cfg.MaxTurns {
			return nil, &runError{code: agentv1.ErrorCode_ERROR_CODE_TURN_LIMIT, message: fmt.Sprintf("the run reached its limit of %d model turns (NEXUS_MAX_TURNS) without an answer; ask again with a narrower request", r.s.cfg.MaxTurns), retryable: false}
		}
		if err := r.maybeCompact(ctx); err != nil {
			return nil, err
		}
		sess, err := retryStore(ctx, func(ctx context.Context) (*agentv1.Session, error) { return r.s.store.Get(ctx, r.sessionID) })
		if err != nil {
			return nil, r.stateErr(ctx, "read session", err)
		}
		r.rs.InTurn = true
		r.rs.Results = nil
		if err := r.saveRun(ctx); err != nil {
			return nil, err
		}
		ph := resolvePhase(sess, r.rs.GetCapped())
		maxTokens := r.clampBudget(r.s.cfg.budget(ph))
		end, cutInTool, err := r.turn(ctx, ph, maxTokens)
		heavy := r.clampBudget(r.s.cfg.HeavyMaxTokens)
		if cutInTool && maxTokens < heavy && (errors.Is(err, errToolInputCut) || err == nil && end.GetStopReason() == modelv1.StopReason_STOP_REASON_MAX_TOKENS) {
			if err := r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_TurnRetried{TurnRetried: &agentv1.TurnRetried{Model: r.model.GetId(), Phase: phaseEnum(ph), MaxTokens: int32(heavy),
				Text: fmt.Sprintf("The %s turn ran out of its light output budget (%d tokens) in the middle of a tool call; it is redone once with the heavy budget (%d tokens).", ph, maxTokens, heavy)}}}); err != nil {
				return nil, err
			}
			end, _, err = r.turn(ctx, ph, heavy)
		}
		if err != nil {
			return nil, err
		}
		msg := end.GetMessage()
		if msg == nil {
			msg = &modelv1.Message{}
		}
		msg.Role = modelv1.Role_ROLE_ASSISTANT
		r.msgs = append(r.msgs, msg)
		if err := r.save(ctx); err != nil {
			return nil, err
		}
		r.rs.InTurn = false
		r.rs.StopReason = stopReasonName(end.GetStopReason())
		if err := r.saveRun(ctx); err != nil {
			return nil, err
		}
	}
}

// runTools runs the calls of the last assistant message that have no result
// yet, one at a time; a call sent to the courier suspends the run. Once every
// call has its result the results join the transcript.
func (r *runner) runTools(ctx context.Context, uses []*modelv1.ToolUseBlock) error {
	var stopErr error
	remaining := uses[min(len(r.rs.GetResults()), len(uses)):]
	for i, u := range remaining {
		if stopErr != nil {
			// Every call gets a result, so the transcript stays valid for the
			// next run even when this one stops here.
			r.rs.Results = append(r.rs.Results, &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true,
				Text: "Not run: the run stopped before this call."})
			continue
		}
		var res *modelv1.ToolResultBlock
		var err error
		if p := r.rs.GetPending(); p != nil && pendingUse(p) == u.GetId() {
			res, err = r.collect(ctx, u, p)
		} else {
			res, err = r.execute(ctx, u)
		}
		if errors.Is(err, errSuspended) {
			return err
		}
		if res == nil && err != nil && (errors.Is(context.Cause(ctx), errLeaseLost) || errors.Is(context.Cause(ctx), errDraining)) {
			return err
		}
		if res == nil {
			res = &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: "Not run: the run stopped before this call."}
		}
		r.rs.Results = append(r.rs.Results, res)
		r.rs.Pending = nil
		stopErr = err
		// After the last call the transcript is saved next, which records
		// the same progress; a replica that stops in between decides the
		// last call again and gets the same answer.
		if i < len(remaining)-1 || stopErr != nil {
			if err := r.saveRun(ctx); err != nil {
				return err
			}
		}
	}
	results := &modelv1.Message{Role: modelv1.Role_ROLE_USER}
	for _, res := range r.rs.GetResults() {
		results.Content = append(results.Content, toolResult(res))
	}
	r.msgs = append(r.msgs, results)
	if err := r.save(ctx); err != nil {
		return err
	}
	// The next turn saves the run state without these results; until then
	// the transcript, which ends with them, says where the run is.
	r.rs.Results = nil
	return stopErr
}

// clampBudget keeps a budget within what the model can produce.
func (r *runner) clampBudget(n int) int {
	if m := int(r.model.GetMaxOutputTokens()); m > 0 && n > m {
		return m
	}
	return n
}

// stateErr reports a store failure, or the cause when the run was stopped.
func (r *runner) stateErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return &runError{code: agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, message: fmt.Sprintf("%s: %v", what, err), retryable: true}
}

// save stores the transcript; a store outage delays it.
func (r *runner) save(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := retry(sctx, func(ctx context.Context) error { return r.s.store.SaveTranscript(ctx, r.sessionID, r.msgs) }); err != nil {
		return &runError{code: agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, message: fmt.Sprintf("save transcript: %v", err), retryable: true}
	}
	return nil
}

// saveRun stores the run's state; a store outage delays it.
func (r *runner) saveRun(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := retry(sctx, func(ctx context.Context) error { return r.s.store.SaveRun(ctx, r.rs) }); err != nil {
		return &runError{code: agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, message: fmt.Sprintf("save run state: %v", err), retryable: true}
	}
	return nil
}

// appendPrompt adds the person's prompt to the transcript. Calls left without
// a result by an earlier run that died get one, and a trailing user message
// (results of a run that was cancelled) takes the prompt as well, so roles
// keep alternating.
func appendPrompt(msgs []*modelv1.Message, prompt string) []*modelv1.Message {
	text := &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: prompt}}}
	if n := len(msgs); n > 0 && msgs[n-1].GetRole() == modelv1.Role_ROLE_ASSISTANT {
		if uses := toolUses(msgs[n-1]); len(uses) > 0 {
			m := &modelv1.Message{Role: modelv1.Role_ROLE_USER}
			for _, u := range uses {
				m.Content = append(m.Content, toolResult(&modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true,
					Text: "No result: the run stopped before this call was answered."}))
			}
			msgs = append(msgs, m)
		}
	}
	if n := len(msgs); n > 0 && msgs[n-1].GetRole() == modelv1.Role_ROLE_USER {
		msgs[n-1].Content = append(msgs[n-1].Content, text)
		return msgs
	}
	return append(msgs, &modelv1.Message{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{text}})
}

// turn streams one model turn straight through to the client. cutInTool says
// whether the model was writing a tool call when the turn ended.
func (r *runner) turn(ctx context.Context, ph phase, maxTokens int) (*modelv1.TurnEnd, bool, error) {
	if err := r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_TurnStarted{TurnStarted: &agentv1.TurnStarted{Model: r.model.GetId(), Phase: phaseEnum(ph), MaxTokens: int32(maxTokens)}}}); err != nil {
		return nil, false, err
	}
	r.rs.Turns++
	tm := r.s.metrics.turnStarted(ctx, r.model.GetId())
	stream, err := r.s.router.StreamTurn(ctx, &modelv1.StreamTurnRequest{
		Model: r.model.GetId(), System: r.system, Messages: trimViews(r.msgs, viewsToRouter), Tools: toolSpecs(),
		MaxTokens: int32(maxTokens), SessionId: r.sessionID, AllowCompaction: hasFeature(r.model, "compaction"),
	})
	if err != nil {
		return nil, false, r.routerErr(ctx, err)
	}
	inTool := false
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return nil, false, &runError{code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, message: "the model-router ended the turn without its end event", retryable: true}
		}
		if err != nil {
			return nil, false, r.routerErr(ctx, err)
		}
		tm.event(ctx, resp)
		var c *agentv1.StreamChunk
		switch ev := resp.GetEvent().(type) {
		case *modelv1.StreamTurnResponse_Thinking:
			inTool = false
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Thinking{Thinking: &agentv1.Thinking{Text: ev.Thinking.GetText()}}}
		case *modelv1.StreamTurnResponse_Text:
			inTool = false
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: ev.Text.GetText()}}}
		case *modelv1.StreamTurnResponse_ToolInputDelta:
			inTool = true
			d := ev.ToolInputDelta
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_ToolInputDelta{ToolInputDelta: &agentv1.ToolInputDelta{
				ToolCallId: d.GetToolCallId(), ToolName: toolNameEnum(d.GetToolName()), PartialJson: d.GetPartialJson(),
			}}}
		case *modelv1.StreamTurnResponse_Compacted:
			r.s.metrics.compaction(ctx, "vendor")
			c = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: &agentv1.Metadata{Kind: &agentv1.Metadata_ContextSummarized{
				ContextSummarized: &agentv1.ContextSummarized{Model: r.model.GetId(),
					Text: strings.TrimSpace("Context summarized by the model vendor. " + ev.Compacted.GetNote())},
			}}}}
		case *modelv1.StreamTurnResponse_Error:
			e := ev.Error
			if inTool && e.GetCode() == "bad_tool_input" {
				// The output budget ran out in the middle of the tool call's JSON.
				return nil, true, fmt.Errorf("%w: %s", errToolInputCut, e.GetMessage())
			}
			return nil, false, vendorFailure(e, "the model turn failed: ")
		case *modelv1.StreamTurnResponse_End:
			end := ev.End
			addUsage(r.rs.Total, end.GetUsage())
			tm.ended(ctx, end.GetUsage())
			if err := r.emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Usage{Usage: r.usage(end.GetUsage(), false)}}); err != nil {
				return nil, false, err
			}
			if inTool || len(toolUses(end.GetMessage())) > 0 {
				inTool = true
			}
			return end, inTool, nil
		}
		if c != nil {
			if err := r.emit(ctx, c); err != nil {
				return nil, false, err
			}
		}
	}
}

func (r *runner) routerErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	st := status.Convert(err)
	retryable := st.Code() == codes.Unavailable || st.Code() == codes.ResourceExhausted || st.Code() == codes.DeadlineExceeded
	return &runError{code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, message: fmt.Sprintf("model turn through the model-router failed (%s): %s", st.Code(), st.Message()), retryable: retryable}
}

func hasFeature(m *modelv1.ModelInfo, f string) bool {
	for _, x := range m.GetFeatures() {
		if x == f {
			return true
		}
	}
	return false
}

func toolUses(m *modelv1.Message) []*modelv1.ToolUseBlock {
	var out []*modelv1.ToolUseBlock
	for _, b := range m.GetContent() {
		if u := b.GetToolUse(); u != nil {
			out = append(out, u)
		}
	}
	return out
}

func messageText(m *modelv1.Message) string {
	var parts []string
	for _, b := range m.GetContent() {
		if t := b.GetText(); t != nil {
			parts = append(parts, t.GetText())
		}
	}
	return strings.Join(parts, "")
}

func toolResult(b *modelv1.ToolResultBlock) *modelv1.ContentBlock {
	return &modelv1.ContentBlock{Block: &modelv1.ContentBlock_ToolResult{ToolResult: b}}
}

func stopReasonName(r modelv1.StopReason) string {
	switch r {
	case modelv1.StopReason_STOP_REASON_END_TURN:
		return "end_turn"
	case modelv1.StopReason_STOP_REASON_MAX_TOKENS:
		return "max_tokens"
	case modelv1.StopReason_STOP_REASON_REFUSAL:
		return "refusal"
	case modelv1.StopReason_STOP_REASON_TOOL_USE:
		return "tool_use"
	}
	return "end_turn"
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func cloneMessages(msgs []*modelv1.Message) []*modelv1.Message {
	out := make([]*modelv1.Message, len(msgs))
	for i, m := range msgs {
		out[i] = proto.Clone(m).(*modelv1.Message)
	}
	return out
}
