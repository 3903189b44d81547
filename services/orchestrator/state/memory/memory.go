// Package memory implements state.Store inside one process, for tests and for
// an orchestrator without Redis whose history is on PostgreSQL (nexus dev
// keeps its state in its SQLite file, state/sqlitestate). It keeps the same
// promises as the Redis implementation: atomic session updates, a mailbox that
// keeps a result posted before the run looks, replayable event logs, a
// schedule of unfinished runs, and the same retention.
package memory

import (
	"context"
	"sync"
	"time"

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

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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

// Batch runs the steps one after the other: in memory, a round trip costs
// nothing.
func (s *Store) Batch(ctx context.Context, steps ...state.Step) error {
	return state.RunSteps(ctx, s, steps...)
}
