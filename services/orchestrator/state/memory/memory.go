// Package memory implements state.Store inside one process, for tests and for
// an orchestrator without Redis whose history is on PostgreSQL (nexus dev
// keeps its state in its SQLite file, state/sqlitestate). It keeps the same
// promises as the Redis implementation: atomic session updates, a mailbox that
// keeps a result posted before the run looks, replayable event logs, a
// schedule of unfinished runs, and the same retention.
package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// Default retention of event logs and cancel signals, as in redisstate: long
// enough for a client that lost its stream to rejoin a run that just ended.
const (
	defaultEventTTL = 24 * time.Hour
	signalTTL       = 24 * time.Hour
)

// Options tune a Store; the zero value is usable.
type Options struct {
	// Now is the store's clock; time.Now when nil.
	Now func() time.Time
	// SessionTTL is how long a session and its transcript are kept after
	// their last write; zero keeps them until they are deleted.
	SessionTTL time.Duration
	// EventTTL is how long a run's event log is kept after its last event;
	// 24h when zero.
	EventTTL time.Duration
}

// Store is the in-process state.Store. The zero value is not usable; call New.
type Store struct {
	now        func() time.Time
	sessionTTL time.Duration
	eventTTL   time.Duration

	mu          sync.Mutex
	sessions    map[string]*agentv1.Session
	transcripts map[string][]*modelv1.Message
	// expires holds when each session and transcript goes, by session id;
	// absent while SessionTTL is zero.
	sessionExpires    map[string]time.Time
	transcriptExpires map[string]time.Time
	mailboxes         map[string]*mailbox
	signals           map[string]*signal
	logs              map[string]*eventLog
	runs              map[string]*orchestratorv1.RunState
	leases            map[string]leaseEntry
	// decided remembers, per session, how each closed tool call was decided
	// (its token and result digest, or none), so a courier's retry of an
	// accepted result is answered the same and a conflicting one refused.
	decided map[string]map[string]decision
	// outbox holds outcome records until they were written, in the order
	// they were put.
	outbox []state.OutboxRecord
}

type mailbox struct {
	callID, token string
	expires       time.Time
	delivered     *state.Delivery
	digest        string
	decided       bool
}

type decision struct {
	token, digest string
}

type signal struct {
	ch       chan struct{}
	closed   bool
	watchers int
	at       time.Time
}

type eventLog struct {
	chunks   []*agentv1.StreamChunk
	finished bool
	// expires is the event retention after the last event.
	expires time.Time
	// changed is closed and replaced whenever the log grows or finishes.
	changed chan struct{}
}

// leaseEntry is one unfinished run in the schedule: its owner (empty while
// suspended) and when it is due.
type leaseEntry struct {
	lease state.Lease
	due   time.Time
}

var _ state.Store = (*Store)(nil)

// New returns an empty store whose expiries are measured with now (time.Now
// when nil) and that keeps sessions until they are deleted.
func New(now func() time.Time) *Store { return Open(Options{Now: now}) }

// Open returns an empty store tuned by opts.
func Open(opts Options) *Store {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.EventTTL <= 0 {
		opts.EventTTL = defaultEventTTL
	}
	return &Store{
		now:               opts.Now,
		sessionTTL:        max(opts.SessionTTL, 0),
		eventTTL:          opts.EventTTL,
		sessions:          map[string]*agentv1.Session{},
		transcripts:       map[string][]*modelv1.Message{},
		sessionExpires:    map[string]time.Time{},
		transcriptExpires: map[string]time.Time{},
		mailboxes:         map[string]*mailbox{},
		signals:           map[string]*signal{},
		logs:              map[string]*eventLog{},
		runs:              map[string]*orchestratorv1.RunState{},
		leases:            map[string]leaseEntry{},
		decided:           map[string]map[string]decision{},
	}
}

// Close releases nothing; the store lives as long as the process.
func (s *Store) Close() error { return nil }

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

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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

// pruneLocked forgets expired sessions and event logs, and fired signals
// older than their retention.
func (s *Store) pruneLocked() {
	now := s.now()
	for id := range s.sessionExpires {
		s.liveLocked(id)
	}
	for id, l := range s.logs {
		if !now.Before(l.expires) {
			delete(s.logs, id)
		}
	}
	cutoff := now.Add(-signalTTL)
	for id, sig := range s.signals {
		if sig.closed && sig.watchers == 0 && sig.at.Before(cutoff) {
			delete(s.signals, id)
		}
	}
}
