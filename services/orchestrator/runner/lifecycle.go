package runner

// This file takes a claimed run from resume to suspend or end, and closes what it held.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/state"
)

// resume loads what the run needs and carries it on from where it was.
func (r *runner) resume(ctx context.Context) (*agentv1.Complete, error) {
	g, err := r.s.Guidance(ctx, r.HostApp)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_CAPABILITY_UNAVAILABLE, Message: fmt.Sprintf("get prompt guidance for host %q from the capability service: %v", r.HostApp, status.Convert(err).Message()), Retryable: true}
	}
	r.Host = g.GetHost()
	r.system = systemPrompt(g.GetHost().GetDisplayName(), g.GetGuidance())
	if r.model, err = r.s.ResolveModel(ctx, r.RS.GetModel()); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR, Message: status.Convert(err).Message(), Retryable: false}
	}
	if err := r.load(ctx); err != nil {
		return nil, err
	}
	if r.RS.GetInTurn() && lastRole(r.msgs) == modelv1.Role_ROLE_USER {
		r.RS.Restarts++
		r.RS.InTurn = false
		if r.RS.GetRestarts() > maxRestarts {
			return nil, &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_REPLICA_LOST, Message: fmt.Sprintf("the replicas working on this run stopped %d times in the middle of a model turn, so the run was ended; the session is ready for the next run", r.RS.GetRestarts()), Retryable: true}
		}
		if err := r.SaveRun(ctx); err != nil {
			return nil, err
		}
		r.Log.Warn("redoing a model turn whose replica stopped", "restarts", r.RS.GetRestarts())
		if err := r.metadata(ctx, &agentv1.Metadata{Kind: &agentv1.Metadata_TurnRestarted{TurnRestarted: &agentv1.TurnRestarted{Model: r.model.GetId(),
			Text: "The model turn was interrupted because the server working on it stopped; it is redone from the last saved step."}}}); err != nil {
			return nil, err
		}
	}
	return r.loop(ctx)
}

// load reads what the run goes on from, side by side: the transcript, the
// last event's seq and, for a pending call, its mailbox, so a resumed run
// waits for one round trip to the store rather than three.
func (r *runner) load(ctx context.Context) error {
	if p := r.pre; p != nil {
		// Read with the claim.
		r.msgs, r.Seq, r.Peeked, r.SessRead = p.msgs, p.seq, p.peeked, p.sess
		if r.RS.GetPending() == nil {
			// No call to decide first: the next turn goes on from the
			// session as read, as it does from the session a decision
			// stored.
			r.Sess = p.sess
		}
		return nil
	}
	var wg sync.WaitGroup
	var terr, serr error
	wg.Go(func() {
		r.msgs, terr = state.RetryStore(ctx, func(ctx context.Context) ([]*modelv1.Message, error) { return r.s.Store.Transcript(ctx, r.SessionID) })
	})
	wg.Go(func() { r.Seq, serr = r.lastSeq(ctx) })
	if callID := r.RS.GetPending().GetToolCall().GetToolCallId(); callID != "" {
		wg.Go(func() {
			if d, ok, err := r.s.Store.Peek(ctx, r.SessionID, callID); err == nil {
				r.Peeked = call.NewPeeked(callID, d, ok)
			}
		})
	}
	wg.Wait()
	if terr != nil {
		return r.StateErr(ctx, "read transcript", terr)
	}
	return serr
}

