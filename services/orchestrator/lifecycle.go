package orchestrator

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
	"nexus.local/services/orchestrator/state"
)

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
	if err := r.load(ctx); err != nil {
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

// load reads what the run goes on from, side by side: the transcript, the
// last event's seq and, for a pending call, its mailbox, so a resumed run
// waits for one round trip to the store rather than three.
func (r *runner) load(ctx context.Context) error {
	var wg sync.WaitGroup
	var terr, serr error
	wg.Go(func() {
		r.msgs, terr = retryStore(ctx, func(ctx context.Context) ([]*modelv1.Message, error) { return r.s.store.Transcript(ctx, r.sessionID) })
	})
	wg.Go(func() { r.seq, serr = r.lastSeq(ctx) })
	if callID := r.rs.GetPending().GetToolCall().GetToolCallId(); callID != "" {
		wg.Go(func() {
			if d, ok, err := r.s.store.Peek(ctx, r.sessionID, callID); err == nil {
				r.peeked = &peekedCall{callID: callID, d: d, ok: ok}
			}
		})
	}
	wg.Wait()
	if terr != nil {
		return r.stateErr(ctx, "read transcript", terr)
	}
	return serr
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
	r.flushOutcomes(cctx)
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
	r.flushOutcomes(ctx)
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
		if err == nil && r.local != nil {
			r.local.finish()
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

// flushOutcomes writes the run's outcome records before it lets go of the
// run, so the audit log and the history hold what it did when its followers
// hear it suspended or ended. Records it cannot write stay in the outbox
// for any replica's sweep.
func (r *runner) flushOutcomes(ctx context.Context) {
	if err := r.s.outbox.flush(ctx, r.sessionID); err != nil {
		r.log.Warn("write tool call outcomes", "err", err)
	}
}
