package memory

import (
	"context"
	"sync"
)

// Cancel closes the run's cancel channel; watchers that come later see it
// closed too.
func (s *Store) Cancel(_ context.Context, runID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	sig := s.signalLocked(runID)
	if !sig.closed {
		sig.closed = true
		sig.at = s.now()
		close(sig.ch)
	}
	return nil
}

// Cancelled returns the run's cancel channel.
func (s *Store) Cancelled(_ context.Context, runID string) (<-chan struct{}, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sig := s.signalLocked(runID)
	sig.watchers++
	var once sync.Once
	stop := func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			sig.watchers--
			if sig.watchers == 0 && !sig.closed && s.signals[runID] == sig {
				delete(s.signals, runID)
			}
		})
	}
	return sig.ch, stop, nil
}

func (s *Store) signalLocked(runID string) *signal {
	sig, ok := s.signals[runID]
	if !ok {
		sig = &signal{ch: make(chan struct{})}
		s.signals[runID] = sig
	}
	return sig
}