func (r *runner) lastSeq(ctx context.Context) (int64, error) {
	seq, err := state.RetryStore(ctx, func(ctx context.Context) (int64, error) {
		seq, _, err := r.s.Store.LastSeq(ctx, r.RunID)
		return seq, err
	})
	if err != nil {
		return 0, r.StateErr(ctx, "read the run's last event", err)
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
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
	defer cancel()
	r.flushOutcomes(cctx)
	err := state.Retry(cctx, func(ctx context.Context) error { return r.s.Store.Suspend(ctx, r.lease, r.SuspendFor) })
	switch {
	case errors.Is(err, state.ErrLeaseLost):
		// Most likely an earlier try suspended the run and only its answer
		// was lost: the run is suspended, so still look for what arrived
		// meanwhile. Had another replica taken it, a wake-up leaves it be.
		r.Log.Warn("suspend run", "err", err)
	case err != nil:
		// The lease runs out and another replica takes the run over.
		r.Log.Error("suspend run", "err", err)
		return
	}
	if r.SuspendFor == 0 {
		r.Log.Info("run handed over")
		return
	}
	r.Log.Info("run suspended", "tool_call", r.RS.GetPending().GetToolCall().GetToolCallId(), "wait", r.SuspendFor)
	// A result or a cancel that arrived while this replica still held the
	// run found it owned and left it for the owner to see, here.
	callID := r.RS.GetPending().GetToolCall().GetToolCallId()
	_, delivered, err := r.s.Store.Peek(cctx, r.SessionID, callID)
	if err != nil {
		r.Log.Warn("look for a tool result after suspending", "err", err)
		delivered = true
	}
	select {
	case <-r.Cancelled:
		// A cancel wakes the run to end it, unless the run waits for what
		// its script, which had left for the host, did.
		if !r.RS.GetPending().GetCancelAwaitsOutcome() {
			delivered = true
		}
	default:
	}
	if delivered {
		r.s.Wake(cctx, r.lease, callID)
	}
}

// end finishes the run: the session is ready for the next run before the
// last chunks announce the end, then the event log and the lease close.
func (r *runner) end(ctx context.Context, complete *agentv1.Complete, loopErr error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
	defer cancel()
	last := &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Complete{Complete: complete}}
	var failure *agentv1.Error
	if complete == nil {
		// The last calls are settled first: a cancelled run says what a
		// script that had left did.
		r.Cancelling = r.Cancelling || errors.Is(context.Cause(ctx), call.ErrCancelled) || errors.Is(loopErr, call.ErrCancelled)
		if err := r.settle(cctx); err != nil {
			r.Log.Error("settle the run's last tool calls", "err", err)
		}
		failure = r.asRunError(loopErr, context.Cause(ctx)).Public()
		r.Log.Info("run ended without complete", "code", metrics.ErrorCodeName(failure), "err", failure.GetMessage())
		last = &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Error{Error: failure}}
	} else {
		r.Log.Info("run completed", "turns", r.RS.GetTurns())
	}
	r.s.Metrics.RunEnded(cctx, r.RS.GetModel(), failure)
	r.RS.Finished = true
	r.RS.Pending = nil
	r.RS.InTurn = false
	r.RS.Ending = []*agentv1.StreamChunk{{Chunk: &agentv1.StreamChunk_Usage{Usage: r.usage(nil, true)}}, last}
	if err := r.SaveRun(cctx); err != nil {
		// The lease runs out; whoever claims the run ends it again.
		r.Log.Error("record the end of the run", "err", err)
		return
	}
	r.close(cctx)
}

// close does what is left of a finished run; every step may be done twice
// (by a replica that takes over a run whose closing was cut short).
func (r *runner) close(ctx context.Context) {
	r.flushOutcomes(ctx)
	r.s.RecordRunEnd(ctx, r.RS, r.Log)
	r.s.ClearActiveRun(ctx, r.SessionID, r.RunID)
	var finished bool
	err := state.Retry(ctx, func(ctx context.Context) error {
		var err error
		r.Seq, finished, err = r.s.Store.LastSeq(ctx, r.RunID)
		return err
	})
	if err == nil && !finished {
		for _, c := range r.RS.GetEnding() {
			if err = r.EmitTo(ctx, proto.Clone(c).(*agentv1.StreamChunk)); err != nil {
				break
			}
		}
		if err == nil {
			err = state.Retry(ctx, func(ctx context.Context) error { return r.s.Store.Finish(ctx, r.RunID) })
		}
		if err == nil && r.local != nil {
			r.local.finish()
		}
	}
	if err != nil {
		r.Log.Error("close the run's event log", "err", err)
		return
	}
	if err := state.Retry(ctx, func(ctx context.Context) error { return r.s.Store.Release(ctx, r.lease) }); err != nil {
		r.Log.Warn("release run lease", "err", err)
	}
}

