// Package memory implements state.Store inside one process. It is the default
// when no Redis is configured (nexus dev, tests), and it keeps the same
// promises as the Redis implementation: atomic session updates, a mailbox that
// keeps a result posted before the run looks, replayable event logs, and a
// schedule of unfinished runs.
package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// retention is how long finished event logs and cancel signals are kept, so a
// client that lost its stream can still rejoin a run that just ended.
const retention = time.Hour

// Store is the in-process state.Store. The zero value is not usable; call New.
type Store struct {
	now func() time.Time

	mu          sync.Mutex
	sessions    map[string]*agentv1.Session
	transcripts map[string][]*modelv1.Message
	mailboxes   map[string]*mailbox
	signals     map[string]*signal
	logs        map[string]*eventLog
	runs        map[string]*orchestratorv1.RunState
	leases      map[string]leaseEntry
	// decided remembers, per session, how each closed tool call was decided
	// (its token and result digest, or none), so a courier's retry of an
	// accepted result is answered the same and a conflicting one refused.
	decided map[string]map[string]decision
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
	chunks     []*agentv1.StreamChunk
	finished   bool
	finishedAt time.Time
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

// New returns an empty store whose expiries are measured with now; a nil now
// means time.Now.
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{
		now:         now,
		sessions:    map[string]*agentv1.Session{},
		transcripts: map[string][]*modelv1.Message{},
		mailboxes:   map[string]*mailbox{},
		signals:     map[string]*signal{},
		logs:        map[string]*eventLog{},
		runs:        map[string]*orchestratorv1.RunState{},
		leases:      map[string]leaseEntry{},
		decided:     map[string]map[string]decision{},
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
	if _, ok := s.sessions[sess.GetSessionId()]; ok {
		return state.Error("create session: session id " + sess.GetSessionId() + " is taken")
	}
	s.sessions[sess.GetSessionId()] = proto.Clone(sess).(*agentv1.Session)
	return nil
}

// Get returns a copy of the session.
func (s *Store) Get(_ context.Context, sessionID string) (*agentv1.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[sessionID]
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
	sess, ok := s.sessions[sessionID]
	if !ok {
		return nil, state.ErrNotFound
	}
	next := proto.Clone(sess).(*agentv1.Session)
	if err := fn(next); err != nil {
		return nil, err
	}
	s.sessions[sessionID] = next
	return proto.Clone(next).(*agentv1.Session), nil
}

// List returns the owner's sessions, newest first.
func (s *Store) List(_ context.Context, owner string) ([]*agentv1.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*agentv1.Session
	for _, sess := range s.sessions {
		if sess.GetOwner() == owner {
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
	if _, ok := s.sessions[sessionID]; !ok {
		return nil, state.ErrNotFound
	}
	return cloneMessages(s.transcripts[sessionID]), nil
}

// SaveTranscript replaces the session's transcript with a copy of msgs.
func (s *Store) SaveTranscript(_ context.Context, sessionID string, msgs []*modelv1.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[sessionID]; !ok {
		return state.ErrNotFound
	}
	s.transcripts[sessionID] = cloneMessages(msgs)
	return nil
}

func cloneMessages(msgs []*modelv1.Message) []*modelv1.Message {
	out := make([]*modelv1.Message, len(msgs))
	for i, m := range msgs {
		out[i] = proto.Clone(m).(*modelv1.Message)
	}
	return out
}

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
	mb, ok := s.mailboxes[sessionID]
	if !ok || mb.callID != callID {
		return state.Delivery{}, false, nil
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
		return state.Delivery{}, false, nil
	}
	d := *mb.delivered
	d.Content = cloneContent(d)
	return d, true, nil
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

// pruneLocked forgets finished logs and fired signals older than retention.
func (s *Store) pruneLocked() {
	cutoff := s.now().Add(-retention)
	for id, l := range s.logs {
		if l.finished && l.finishedAt.Before(cutoff) {
			delete(s.logs, id)
		}
	}
	for id, sig := range s.signals {
		if sig.closed && sig.watchers == 0 && sig.at.Before(cutoff) {
			delete(s.signals, id)
		}
	}
}

// Append adds c to the run's log, creating the log on the first chunk.
func (s *Store) Append(_ context.Context, runID string, c *agentv1.StreamChunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[runID]
	if !ok {
		s.pruneLocked()
		l = &eventLog{changed: make(chan struct{})}
		s.logs[runID] = l
	}
	// The same chunk at a seq already logged is a retried append, as the
	// Redis store must allow; another chunk there is a conflict.
	if i, found := slices.BinarySearchFunc(l.chunks, c.GetSeq(), func(x *agentv1.StreamChunk, seq int64) int { return cmp.Compare(x.GetSeq(), seq) }); found {
		if proto.Equal(l.chunks[i], c) {
			return nil
		}
		return fmt.Errorf("append to run %s at seq %d: %w", runID, c.GetSeq(), state.ErrEventConflict)
	}
	if l.finished {
		return state.Error("append to run " + runID + ": its event log is finished")
	}
	if n := len(l.chunks); n > 0 && c.GetSeq() <= l.chunks[n-1].GetSeq() {
		return state.Error("append to run " + runID + ": seq does not increase")
	}
	l.chunks = append(l.chunks, proto.Clone(c).(*agentv1.StreamChunk))
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// Finish marks the run's log complete.
func (s *Store) Finish(_ context.Context, runID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[runID]
	if !ok {
		l = &eventLog{changed: make(chan struct{})}
		s.logs[runID] = l
	}
	if !l.finished {
		l.finished = true
		l.finishedAt = s.now()
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return nil
}

// LastSeq returns the seq of the run's last chunk and whether its log is finished.
func (s *Store) LastSeq(_ context.Context, runID string) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[runID]
	if !ok || len(l.chunks) == 0 {
		return 0, ok && l.finished, nil
	}
	return l.chunks[len(l.chunks)-1].GetSeq(), l.finished, nil
}

// Follow replays the log after afterSeq, then follows it until it finishes.
func (s *Store) Follow(ctx context.Context, runID string, afterSeq int64, fn func(*agentv1.StreamChunk) error) error {
	next := 0
	for {
		s.mu.Lock()
		l, ok := s.logs[runID]
		if !ok {
			s.mu.Unlock()
			return state.ErrNotFound
		}
		batch := l.chunks[next:]
		next = len(l.chunks)
		finished, changed := l.finished, l.changed
		s.mu.Unlock()

		for _, c := range batch {
			if c.GetSeq() <= afterSeq {
				continue
			}
			if err := fn(proto.Clone(c).(*agentv1.StreamChunk)); err != nil {
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

// SaveRun stores a copy of the run's state.
func (s *Store) SaveRun(_ context.Context, r *orchestratorv1.RunState) error {
	if r.GetRunId() == "" {
		return state.Error("save run: empty run id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[r.GetRunId()] = proto.Clone(r).(*orchestratorv1.RunState)
	return nil
}

// GetRun returns a copy of the run's state.
func (s *Store) GetRun(_ context.Context, runID string) (*orchestratorv1.RunState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[runID]
	if !ok {
		return nil, state.ErrNotFound
	}
	return proto.Clone(r).(*orchestratorv1.RunState), nil
}

// Acquire records a new run unless another owner holds an unexpired lease.
func (s *Store) Acquire(_ context.Context, l state.Lease, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if cur, ok := s.leases[l.RunID]; ok && cur.lease.Owner != l.Owner && now.Before(cur.due) {
		return state.ErrLeaseLost
	}
	s.leases[l.RunID] = leaseEntry{lease: l, due: now.Add(ttl)}
	return nil
}

// Renew extends a lease its owner still holds, also after it ran out.
func (s *Store) Renew(_ context.Context, l state.Lease, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.leases[l.RunID]
	if !ok || cur.lease.Owner != l.Owner {
		return state.ErrLeaseLost
	}
	cur.due = s.now().Add(ttl)
	s.leases[l.RunID] = cur
	return nil
}

// Suspend leaves the run without an owner, due after wait.
func (s *Store) Suspend(_ context.Context, l state.Lease, wait time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.leases[l.RunID]
	if !ok || cur.lease.Owner != l.Owner {
		return state.ErrLeaseLost
	}
	cur.lease.Owner = ""
	cur.due = s.now().Add(wait)
	s.leases[l.RunID] = cur
	return nil
}

// Wake makes a suspended run due now.
func (s *Store) Wake(_ context.Context, runID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.leases[runID]; ok && cur.lease.Owner == "" {
		if now := s.now(); now.Before(cur.due) {
			cur.due = now
			s.leases[runID] = cur
		}
	}
	return nil
}

// Claim takes a due run.
func (s *Store) Claim(_ context.Context, l state.Lease, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	cur, ok := s.leases[l.RunID]
	if !ok || now.Before(cur.due) {
		return state.ErrLeaseLost
	}
	cur.lease.Owner = l.Owner
	cur.due = now.Add(ttl)
	s.leases[l.RunID] = cur
	return nil
}

// Release forgets the run when l.Owner holds it.
func (s *Store) Release(_ context.Context, l state.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.leases[l.RunID]; ok && cur.lease.Owner == l.Owner {
		delete(s.leases, l.RunID)
	}
	return nil
}

// Due returns up to limit runs whose due time has passed, oldest first.
func (s *Store) Due(_ context.Context, limit int) ([]state.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var due []leaseEntry
	for _, e := range s.leases {
		if !now.Before(e.due) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b leaseEntry) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return compareStrings(a.lease.RunID, b.lease.RunID)
	})
	out := make([]state.Lease, 0, min(len(due), limit))
	for _, e := range due[:min(len(due), limit)] {
		out = append(out, e.lease)
	}
	return out, nil
}
