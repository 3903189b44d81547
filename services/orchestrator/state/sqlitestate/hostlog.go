package sqlitestate

// This file keeps each host's delivery log: the calls without a result yet,
// by seq, and the links watching it.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// logWatches wakes the links watching a delivery log (or a host's
// revocation), coalesced: a watcher that has not looked yet is not woken twice.
type logWatches struct {
	mu       sync.Mutex
	watchers map[string]map[chan struct{}]struct{}
}

func (w *logWatches) add(key string) (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	ch <- struct{}{}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watchers == nil {
		w.watchers = map[string]map[chan struct{}]struct{}{}
	}
	if w.watchers[key] == nil {
		w.watchers[key] = map[chan struct{}]struct{}{}
	}
	w.watchers[key][ch] = struct{}{}
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.watchers[key], ch)
		if len(w.watchers[key]) == 0 {
			delete(w.watchers, key)
		}
	}
}

func (w *logWatches) kick(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.watchers[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Offer appends a call unless the log holds it.
func (h *Hosts) Offer(ctx context.Context, key string, c *agentv1.HostCall) (int64, error) {
	var seq int64
	err := h.s.write(ctx, func(tx *sql.Tx, _ int64) error {
		err := tx.QueryRowContext(ctx, `SELECT seq FROM hot_host_calls WHERE log_key = $1 AND session_id = $2 AND tool_call_id = $3`,
			key, c.GetSessionId(), c.GetToolCall().GetToolCallId()).Scan(&seq)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("offer a call to %s: %w", key, err)
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO hot_host_log_seqs (log_key, next) VALUES ($1, 1)
			ON CONFLICT (log_key) DO UPDATE SET next = next + 1 RETURNING next`, key).Scan(&seq); err != nil {
			return fmt.Errorf("offer a call to %s: %w", key, err)
		}
		stored := proto.Clone(c).(*agentv1.HostCall)
		stored.Seq = seq
		b, err := proto.Marshal(stored)
		if err != nil {
			return fmt.Errorf("encode call: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO hot_host_calls (log_key, seq, session_id, tool_call_id, body) VALUES ($1, $2, $3, $4, $5)`,
			key, seq, c.GetSessionId(), c.GetToolCall().GetToolCallId(), b); err != nil {
			return fmt.Errorf("offer a call to %s: %w", key, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	h.s.hostLogs.kick(key)
	return seq, nil
}

// Ack removes a call.
func (h *Hosts) Ack(ctx context.Context, key, sessionID, toolCallID string) error {
	return h.s.write(ctx, func(tx *sql.Tx, _ int64) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM hot_host_calls WHERE log_key = $1 AND session_id = $2 AND tool_call_id = $3`,
			key, sessionID, toolCallID); err != nil {
			return fmt.Errorf("acknowledge a call of %s: %w", key, err)
		}
		return nil
	})
}

// Calls returns a log's calls in seq order.
func (h *Hosts) Calls(ctx context.Context, key string) ([]*agentv1.HostCall, error) {
	return protoRows(ctx, h.s.db, func() *agentv1.HostCall { return &agentv1.HostCall{} }, "read the delivery log "+key,
		`SELECT body FROM hot_host_calls WHERE log_key = $1 ORDER BY seq`, key)
}

// Watch wakes on every change of the log key and on its host's revocation.
func (h *Hosts) Watch(_ context.Context, key string) (<-chan struct{}, func(), error) {
	ch, stop := h.s.hostLogs.add(key)
	return ch, stop, nil
}
