package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// logLocked returns the run's log unless it is missing or expired.
func (s *Store) logLocked(runID string) (*eventLog, bool) {
	l, ok := s.logs[runID]
	if ok && !s.now().Before(l.expires) {
		delete(s.logs, runID)
		return nil, false
	}
	return l, ok
}

// Append adds cs to the run's log, creating the log on the first chunk. It
// checks every chunk before it adds any, so a refused append adds none.
func (s *Store) Append(_ context.Context, runID string, cs ...*agentv1.StreamChunk) error {
	if len(cs) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logLocked(runID)
	if !ok {
		s.pruneLocked()
		l = &eventLog{changed: make(chan struct{})}
		s.logs[runID] = l
	}
	// The same chunk at a seq already logged is a retried append, as the
	// Redis store must allow; another chunk there is a conflict.
	fresh := cs
	for len(fresh) > 0 {
		c := fresh[0]
		i, found := slices.BinarySearchFunc(l.chunks, c.GetSeq(), func(x *agentv1.StreamChunk, seq int64) int { return cmp.Compare(x.GetSeq(), seq) })
		if !found {
			break
		}
		if !proto.Equal(l.chunks[i], c) {
			return fmt.Errorf("append to run %s at seq %d: %w", runID, c.GetSeq(), state.ErrEventConflict)
		}
		fresh = fresh[1:]
	}
	if len(fresh) == 0 {
		return nil
	}
	if l.finished {
		return state.Error("append to run " + runID + ": its event log is finished")
	}
	last := int64(0)
	if n := len(l.chunks); n > 0 {
		last = l.chunks[n-1].GetSeq()
	}
	for _, c := range fresh {
		if c.GetSeq() <= last {
			return state.Error("append to run " + runID + ": seq does not increase")
		}
		last = c.GetSeq()
	}
	for _, c := range fresh {
		l.chunks = append(l.chunks, proto.Clone(c).(*agentv1.StreamChunk))
	}
	l.expires = s.now().Add(s.eventTTL)
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// Finish marks the run's log complete.
func (s *Store) Finish(_ context.Context, runID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logLocked(runID)
	if !ok {
		l = &eventLog{changed: make(chan struct{})}
		s.logs[runID] = l
	}
	if !l.finished {
		l.finished = true
		l.expires = s.now().Add(s.eventTTL)
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return nil
}

// LastSeq returns the seq of the run's last chunk and whether its log is finished.
func (s *Store) LastSeq(_ context.Context, runID string) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logLocked(runID)
	if !ok || len(l.chunks) == 0 {
		return 0, ok && l.finished, nil
	}
	return l.chunks[len(l.chunks)-1].GetSeq(), l.finished, nil
}

// Follow replays the log after afterSeq, then follows it until it finishes.
func (s *Store) Follow(ctx context.Context, runID string, afterSeq int64, fn func([]*agentv1.StreamChunk) error) error {
	next := 0
	for {
		s.mu.Lock()
		l, ok := s.logLocked(runID)
		if !ok {
			s.mu.Unlock()
			return state.ErrNotFound
		}
		batch := l.chunks[next:]
		next = len(l.chunks)
		finished, changed := l.finished, l.changed
		s.mu.Unlock()

		var out []*agentv1.StreamChunk
		for _, c := range batch {
			if c.GetSeq() > afterSeq {
				out = append(out, proto.Clone(c).(*agentv1.StreamChunk))
			}
		}
		if len(out) > 0 {
			if err := fn(out); err != nil {
				return err
			}
		}
		if finished {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