func (r *runner) asRunError(err, cause error) *call.RunError {
	var re *call.RunError
	switch {
	case errors.Is(cause, call.ErrCancelled), errors.Is(err, call.ErrCancelled):
		return &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_CANCELLED, Message: r.CancelledRan(), Retryable: true}
	case errors.As(err, &re):
		return re
	case errors.Is(err, errToolInputCut):
		return &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_MAX_TOKENS, Message: "The model ran out of its output budget in the middle of a tool call, even with the heavy budget (NEXUS_HEAVY_MAX_TOKENS). Ask for smaller steps, or raise the budget.", Retryable: true}
	}
	return &call.RunError{Code: agentv1.ErrorCode_ERROR_CODE_INTERNAL, Message: err.Error(), Retryable: true}
}

// awaitOutcome is call.AwaitOutcome for a run whose cancel cut its work
// short before it reached its pending call.
func (r *runner) awaitOutcome(ctx context.Context) bool {
	p := r.RS.GetPending()
	if p == nil {
		return false
	}
	if r.Seq == 0 {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
		defer cancel()
		seq, err := r.lastSeq(cctx)
		if err != nil {
			return false
		}
		r.Seq = seq
	}
	return r.AwaitOutcome(ctx, p)
}

// flushOutcomes writes the run's outcome records before it lets go of the
// run, so the audit log and the history hold what it did when its followers
// hear it suspended or ended. Records it cannot write stay in the outbox
// for any replica's sweep.
func (r *runner) flushOutcomes(ctx context.Context) {
	if err := r.s.Outbox.Flush(ctx, r.SessionID); err != nil {
		r.Log.Warn("write tool call outcomes", "err", err)
	}
}

// settle leaves a run that ends early consistent: its pending call decided
// (a late result is then refused, not accepted and lost) and every call of
// the last assistant message answered, so the transcript stays valid.
func (r *runner) settle(ctx context.Context) error {
	if r.Seq == 0 {
		seq, err := r.lastSeq(ctx)
		if err != nil {
			return err
		}
		r.Seq = seq
	}
	if r.msgs == nil {
		msgs, err := state.RetryStore(ctx, func(ctx context.Context) ([]*modelv1.Message, error) { return r.s.Store.Transcript(ctx, r.SessionID) })
		if err != nil {
			return err
		}
		r.msgs = msgs
	}
	n := len(r.msgs)
	if n == 0 || r.msgs[n-1].GetRole() != modelv1.Role_ROLE_ASSISTANT {
		return nil
	}
	uses := toolUses(r.msgs[n-1])
	if len(uses) == 0 {
		return nil
	}
	for _, u := range uses[min(len(r.RS.GetResults()), len(uses)):] {
		res := notRun(u)
		if p := r.RS.GetPending(); p != nil && call.PendingUse(p) == u.GetId() {
			// A courier's failure still answers the call, so the transcript
			// keeps its result; only a store failure stops here.
			got, err := r.Decide(ctx, u, p)
			if got == nil {
				return err
			}
			res = got
			r.RS.Pending = nil
		}
		r.RS.Results = append(r.RS.Results, res)
	}
	results := &modelv1.Message{Role: modelv1.Role_ROLE_USER}
	for _, res := range r.RS.GetResults() {
		results.Content = append(results.Content, toolResult(res))
	}
	r.msgs = append(r.msgs, results)
	r.RS.Results = nil
	return r.save(ctx)
}
