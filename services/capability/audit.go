package capability

import (
	"sync"

	"google.golang.org/protobuf/proto"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
)

// auditLog keeps the dispatch audit log in memory. Each session keeps at most
// perSession entries (the oldest are dropped first) and at most maxSessions
// sessions are kept (the session written least recently is dropped first), so
// the log's memory is bounded however long the process lives. It is lost on
// restart; a durable log would live behind the same two methods.
type auditLog struct {
	mu          sync.Mutex
	perSession  int
	maxSessions int
	sessions    map[string]*sessionLog
	tick        uint64
}

type sessionLog struct {
	entries   []*capabilityv1.Dispatch
	lastWrite uint64
}

func newAuditLog(perSession, maxSessions int) *auditLog {
	return &auditLog{perSession: perSession, maxSessions: maxSessions, sessions: map[string]*sessionLog{}}
}

func (l *auditLog) record(d *capabilityv1.Dispatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tick++
	s, ok := l.sessions[d.GetSessionId()]
	if !ok {
		if len(l.sessions) >= l.maxSessions {
			l.evictLocked()
		}
		s = &sessionLog{}
		l.sessions[d.GetSessionId()] = s
	}
	s.lastWrite = l.tick
	s.entries = append(s.entries, proto.Clone(d).(*capabilityv1.Dispatch))
	if over := len(s.entries) - l.perSession; over > 0 {
		// Copy so the dropped entries do not stay reachable through the array.
		s.entries = append([]*capabilityv1.Dispatch(nil), s.entries[over:]...)
	}
}

func (l *auditLog) evictLocked() {
	var oldest string
	var at uint64
	for id, s := range l.sessions {
		if oldest == "" || s.lastWrite < at {
			oldest, at = id, s.lastWrite
		}
	}
	delete(l.sessions, oldest)
}

func (l *auditLog) list(sessionID string) []*capabilityv1.Dispatch {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sessions[sessionID]
	if !ok {
		return nil
	}
	out := make([]*capabilityv1.Dispatch, len(s.entries))
	for i, d := range s.entries {
		out[i] = proto.Clone(d).(*capabilityv1.Dispatch)
	}
	return out
}
