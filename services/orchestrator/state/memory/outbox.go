package memory

// This file holds the in-process outbox of outcome records.

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// DecideRecord decides callID and puts rec, with the result, under the same lock.
func (s *Store) DecideRecord(_ context.Context, sessionID, callID string, rec state.OutboxRecord) (state.Delivery, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.decideLocked(sessionID, callID)
	rec.SessionID = sessionID
	rec.Delivery = nil
	if ok {
		rec.Delivery = proto.Clone(d.Content).(*orchestratorv1.MailboxDelivery)
	}
	s.putLocked(rec)
	return d, ok, nil
}

// PutOutbox adds records; one whose ID is there already stays as it was.
func (s *Store) PutOutbox(_ context.Context, recs ...state.OutboxRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		if r.Delivery != nil {
			r.Delivery = proto.Clone(r.Delivery).(*orchestratorv1.MailboxDelivery)
		}
		s.putLocked(r)
	}
	return nil
}

func (s *Store) putLocked(rec state.OutboxRecord) {
	if slices.ContainsFunc(s.outbox, func(x state.OutboxRecord) bool { return x.SessionID == rec.SessionID && x.ID == rec.ID }) {
		return
	}
	rec.Body = slices.Clone(rec.Body)
	s.outbox = append(s.outbox, rec)
}

// Outboxed returns up to limit records, oldest first.
func (s *Store) Outboxed(_ context.Context, sessionID string, limit int) ([]state.OutboxRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []state.OutboxRecord
	for _, r := range s.outbox {
		if len(out) >= limit {
			break
		}
		if sessionID != "" && r.SessionID != sessionID {
			continue
		}
		r.Body = slices.Clone(r.Body)
		if r.Delivery != nil {
			r.Delivery = proto.Clone(r.Delivery).(*orchestratorv1.MailboxDelivery)
		}
		out = append(out, r)
	}
	return out, nil
}

// DoneOutbox removes the session's records ids.
func (s *Store) DoneOutbox(_ context.Context, sessionID string, ids ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outbox = slices.DeleteFunc(s.outbox, func(x state.OutboxRecord) bool {
		return x.SessionID == sessionID && slices.Contains(ids, x.ID)
	})
	return nil
}
