package redisstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"nexus.local/services/orchestrator/state"
)

// Delete removes every key of the session: its state, transcript, mailbox
// and decided calls, its entry in the owner's index, and the event logs,
// cancel signals, run states and schedule entries of its last run and of
// runIDs. The session's own keys share a slot and go in
// one transaction; the others live in other slots and follow one by one.
func (s *Store) Delete(ctx context.Context, sessionID string, runIDs ...string) error {
	sess, err := s.Get(ctx, sessionID)
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("delete session %s: %w", sessionID, err)
	}
	if sess != nil && sess.GetLastRunId() != "" {
		runIDs = append(runIDs, sess.GetLastRunId())
	}
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.sessionKey(sessionID), s.transcriptKey(sessionID), s.mailboxKey(sessionID), s.decidedKey(sessionID))
		return nil
	}); err != nil {
		return fmt.Errorf("delete session %s: %w", sessionID, err)
	}
	if sess != nil {
		if err := s.rdb.ZRem(ctx, s.ownerKey(sess.GetOwner()), sessionID).Err(); err != nil {
			return fmt.Errorf("delete session %s from its owner's index: %w", sessionID, err)
		}
	}
	// A run's event log, cancel signal and state share the run's slot; its
	// schedule entry lives with every other run's.
	for _, id := range runIDs {
		if err := s.rdb.Del(ctx, s.eventsKey(id), s.cancelKey(id), s.runKey(id)).Err(); err != nil {
			return fmt.Errorf("delete the event log of run %s: %w", id, err)
		}
		if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HDel(ctx, s.leaseInfoKey(), id)
			p.ZRem(ctx, s.leaseExpiryKey(), id)
			return nil
		}); err != nil {
			return fmt.Errorf("delete the schedule entry of run %s: %w", id, err)
		}
	}
	return nil
}
