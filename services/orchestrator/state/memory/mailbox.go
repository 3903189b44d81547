package memory

// This file holds the in-process mailbox and cancel signals.

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// Expect opens the session's mailbox for callID, replacing any older one.
func (s *Store) Expect(_ context.Context, sessionID, callID, token string, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mailboxes[sessionID] = &mailbox{callID: callID, token: token, expires: s.now().Add(ttl)}
	return nil
}

// Deliver checks the call, the token and what was decided, all under one
// lock, then stores the result.
func (s *Store) Deliver(_ context.Context, sessionID, callID, token string, d state.Delivery) error {
	digest, err := state.ResultDigest(token, d.Content)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mb, ok := s.mailboxes[sessionID]
	if !ok || mb.callID != callID || !s.now().Before(mb.expires) {
		dec, ok := s.decided[sessionID][callID]
		switch {
		case !ok:
			return state.ErrNoPendingCall
		case dec.token != token:
			return state.ErrBadToken
		case dec.digest != digest:
			return state.ErrConflict
		}
		return nil
	}
	switch {
	case mb.token != token:
		return state.ErrBadToken
	case mb.delivered != nil && mb.digest == digest:
		return nil
	case mb.delivered != nil, mb.decided:
		return state.ErrConflict
	}
	d.ToolCallID = callID
	d.Content = cloneContent(d)
	mb.delivered = &d
	mb.digest = digest
	return nil
}

func cloneContent(d state.Delivery) *orchestratorv1.MailboxDelivery {
	if d.Content == nil {
		return nil
	}
	return proto.Clone(d.Content).(*orchestratorv1.MailboxDelivery)
}

// Peek returns the result for callID if it was delivered.
func (s *Store) Peek(_ context.Context, sessionID, callID string) (state.Delivery, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mb, ok := s.mailboxes[sessionID]
	if !ok || mb.callID != callID || mb.delivered == nil {
		return state.Delivery{}, false, nil
	}
	d := *mb.delivered
	d.Content = cloneContent(d)
	return d, true, nil
}

// Decide closes callID with its result, or with none.
func (s *Store) Decide(_ context.Context, sessionID, callID string) (state.Delivery, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.decideLocked(sessionID, callID)
	return d, ok, nil
}

func (s *Store) decideLocked(sessionID, callID string) (state.Delivery, bool) {
	mb, ok := s.mailboxes[sessionID]
	if !ok || mb.callID != callID {
		return state.Delivery{}, false
	}
	mb.decided = true
	dec := decision{token: mb.token, digest: "none"}
	if mb.delivered != nil {
		dec.digest = mb.digest
	}
	if s.decided[sessionID] == nil {
		s.decided[sessionID] = map[string]decision{}
	}
	s.decided[sessionID][callID] = dec
	if mb.delivered == nil {
		return state.Delivery{}, false
	}
	d := *mb.delivered
	d.Content = cloneContent(d)
	return d, true
}

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
