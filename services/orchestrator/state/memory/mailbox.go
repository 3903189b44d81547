package memory

// This file holds the in-process mailbox and cancel signals.

import (
	"context"
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
