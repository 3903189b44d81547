package orchestrator

// This file holds a run's worker state (runner) and how it writes chunks and saves progress.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
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
	// sess is the session as the last step that wrote it stored it, for the
	// next turn to use instead of reading it again; taken once.
	sess *agentv1.Session
	// peeked is the pending call's mailbox as the run read it when it was
	// resumed; taken once.
	peeked *peekedCall
	// local is the tail of the run's log this runner wrote, which the
	// replica's own followers read.
	local *localLog
	// suspendFor is how long the run waits once loop returns errSuspended:
	// until its tool call's deadline, or zero to hand it over at once.
	suspendFor time.Duration
}

// emit stamps c with the next seq and appends it to the run's event log,
// from which every follower reads it. The runner may change c, or what it
// points to, afterwards: the replica's own followers get a copy.
func (r *runner) emit(ctx context.Context, c *agentv1.StreamChunk) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return r.emitTo(ctx, c)
}

// emitFresh is emit for a chunk built for this call alone, all of whose
// parts are its own, which nothing touches afterwards: a model turn's
// deltas, nearly every chunk of a run. The followers get c itself, without
// a copy (about 5 % of the mesh's allocations in a 200-stream bench level).
func (r *runner) emitFresh(ctx context.Context, c *agentv1.StreamChunk) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return r.appendChunk(ctx, c, false)
}

// emitTo appends c even when ctx was cancelled; a store outage delays it.
func (r *runner) emitTo(ctx context.Context, c *agentv1.StreamChunk) error {
	return r.appendChunk(ctx, c, true)
}

// appendChunk appends c, and hands the replica's followers c, or a copy of
// it when the runner may change it later.
func (r *runner) appendChunk(ctx context.Context, c *agentv1.StreamChunk, copied bool) error {
	c.Seq = r.seq + 1
	c.RunId = r.runID
	c.SessionId = r.sessionID
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := retry(actx, func(ctx context.Context) error { return r.s.store.Append(ctx, r.runID, c) }); err != nil {
		return &runError{code: agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, message: fmt.Sprintf("append event %d of run %s: %v", c.Seq, r.runID, err), retryable: true}
	}
	r.seq = c.Seq
	if r.local == nil {
		r.local = r.s.local.open(r.runID)
	}
	if copied {
		c = proto.Clone(c).(*agentv1.StreamChunk)
	}
	r.local.add(c)
	return nil
}

// letGo ends the runner's hold on its local tail: followers on this
// replica read what comes next from the store.
func (r *runner) letGo() {
	if r.local != nil {
		r.s.local.close(r.runID, r.local)
	}
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
