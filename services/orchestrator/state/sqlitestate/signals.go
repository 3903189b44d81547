package sqlitestate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// cancelWatches are the in-process watches of cancel signals: a cancel
// closes its run's watch after its row is committed, and a new watch checks
// the row after registering, so no cancel falls between the two.
type cancelWatches struct {
	mu      sync.Mutex
	watches map[string]*cancelWatch
}

type cancelWatch struct {
	ch       chan struct{}
	closed   bool
	watchers int
}

// fire closes the run's watch, if someone watches it.
func (c *cancelWatches) fire(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.watches[runID]; ok && !w.closed {
		w.closed = true
		close(w.ch)
	}
}

// Cancel records the request and wakes the run's watches.
func (s *Store) Cancel(ctx context.Context, runID string) error {
	err := s.write(ctx, func(tx *sql.Tx, now int64) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO hot_signals (run_id, expires) VALUES ($1, $2) ON CONFLICT (run_id) DO NOTHING`,
			runID, now+s.opts.SignalTTL.Nanoseconds())
		return err
	})
	if err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	s.cancels.fire(runID)
	return nil
}

// Cancelled returns a channel closed when runID is cancelled, also by a
// cancel recorded before the call (or before a restart).
func (s *Store) Cancelled(ctx context.Context, runID string) (<-chan struct{}, func(), error) {
	c := &s.cancels
	c.mu.Lock()
	w, ok := c.watches[runID]
	if !ok {
		w = &cancelWatch{ch: make(chan struct{})}
		c.watches[runID] = w
	}
	w.watchers++
	c.mu.Unlock()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			w.watchers--
			if w.watchers == 0 && c.watches[runID] == w {
				delete(c.watches, runID)
			}
		})
	}
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM hot_signals WHERE run_id = $1 AND expires > $2`, runID, s.now()).Scan(&n)
	switch {
	case err == nil:
		c.fire(runID)
	case !errors.Is(err, sql.ErrNoRows):
		stop()
		return nil, nil, fmt.Errorf("read the cancel signal of run %s: %w", runID, err)
	}
	return w.ch, stop, nil
}
