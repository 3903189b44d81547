package runner

// This file fans a run's chunks out in memory to the followers on the
// replica whose worker writes them.

import (
	"context"
	"errors"
	"sync"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// maxLocalTail is how many of a run's latest chunks a replica keeps in
// memory for its own followers; one that falls further behind reads the
// store's log instead.
const maxLocalTail = 1024

// errFollowLocal stops a follower reading the store's log once the chunks it
// waits for are in this replica's memory.
const errFollowLocal = state.Error("the run's next chunks are in this replica's memory")

// LocalLogs are the logs this replica's workers are writing now. A chunk
// gets here only after the store accepted it, so a follower served from
// memory sees exactly what one reading the store sees, without each
// follower reading each chunk back from the store.
type LocalLogs struct {
	mu   sync.Mutex
	runs map[string]*localLog
}

// localLog is the tail of one run's log as one worker wrote it.
type localLog struct {
	mu sync.Mutex
	// first is the seq of chunks[0]; zero until the first chunk.
	first  int64
	chunks []*agentv1.StreamChunk
	// finished says the log is complete; detached that its writer let the
	// run go, so what comes next is only in the store.
	finished, detached bool
	// changed is closed, and replaced, on every change.
	changed chan struct{}
}

func NewLocalLogs() *LocalLogs { return &LocalLogs{runs: map[string]*localLog{}} }

// open starts the tail of a worker that took runID on; a tail left by an
// earlier worker is detached.
func (ls *LocalLogs) open(runID string) *localLog {
	l := &localLog{changed: make(chan struct{})}
	ls.mu.Lock()
	old := ls.runs[runID]
	ls.runs[runID] = l
	ls.mu.Unlock()
	if old != nil {
		old.detach()
	}
	return l
}

// close detaches l, the worker's tail, and forgets it; a later worker's
// tail stays.
func (ls *LocalLogs) close(runID string, l *localLog) {
	ls.mu.Lock()
	if ls.runs[runID] == l {
		delete(ls.runs, runID)
	}
	ls.mu.Unlock()
	l.detach()
}

func (ls *LocalLogs) get(runID string) *localLog {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.runs[runID]
}

// covers says whether a follower that has seen up to last can read what
// comes next from l.
func (l *localLog) covers(last int64) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.detached && l.first > 0 && l.first <= last+1
}

// add keeps c, which the store has accepted and nobody changes any more. A
// chunk that does not follow the last starts the tail afresh.
// The chunks a follower was handed are never overwritten: a new tail, or a
// trimmed one, is a new slice, and append only writes past their end.
func (l *localLog) add(c *agentv1.StreamChunk) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first == 0 || c.GetSeq() != l.first+int64(len(l.chunks)) {
		l.first, l.chunks = c.GetSeq(), nil
	}
	if len(l.chunks) >= maxLocalTail {
		l.chunks = append(make([]*agentv1.StreamChunk, 0, maxLocalTail), l.chunks[maxLocalTail/2:]...)
		l.first += int64(maxLocalTail / 2)
	}
	l.chunks = append(l.chunks, c)
	l.notify()
}

func (l *localLog) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.finished = true
	l.notify()
}

func (l *localLog) detach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.detached = true
	l.notify()
}

// notify wakes the followers; l.mu is held.
func (l *localLog) notify() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// serve passes fn the chunks after *last from memory until the log is
// finished (true), or until memory no longer has what comes next (false):
// the writer let the run go, or the follower fell behind the tail. Each
// call of fn gets every chunk that was waiting, in seq order, and nothing
// waits for more: a lone chunk goes alone.
func (l *localLog) serve(ctx context.Context, last *int64, fn func([]*agentv1.StreamChunk) error) (bool, error) {
	for {
		l.mu.Lock()
		if l.first == 0 || *last+1 < l.first {
			l.mu.Unlock()
			return false, nil
		}
		next := l.chunks[min(int(*last+1-l.first), len(l.chunks)):]
		finished, detached, changed := l.finished, l.detached, l.changed
		l.mu.Unlock()
		if len(next) > 0 {
			if err := fn(next); err != nil {
				return false, err
			}
			*last = next[len(next)-1].GetSeq()
		}
		switch {
		case len(next) > 0:
			continue
		case finished:
			return true, nil
		case detached:
			return false, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// Follow passes fn the run's chunks after afterSeq until its log ends:
// from this replica's memory while one of its workers writes the run, from
// the store otherwise, moving between the two at a chunk's boundary.
//
// A follower that moves from memory to the store waits out a store outage
// there, as one that was reading the store all along does inside Follow:
// the worker lets a run go precisely when the store is in trouble (its
// lease lapsed, say), and ending the stream then would send the client to
// rejoin through a store that is away.
func (ls *LocalLogs) Follow(ctx context.Context, store state.Store, runID string, afterSeq int64, fn func(*agentv1.StreamChunk) error) error {
	return ls.FollowBatches(ctx, store, runID, afterSeq, state.EachChunk(fn))
}

// FollowBatches is Follow with the chunks that were waiting together in
// this replica's memory, or that one read of the store's log returned,
// passed to fn at once, in seq order. The slices fn gets are the log's: fn
// reads them and keeps nothing it would change.
func (ls *LocalLogs) FollowBatches(ctx context.Context, store state.Store, runID string, afterSeq int64, fn func([]*agentv1.StreamChunk) error) error {
	last := afterSeq
	moved := false
	for {
		if l := ls.get(runID); l.covers(last) {
			done, err := l.serve(ctx, &last, fn)
			if done || err != nil {
				return err
			}
			moved = true
		}
		follow := func(ctx context.Context) error {
			return store.Follow(ctx, runID, last, func(cs []*agentv1.StreamChunk) error {
				if err := fn(cs); err != nil {
					return err
				}
				last = cs[len(cs)-1].GetSeq()
				if ls.get(runID).covers(last) {
					return errFollowLocal
				}
				return nil
			})
		}
		var err error
		if moved {
			err = state.Retry(ctx, follow)
		} else {
			err = follow(ctx)
		}
		if !errors.Is(err, errFollowLocal) {
			return err
		}
		moved = true
	}
}
