package sqlitestate

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// Group commit: the appends that wait while one transaction commits are
// committed together in the next, so a chunk costs its statements but not a
// transaction and a WAL sync of its own. Each caller still returns only once
// its chunk is committed (or refused, or failed, as alone). Nothing waits
// for a batch to fill: a batch is whatever queued during the last commit.
// There is no goroutine of its own: the first caller to find the queue idle
// commits one batch, then hands the queue to a caller still waiting.

// maxAppendBatch bounds one transaction.
const maxAppendBatch = 128

// appendReq is one append of a run's chunks, and then its answer.
type appendReq struct {
	runID  string
	chunks []encodedChunk
	err    error
	// done is closed once err is the answer; lead, when the request is to
	// commit the next batch.
	done, lead chan struct{}
}

type appendQueue struct {
	mu      sync.Mutex
	pending []*appendReq
	busy    bool
}

// append queues r and returns its answer. A caller never leaves while its
// chunk is queued: it may be handed the next batch to commit. The commit is
// this process's own, under the store's lock, so ctx is not needed to bound
// it.
func (q *appendQueue) append(ctx context.Context, s *Store, r *appendReq) error {
	r.done, r.lead = make(chan struct{}), make(chan struct{})
	q.mu.Lock()
	q.pending = append(q.pending, r)
	lead := !q.busy
	q.busy = true
	q.mu.Unlock()
	if !lead {
		select {
		case <-r.done:
			return r.err
		case <-r.lead:
		}
	}
	q.mu.Lock()
	n := min(len(q.pending), maxAppendBatch)
	batch := q.pending[:n:n]
	q.pending = q.pending[n:]
	q.mu.Unlock()
	s.commitAppends(context.WithoutCancel(ctx), batch)
	q.mu.Lock()
	if len(q.pending) > 0 {
		close(q.pending[0].lead)
	} else {
		q.busy = false
		q.pending = nil
	}
	q.mu.Unlock()
	<-r.done
	return r.err
}

// appendStmts are an append's statements, prepared once per transaction.
type appendStmts struct {
	liveLog, clear, body, insert, header *sql.Stmt
}

func prepareAppend(ctx context.Context, tx *sql.Tx) (*appendStmts, error) {
	var st appendStmts
	for _, p := range []struct {
		to  **sql.Stmt
		sql string
	}{
		{&st.liveLog, `SELECT last_seq, finished FROM hot_event_logs WHERE run_id = $1 AND expires > $2`},
		{&st.clear, `DELETE FROM hot_events WHERE run_id = $1`},
		{&st.body, `SELECT body FROM hot_events WHERE run_id = $1 AND seq = $2`},
		{&st.insert, `INSERT INTO hot_events (run_id, seq, body) VALUES ($1, $2, $3)`},
		{&st.header, `INSERT INTO hot_event_logs (run_id, last_seq, finished, expires) VALUES ($1, $2, 0, $3)
			ON CONFLICT (run_id) DO UPDATE SET last_seq = excluded.last_seq, finished = 0, expires = excluded.expires`},
	} {
		stmt, err := tx.PrepareContext(ctx, p.sql)
		if err != nil {
			return nil, fmt.Errorf("prepare an append: %w", err)
		}
		*p.to = stmt
	}
	return &st, nil
}

// commitAppends commits batch in one transaction and answers each request.
// When the database fails it (not one chunk's refusal), each chunk is tried
// in a transaction of its own, so no chunk is failed by another.
func (s *Store) commitAppends(ctx context.Context, batch []*appendReq) {
	run := func(batch []*appendReq) error {
		return s.write(ctx, func(tx *sql.Tx, now int64) error {
			st, err := prepareAppend(ctx, tx)
			if err != nil {
				return err
			}
			for _, r := range batch {
				refused, failed := s.appendIn(ctx, st, now, r)
				if failed != nil {
					return failed
				}
				r.err = refused
			}
			return nil
		})
	}
	if err := run(batch); err != nil {
		for _, r := range batch {
			r.err = nil
			if len(batch) == 1 {
				r.err = err
			} else if one := run([]*appendReq{r}); one != nil {
				r.err = one
			}
		}
	}
	for _, r := range batch {
		if r.err == nil {
			s.events.notify(r.runID)
		}
		close(r.done)
	}
}
