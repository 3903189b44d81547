package memory

import "context"

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
