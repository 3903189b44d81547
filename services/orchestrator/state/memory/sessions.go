package memory

import (
	"context"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/state"
)

// Create stores a new session.
func (s *Store) Create(_ context.Context, sess *agentv1.Session) error {
	if sess.GetSessionId() == "" {
		return state.Error("create session: empty session id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	id := sess.GetSessionId()
	if _, ok := s.liveLocked(id); ok {
		return state.Error("create session: session id " + id + " is taken")
	}
	s.sessions[id] = proto.Clone(sess).(*agentv1.Session)
	delete(s.transcripts, id)
	s.renewLocked(s.sessionExpires, id)
	return nil
}

// liveLocked returns the session unless it is missing or expired; an
// expired one is forgotten with its transcript.
func (s *Store) liveLocked(id string) (*agentv1.Session, bool) {
	sess, ok := s.sessions[id]
	if !ok {
		return nil, false
	}
	if exp, ok := s.sessionExpires[id]; ok && !s.now().Before(exp) {
		s.forgetSessionLocked(id)
		return nil, false
	}
	return sess, true
}

// forgetSessionLocked drops the session and its transcript.
func (s *Store) forgetSessionLocked(id string) {
	delete(s.sessions, id)
	delete(s.transcripts, id)
	delete(s.sessionExpires, id)
	delete(s.transcriptExpires, id)
}

// renewLocked sets id's expiry in m to the session retention from now, when
// there is one.
func (s *Store) renewLocked(m map[string]time.Time, id string) {
	if s.sessionTTL > 0 {
		m[id] = s.now().Add(s.sessionTTL)
	}
}

// Get returns a copy of the session.
func (s *Store) Get(_ context.Context, sessionID string) (*agentv1.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.liveLocked(sessionID)
	if !ok {
		return nil, state.ErrNotFound
	}
	return proto.Clone(sess).(*agentv1.Session), nil
}

// Update applies fn to a copy under the store's lock and keeps the copy when
// fn succeeds, so concurrent updates never lose each other's changes.
func (s *Store) Update(_ context.Context, sessionID string, fn func(*agentv1.Session) error) (*agentv1.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.liveLocked(sessionID)
	if !ok {
		return nil, state.ErrNotFound
	}
	next := proto.Clone(sess).(*agentv1.Session)
	if err := fn(next); err != nil {
		return nil, err
	}
	s.sessions[sessionID] = next
	s.renewLocked(s.sessionExpires, sessionID)
	return proto.Clone(next).(*agentv1.Session), nil
}

// List returns the owner's sessions, newest first.
func (s *Store) List(_ context.Context, owner string) ([]*agentv1.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*agentv1.Session
	for id := range s.sessions {
		if sess, ok := s.liveLocked(id); ok && sess.GetOwner() == owner {
			out = append(out, proto.Clone(sess).(*agentv1.Session))
		}
	}
	slices.SortFunc(out, func(a, b *agentv1.Session) int {
		if c := b.GetCreateTime().AsTime().Compare(a.GetCreateTime().AsTime()); c != 0 {
			return c
		}
		return compareStrings(b.GetSessionId(), a.GetSessionId())
	})
	return out, nil
}

// Transcript returns a copy of the session's transcript.
func (s *Store) Transcript(_ context.Context, sessionID string) ([]*modelv1.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.liveLocked(sessionID); !ok {
		return nil, state.ErrNotFound
	}
	if exp, ok := s.transcriptExpires[sessionID]; ok && !s.now().Before(exp) {
		delete(s.transcripts, sessionID)
		delete(s.transcriptExpires, sessionID)
	}
	return cloneMessages(s.transcripts[sessionID]), nil
}

// SaveTranscript replaces the session's transcript with a copy of msgs.
func (s *Store) SaveTranscript(_ context.Context, sessionID string, msgs []*modelv1.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.liveLocked(sessionID); !ok {
		return state.ErrNotFound
	}
	s.transcripts[sessionID] = cloneMessages(msgs)
	s.renewLocked(s.transcriptExpires, sessionID)
	return nil
}

func cloneMessages(msgs []*modelv1.Message) []*modelv1.Message {
	out := make([]*modelv1.Message, len(msgs))
	for i, m := range msgs {
		out[i] = proto.Clone(m).(*modelv1.Message)
	}
	return out
}

// Delete removes the session, its transcript and mailbox, and the event logs
// and cancel signals of its last run and of runIDs.
func (s *Store) Delete(_ context.Context, sessionID string, runIDs ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[sessionID]; ok && sess.GetLastRunId() != "" {
		runIDs = append(runIDs, sess.GetLastRunId())
	}
	s.forgetSessionLocked(sessionID)
	delete(s.mailboxes, sessionID)
	delete(s.decided, sessionID)
	for _, id := range runIDs {
		delete(s.logs, id)
		delete(s.runs, id)
		delete(s.leases, id)
		if sig, ok := s.signals[id]; ok && sig.watchers == 0 {
			delete(s.signals, id)
		}
	}
	return nil
}
