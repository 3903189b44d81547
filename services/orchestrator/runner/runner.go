package runner

// This file holds a run's worker state (runner) and how it writes chunks and saves progress.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/state"
)

// Causes that end a worker's hold on a run besides those of its call
// (call.ErrCancelled, call.ErrSuspended).
const (
	// errToolInputCut means a turn ended inside a tool call's arguments.
	errToolInputCut = state.Error("the model's tool call was cut off before its arguments were complete")
	// errLeaseLost means another replica took the run over; this one stops
	// touching it at once.
	errLeaseLost = state.Error("this replica lost the run's lease")
	// ErrDraining means this replica is shutting down: the run is handed
	// over, not ended.
	ErrDraining = state.Error("this replica is shutting down")
)

// maxRestarts bounds how often a run's turn is redone because the replica
// working on it stopped, so a turn that kills replicas cannot go round the
// mesh forever.
const maxRestarts = 5

// runner carries one run on for as long as one replica holds it: from a
// start, a claim after a result, a timeout, a cancel or a replica that
// stopped, until the run suspends, ends, or the replica lets it go. What
// must outlive the runner is in the store: the session, the transcript and
// the run's state. The run's identity and its pending call are its Call's.
type runner struct {
	*call.Call
	s     *Deps
	lease state.Lease

	model  *modelv1.ModelInfo
	system string
	msgs   []*modelv1.Message
	// local is the tail of the run's log this runner wrote, which the
	// replica's own followers read.
	local *localLog
	// pre is what was read with the claim of the run, if it was.
	pre *Loaded
	// unsaved says msgs ends with tool results the store does not have yet:
	// the next turn's start saves them with its own writes.
	unsaved bool
}

// newRunner is the runner of the run of lease l.
func newRunner(d *Deps, log *slog.Logger, l state.Lease) *runner {
	r := &runner{s: d, lease: l}
	r.Call = call.New(&d.Deps, r)
	r.Log, r.SessionID, r.RunID = log, l.SessionID, l.RunID
	return r
}

// Emit stamps c with the next seq and appends it to the run's event log,
// from which every follower reads it. The runner may change c, or what it
// points to, afterwards: the replica's own followers get a copy.
func (r *runner) Emit(ctx context.Context, c *agentv1.StreamChunk) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return r.EmitTo(ctx, c)
}

// EmitFresh is Emit for chunks built for this call alone, all of whose
// parts are their own, which nothing touches afterwards: a model turn's
// deltas, nearly every chunk of a run. The chunks go to the log in one
// append, and the followers get them themselves, without a copy (about 5 %
// of the mesh's allocations in a 200-stream bench level).
func (r *runner) EmitFresh(ctx context.Context, cs ...*agentv1.StreamChunk) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return r.appendChunks(ctx, cs, false)
}

// EmitTo appends c even when ctx was cancelled; a store outage delays it.
func (r *runner) EmitTo(ctx context.Context, c *agentv1.StreamChunk) error {
	return r.appendChunks(ctx, []*agentv1.StreamChunk{c}, true)
}

// EmitToWith is EmitTo with steps run before the append in one batch, in
// one round trip to the store.
func (r *runner) EmitToWith(ctx context.Context, c *agentv1.StreamChunk, steps ...state.Step) error {
	return r.appendChunks(ctx, []*agentv1.StreamChunk{c}, true, steps...)
}

