package sqlitestate

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/telemetry"
	"nexus.local/services/orchestrator/state"
)

// logRow is a run's event log header.
type logRow struct {
	lastSeq  int64
	finished bool
}

// liveLog reads the run's log header if the log exists and has not expired.
func liveLog(ctx context.Context, q querier, runID string, now int64) (logRow, bool, error) {
	var l logRow
	err := q.QueryRowContext(ctx, `SELECT last_seq, finished FROM hot_event_logs WHERE run_id = $1 AND expires > $2`, runID, now).Scan(&l.lastSeq, &l.finished)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	if err != nil {
		return l, false, fmt.Errorf("read the event log of run %s: %w", runID, err)
	}
	return l, true, nil
}

// encodedChunk is a chunk's seq and its bytes.
type encodedChunk struct {
	seq  int64
	body []byte
}

// Append adds chunks and renews the log's retention, then wakes its
// followers. It returns once the chunks are committed; the appends that
// wait at the same moment are committed together (appendbatch.go).
func (s *Store) Append(ctx context.Context, runID string, cs ...*agentv1.StreamChunk) error {
	if len(cs) == 0 {
		return nil
	}
	r := &appendReq{runID: runID, chunks: make([]encodedChunk, len(cs))}
	for i, c := range cs {
		if c.GetSeq() <= 0 {
			return fmt.Errorf("append to run %s: seq must be at least 1, got %d", runID, c.GetSeq())
		}
		// Deterministic, so a retry of the same chunk has the same bytes.
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
		if err != nil {
			return fmt.Errorf("encode chunk: %w", err)
		}
		r.chunks[i] = encodedChunk{seq: c.GetSeq(), body: b}
	}
	// A sampled request's append: its wait in the queue and for its
	// batch's commit.
	if span := telemetry.SampledSpan(ctx, s.opts.Tracer, "sqlite append, batched"); span != nil {
		defer span.End()
	}
	return s.appends.append(ctx, s, r)
}

// appendIn adds one append's chunks in tx. Every chunk is checked before
// any is written, so a refusal (a conflict, a finished log, a seq out of
// order) writes nothing; a database failure is failed, and ends the
// transaction.
func (s *Store) appendIn(ctx context.Context, st *appendStmts, now int64, r *appendReq) (refused, failed error) {
	runID := r.runID
	var l logRow
	ok := true
	err := st.liveLog.QueryRowContext(ctx, runID, now).Scan(&l.lastSeq, &l.finished)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		ok = false
	case err != nil:
		return nil, fmt.Errorf("read the event log of run %s: %w", runID, err)
	}
	if !ok {
		// A new log, or one that expired: nothing of the old one is kept.
		if _, err := st.clear.ExecContext(ctx, runID); err != nil {
			return nil, err
		}
	}
	// The header and the chunks change in one transaction, so no chunk lies
	// past the header's last seq: only a seq at or before it can be a retry.
	fresh := r.chunks
	for ok && len(fresh) > 0 && fresh[0].seq <= l.lastSeq {
		seq := fresh[0].seq
		var old []byte
		err = st.body.QueryRowContext(ctx, runID, seq).Scan(&old)
		switch {
		case err == nil && bytes.Equal(old, fresh[0].body):
			fresh = fresh[1:]
			continue
		case err == nil:
			return fmt.Errorf("append to run %s at seq %d: %w", runID, seq, state.ErrEventConflict), nil
		case !errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("append to run %s: %w", runID, err)
		case l.finished:
			return fmt.Errorf("append to run %s at seq %d: its event log is finished", runID, seq), nil
		}
		return fmt.Errorf("append to run %s at seq %d: the log already goes further, and holds nothing at that seq", runID, seq), nil
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	if l.finished {
		return fmt.Errorf("append to run %s at seq %d: its event log is finished", runID, fresh[0].seq), nil
	}
	last := l.lastSeq
	for _, c := range fresh {
		if c.seq <= last {
			return fmt.Errorf("append to run %s at seq %d: seq does not increase", runID, c.seq), nil
		}
		last = c.seq
	}
	for _, c := range fresh {
		if _, err := st.insert.ExecContext(ctx, runID, c.seq, c.body); err != nil {
			return nil, fmt.Errorf("append to run %s: %w", runID, err)
		}
	}
	if _, err := st.header.ExecContext(ctx, runID, last, now+s.opts.EventTTL.Nanoseconds()); err != nil {
		return nil, fmt.Errorf("append to run %s: %w", runID, err)
	}
	return nil, nil
}

// Finish marks the log complete, once, and wakes its followers.
func (s *Store) Finish(ctx context.Context, runID string) error {
	err := s.write(ctx, func(tx *sql.Tx, now int64) error {
		l, ok, err := liveLog(ctx, tx, runID, now)
		if err != nil || (ok && l.finished) {
			return err
		}
		if !ok {
			if _, err := tx.ExecContext(ctx, `DELETE FROM hot_events WHERE run_id = $1`, runID); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO hot_event_logs (run_id, last_seq, finished, expires) VALUES ($1, $2, 1, $3)`,
			runID, l.lastSeq, now+s.opts.EventTTL.Nanoseconds())
		return err
	})
	if err != nil {
		return fmt.Errorf("finish the log of run %s: %w", runID, err)
	}
	s.events.notify(runID)
	return nil
}

// LastSeq returns the seq of the run's last chunk and whether its log is
// finished.
func (s *Store) LastSeq(ctx context.Context, runID string) (int64, bool, error) {
	l, _, err := liveLog(ctx, s.db, runID, s.now())
	return l.lastSeq, l.finished, err
}

// Follow replays the log after afterSeq, then follows it until it finishes.
// It reads the header before the chunks: a log seen finished holds every
// chunk it will ever hold.
func (s *Store) Follow(ctx context.Context, runID string, afterSeq int64, fn func([]*agentv1.StreamChunk) error) error {
	last := afterSeq
	for {
		changed := s.events.wait(runID)
		l, ok, err := liveLog(ctx, s.db, runID, s.now())
		if err != nil {
			return err
		}
		if !ok {
			return state.ErrNotFound
		}
		chunks, err := s.chunksAfter(ctx, runID, last)
		if err != nil {
			return err
		}
		if len(chunks) > 0 {
			if err := fn(chunks); err != nil {
				return err
			}
			last = chunks[len(chunks)-1].GetSeq()
		}
		if l.finished {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Store) chunksAfter(ctx context.Context, runID string, after int64) ([]*agentv1.StreamChunk, error) {
	return protoRows(ctx, s.db, func() *agentv1.StreamChunk { return &agentv1.StreamChunk{} }, "read the event log of run "+runID,
		`SELECT body FROM hot_events WHERE run_id = $1 AND seq > $2 ORDER BY seq`, runID, after)
}
