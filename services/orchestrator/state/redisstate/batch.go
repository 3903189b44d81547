package redisstate

// This file runs a batch of steps in one pipeline: one round trip where the
// steps' own methods would take one each.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"nexus.local/services/orchestrator/state"
)

// Batch runs the steps in one pipeline, which Redis executes in order. On
// Cluster the steps' keys live in different slots, whose nodes would run
// their parts of one pipeline in no set order, so each step goes on its own
// there, in order. Scripts go whole (EVAL, not EVALSHA): one that Redis
// lost after a restart would otherwise run after the steps behind it.
func (s *Store) Batch(ctx context.Context, steps ...state.Step) error {
	if _, cluster := s.rdb.(*redis.ClusterClient); cluster {
		var first error
		for _, st := range steps {
			if err := s.pipeline(ctx, st); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	return s.pipeline(ctx, steps...)
}

func (s *Store) pipeline(ctx context.Context, steps ...state.Step) error {
	p := s.rdb.Pipeline()
	answers := make([]func() error, len(steps))
	for i, st := range steps {
		answers[i] = s.queue(ctx, p, st)
	}
	if p.Len() > 0 {
		// Each command keeps its own error, which its step reads.
		_, _ = p.Exec(ctx)
	}
	var first error
	for _, answer := range answers {
		if err := answer(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// queue puts the commands of st in p and returns what reads their answer
// into st once p ran.
func (s *Store) queue(ctx context.Context, p redis.Pipeliner, st state.Step) func() error {
	switch x := st.(type) {
	case *state.WakeClaimStep:
		if err := validLease(x.Lease, x.TTL); err != nil {
			return failed(&x.StepErr, err)
		}
		cmd := s.scripts.wakeClaim.Eval(ctx, p, s.leaseKeys(), x.Lease.RunID, x.Lease.Owner, x.TTL.Milliseconds())
		return func() error {
			ok, err := cmd.Int()
			x.Err = leaseResult("wake and claim", x.Lease.RunID, ok, err)
			return x.Err
		}
	case *state.GetRunStep:
		cmd := p.Get(ctx, s.runKey(x.RunID))
		return func() error { x.Run, x.Err = decodeRun(x.RunID, cmd); return x.Err }
	case *state.CancelledStep:
		c := s.watchCancel(ctx, x.RunID)
		cmd := p.Exists(ctx, s.cancelKey(x.RunID))
		return func() error {
			if x.Err = c.checked(cmd); x.Err == nil {
				x.Done, x.Stop = c.done, c.stop
			}
			return x.Err
		}
	case *state.TranscriptStep:
		read := s.readTranscript(ctx, p, x.SessionID)
		return func() error { x.Msgs, x.Err = read.decode(x.SessionID); return x.Err }
	case *state.LastSeqStep:
		cmd := s.readLastSeq(ctx, p, x.RunID)
		return func() error { x.Seq, x.Finished, x.Err = lastSeqOf(x.RunID, cmd); return x.Err }
	case *state.PeekStep:
		cmd := s.readMailbox(ctx, p, x.SessionID)
		return func() error { x.Delivery, x.OK, x.Err = peeked(x.SessionID, x.CallID, cmd); return x.Err }
	case *state.GetSessionStep:
		cmd := p.Get(ctx, s.sessionKey(x.SessionID))
		return func() error { x.Session, x.Err = sessionOf(x.SessionID, cmd); return x.Err }
	case *state.DecideRecordStep:
		keys, args := s.decideRecordArgs(x.SessionID, x.CallID, x.Record)
		s.index(ctx, p, x.SessionID)
		cmd := s.outbox.decide.Eval(ctx, p, keys, args...)
		return func() error { x.Delivery, x.OK, x.Err = decidedBy(x.SessionID, x.CallID, cmd); return x.Err }
	case *state.SwapSessionStep:
		return s.queueSwap(ctx, p, x)
	case *state.AppendStep:
		keys, args, err := s.appendArgs(x.RunID, x.Chunks)
		if err != nil {
			return failed(&x.StepErr, err)
		}
		cmd := s.scripts.append.Eval(ctx, p, keys, args...)
		return func() error {
			res, err := cmd.Text()
			x.Err = appended(x.RunID, x.Chunks, res, err)
			return x.Err
		}
	case *state.SaveTranscriptStep:
		keys, args, err := s.saveTranscriptArgs(x.SessionID, x.Msgs)
		if err != nil {
			return failed(&x.StepErr, err)
		}
		cmd := s.scripts.saveTranscript.Eval(ctx, p, keys, args...)
		return func() error { x.Err = transcriptSaved(x.SessionID, cmd); return x.Err }
	case *state.SaveRunStep:
		b, err := encodeRun(x.Run)
		if err != nil {
			return failed(&x.StepErr, err)
		}
		cmd := p.Set(ctx, s.runKey(x.Run.GetRunId()), b, s.opts.EventTTL)
		return func() error { x.Err = savedRun(x.Run.GetRunId(), cmd.Err()); return x.Err }
	}
	return failed(nil, fmt.Errorf("batch: a step of type %T is not known here", st))
}

// queueSwap is updateLua with the session as it was read: it replaces the
// stored bytes only if they are still those of x.Was.
func (s *Store) queueSwap(ctx context.Context, p redis.Pipeliner, x *state.SwapSessionStep) func() error {
	id := x.Now.GetSessionId()
	was, err := proto.MarshalOptions{Deterministic: true}.Marshal(x.Was)
	if err != nil {
		return failed(&x.StepErr, fmt.Errorf("encode session: %w", err))
	}
	now, err := proto.MarshalOptions{Deterministic: true}.Marshal(x.Now)
	if err != nil {
		return failed(&x.StepErr, fmt.Errorf("encode session: %w", err))
	}
	sum := sha1.Sum(was)
	cmd := s.scripts.update.Eval(ctx, p, []string{s.sessionKey(id)}, hex.EncodeToString(sum[:]), now, s.updateTTL())
	return func() error {
		res, err := cmd.Int()
		switch {
		case err != nil:
			x.Err = fmt.Errorf("update session %s: %w", id, err)
		case res == -1:
			x.Err = state.ErrNotFound
		default:
			x.Swapped = res == 1
		}
		return x.Err
	}
}

// failed is the answer of a step that could not be queued.
func failed(e *state.StepErr, err error) func() error {
	if e != nil {
		e.Err = err
	}
	return func() error { return err }
}