// appendChunks stamps cs with the next seqs and appends them in one step,
// after steps when there are some, then hands the replica's followers each,
// or a copy of each when the runner may change it later. A batch cut short
// by an outage is run again whole: its steps can be (state.Batcher).
func (r *runner) appendChunks(ctx context.Context, cs []*agentv1.StreamChunk, copied bool, steps ...state.Step) error {
	if len(cs) == 0 {
		return nil
	}
	for i, c := range cs {
		c.Seq = r.Seq + int64(i) + 1
		c.RunId = r.RunID
		c.SessionId = r.SessionID
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
	defer cancel()
	if len(steps) > 0 {
		steps = append(slices.Clip(steps), &state.AppendStep{RunID: r.RunID, Chunks: cs})
	}
	if err := state.Retry(actx, func(ctx context.Context) error {
		r.s.Metrics.EventAppend(ctx)
		if len(steps) > 0 {
			return r.s.Store.Batch(ctx, steps...)
		}
		return r.s.Store.Append(ctx, r.RunID, cs...)
	}); err != nil {
		return call.StoreErr(fmt.Sprintf("append events %d to %d of run %s", cs[0].GetSeq(), cs[len(cs)-1].GetSeq(), r.RunID), err)
	}
	r.Seq = cs[len(cs)-1].GetSeq()
	if r.local == nil {
		r.local = r.s.Local.open(r.RunID)
	}
	for _, c := range cs {
		if copied {
			c = proto.Clone(c).(*agentv1.StreamChunk)
		}
		r.local.add(c)
	}
	return nil
}

// startTurn tells the followers a turn starts (md) and, with save, saves the
// run's state before, and the transcript when it is behind: the writes
// before a model request go in one round trip. A cancelled run still saves
// them, and starts no turn.
func (r *runner) startTurn(ctx context.Context, md *agentv1.Metadata, save bool) error {
	var steps []state.Step
	if save {
		if r.unsaved {
			steps = append(steps, &state.SaveTranscriptStep{SessionID: r.SessionID, Msgs: r.msgs})
		}
		steps = append(steps, &state.SaveRunStep{Run: r.RS})
	}
	if ctx.Err() != nil {
		if len(steps) > 0 {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
			defer cancel()
			if err := state.Retry(sctx, func(ctx context.Context) error { return r.s.Store.Batch(ctx, steps...) }); err != nil {
				return call.StoreErr("save run state", err)
			}
			r.unsaved = false
		}
		return context.Cause(ctx)
	}
	if err := r.appendChunks(ctx, []*agentv1.StreamChunk{{Chunk: &agentv1.StreamChunk_Metadata{Metadata: md}}}, false, steps...); err != nil {
		return err
	}
	if save {
		r.unsaved = false
	}
	return nil
}

// letGo ends the runner's hold on its local tail: followers on this
// replica read what comes next from the store.
func (r *runner) letGo() {
	if r.local != nil {
		r.s.Local.close(r.RunID, r.local)
	}
}

func (r *runner) metadata(ctx context.Context, md *agentv1.Metadata) error {
	return r.Emit(ctx, &agentv1.StreamChunk{Chunk: &agentv1.StreamChunk_Metadata{Metadata: md}})
}

// usage returns the run's accounting so far.
func (r *runner) usage(turn *modelv1.Usage, final bool) *agentv1.Usage {
	return &agentv1.Usage{Model: r.RS.GetModel(), Total: tokenUsage(r.RS.GetTotal()), Turn: tokenUsage(turn), Turns: r.RS.GetTurns(), Final: final}
}

func addUsage(total, u *modelv1.Usage) {
	total.InputTokens += u.GetInputTokens()
	total.OutputTokens += u.GetOutputTokens()
	total.CacheReadTokens += u.GetCacheReadTokens()
	total.CacheWriteTokens += u.GetCacheWriteTokens()
	total.ReasoningTokens += u.GetReasoningTokens()
	total.CostUsd += u.GetCostUsd()
}

// save stores the transcript; a store outage delays it.
func (r *runner) save(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
	defer cancel()
	if err := state.Retry(sctx, func(ctx context.Context) error { return r.s.Store.SaveTranscript(ctx, r.SessionID, r.msgs) }); err != nil {
		return call.StoreErr("save transcript", err)
	}
	r.unsaved = false
	return nil
}

// flushed saves tool results the transcript does not have yet before the
// loop stops with err; it returns err, or the save's failure. A runner
// whose run another replica took over writes nothing more.
func (r *runner) flushed(ctx context.Context, err error) error {
	if !r.unsaved || errors.Is(context.Cause(ctx), errLeaseLost) {
		return err
	}
	if serr := r.save(ctx); serr != nil {
		return serr
	}
	return err
}

// SaveRun stores the run's state; a store outage delays it.
func (r *runner) SaveRun(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), state.CleanupTimeout)
	defer cancel()
	if err := state.Retry(sctx, func(ctx context.Context) error { return r.s.Store.SaveRun(ctx, r.RS) }); err != nil {
		return call.StoreErr("save run state", err)
	}
	return nil
}

func cloneMessages(msgs []*modelv1.Message) []*modelv1.Message {
	out := make([]*modelv1.Message, len(msgs))
	for i, m := range msgs {
		out[i] = proto.Clone(m).(*modelv1.Message)
	}
	return out
}
