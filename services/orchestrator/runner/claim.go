package runner

// This file claims a woken run together with what its worker goes on from,
// in one round trip to the store.

import (
	"context"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/state"
)

// Loaded is what a run goes on from, read in the step that claimed it.
type Loaded struct {
	run     *orchestratorv1.RunState
	msgs    []*modelv1.Message
	seq     int64
	peeked  *call.Peeked
	sess    *agentv1.Session
	cancel  <-chan struct{}
	stopped func()
}

// Release stops the cancel watch of a Loaded that no worker takes.
func (p *Loaded) Release() {
	if p != nil {
		p.stopped()
	}
}

// WakeClaim wakes the run of l and claims it for l.Owner for ttl, and reads
// in the same round trip what its worker needs: the run's state, its cancel
// signal, the transcript, the last event's seq, the session and, for callID,
// the mailbox. It answers as Leases.WakeClaim does; a claimed run whose
// reads failed comes with no Loaded, and its worker reads them itself.
func WakeClaim(ctx context.Context, store state.Store, l state.Lease, ttl time.Duration, callID string) (*Loaded, error) {
	claim := &state.WakeClaimStep{Lease: l, TTL: ttl}
	run := &state.GetRunStep{RunID: l.RunID}
	cancelled := &state.CancelledStep{RunID: l.RunID}
	transcript := &state.TranscriptStep{SessionID: l.SessionID}
	last := &state.LastSeqStep{RunID: l.RunID}
	sess := &state.GetSessionStep{SessionID: l.SessionID}
	steps := []state.Step{claim, run, cancelled, transcript, last, sess}
	var peek *state.PeekStep
	if callID != "" {
		peek = &state.PeekStep{SessionID: l.SessionID, CallID: callID}
		steps = append(steps, peek)
	}
	err := store.Batch(ctx, steps...)
	p := &Loaded{run: run.Run, msgs: transcript.Msgs, seq: last.Seq, sess: sess.Session, cancel: cancelled.Done, stopped: cancelled.Stop}
	if cancelled.Err != nil {
		p.stopped = func() {}
	}
	if peek != nil && peek.Err == nil {
		p.peeked = call.NewPeeked(callID, peek.Delivery, peek.OK)
	}
	switch {
	case claim.Err != nil:
		p.Release()
		return nil, claim.Err
	case err != nil:
		// Claimed: the worker reads what failed here the ordinary way.
		p.Release()
		return nil, nil
	}
	return p, nil
}

// Started is what a run goes on from that its start has just written and
// read: its state, the transcript with the prompt, the seq of its last
// chunk, the session as stored and the cancel watch the start set (stop
// ends it).
func Started(run *orchestratorv1.RunState, msgs []*modelv1.Message, seq int64, sess *agentv1.Session, cancel <-chan struct{}, stop func()) *Loaded {
	return &Loaded{run: run, msgs: msgs, seq: seq, sess: sess, cancel: cancel, stopped: stop}
}

func (p *Loaded) getRun() (*orchestratorv1.RunState, error) {
	if p == nil {
		return nil, nil
	}
	return p.run, nil
}

func (p *Loaded) cancelled() <-chan struct{} {
	if p == nil {
		return nil
	}
	return p.cancel
}
