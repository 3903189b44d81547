package redisstate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cancel records the request (so a watch started later still sees it) and
// then announces it.
func (s *Store) Cancel(ctx context.Context, runID string) error {
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.cancelKey(runID), "1", s.opts.SignalTTL)
		p.Publish(ctx, cancelChannel(s.opts.Prefix, runID), "cancel")
		return nil
	}); err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	return nil
}

// Cancelled watches for a cancel of runID. An idle watch is a map entry
// only: a kick (a cancel message, or a reconnect) starts one short check of
// the cancel key, which closes done when the key is there.
func (s *Store) Cancelled(ctx context.Context, runID string) (<-chan struct{}, func(), error) {
	c := s.watchCancel(ctx, runID)
	if err := c.checked(s.rdb.Exists(ctx, s.cancelKey(runID))); err != nil {
		return nil, nil, err
	}
	return c.done, c.stop, nil
}

// watchCancel starts a watch, which then needs one check of the cancel
// key: a cancel that came before the watch is seen by that check, one
// after it by the watch.
func (s *Store) watchCancel(ctx context.Context, runID string) *cancelWatch {
	c := &cancelWatch{s: s, runID: runID, ctx: context.WithoutCancel(ctx), done: make(chan struct{})}
	w := &waiter{onKick: c.kick}
	c.unwatch = s.sub.watch(cancelChannel(s.opts.Prefix, runID), w)
	return c
}

// checked takes the answer of the watch's first check of the cancel key;
// when it failed, the watch is stopped.
func (c *cancelWatch) checked(exists *redis.IntCmd) error {
	n, err := exists.Result()
	if err != nil {
		c.unwatch()
		return fmt.Errorf("watch cancel of %s: %w", c.runID, err)
	}
	if n > 0 {
		c.fire()
	}
	return nil
}

// cancelWatch is one Cancelled registration.
type cancelWatch struct {
	s       *Store
	runID   string
	ctx     context.Context
	unwatch func()

	mu       sync.Mutex
	checking bool
	again    bool
	closed   bool
	stopped  bool
	done     chan struct{}
}

func (c *cancelWatch) kick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.stopped {
		return
	}
	if c.checking {
		c.again = true
		return
	}
	c.checking = true
	go c.check()
}

// check reads the cancel key until a read succeeds with no kick in between;
// while Redis is unreachable it retries with backoff.
func (c *cancelWatch) check() {
	retry := newRetry()
	for {
		cctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		n, err := c.s.rdb.Exists(cctx, c.s.cancelKey(c.runID)).Result()
		cancel()
		if err == nil && n > 0 {
			c.fire()
		}
		c.mu.Lock()
		if c.closed || c.stopped || (err == nil && !c.again) {
			c.checking = false
			c.mu.Unlock()
			return
		}
		c.again = false
		c.mu.Unlock()
		if err != nil {
			<-retry.next()
		}
	}
}

func (c *cancelWatch) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.done)
	}
}

func (c *cancelWatch) stop() {
	c.mu.Lock()
	first := !c.stopped
	c.stopped = true
	c.mu.Unlock()
	if first {
		c.unwatch()
	}
}
