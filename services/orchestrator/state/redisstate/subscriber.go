package redisstate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// waiter is one registration on the shared subscriber: a suspended run, a
// cancel watch or an event-log follower. kick is signalled (never blocking,
// at most one pending) on every message for its channel and after every
// reconnect; the owner then re-reads Redis, so a kick never carries data that
// must not be lost.
type waiter struct {
	kick chan struct{}
	// onKick, when set, is called instead of signalling kick; it must not
	// block. Cancel watches use it so they need no goroutine while idle.
	onKick func()
}

func newWaiter() *waiter { return &waiter{kick: make(chan struct{}, 1)} }

func (w *waiter) fire() {
	if w.onKick != nil {
		w.onKick()
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// channelState is what the subscriber knows about one channel.
type channelState struct {
	waiters map[*waiter]struct{}
	// exact is true for channels subscribed by name (event logs); ready is
	// closed once Redis confirmed that subscription.
	exact bool
	ready chan struct{}
}

// subscriber owns the replica's one pub/sub connection.
type subscriber struct {
	ps      *redis.PubSub
	log     *slog.Logger
	pattern string

	mu       sync.Mutex
	channels map[string]*channelState

	cancel context.CancelFunc
	done   chan struct{}
}

// idlePing bounds how long a silent connection is trusted before it is
// pinged, so a half-open TCP connection is noticed.
const idlePing = 30 * time.Second

func startSubscriber(ctx context.Context, rdb redis.UniversalClient, opts Options) (*subscriber, error) {
	pattern := globEscape(opts.Prefix) + "n:*"
	ps := rdb.PSubscribe(ctx, pattern)
	// Waiting for the confirmation means a Wait that starts right after Open
	// cannot miss a notification published before the pattern is active.
	if _, err := ps.ReceiveTimeout(ctx, 10*time.Second); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("subscribe %s: %w", pattern, err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &subscriber{
		ps:       ps,
		log:      opts.Log.With("replica", opts.ReplicaID),
		pattern:  pattern,
		channels: make(map[string]*channelState),
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	go s.loop(runCtx)
	return s, nil
}

func (s *subscriber) close() {
	s.cancel()
	_ = s.ps.Close()
	<-s.done
}

func (s *subscriber) loop(ctx context.Context) {
	defer close(s.done)
	backoff := 50 * time.Millisecond
	down := false
	for {
		msg, err := s.ps.ReceiveTimeout(ctx, idlePing)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			var nerr net.Error
			if errors.As(err, &nerr) && nerr.Timeout() {
				// A quiet connection: ping it; a dead one fails the next receive.
				_ = s.ps.Ping(ctx)
				continue
			}
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			if !down {
				s.log.Warn("redis subscriber disconnected", "err", err)
				down = true
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Message:
			s.dispatch(m.Channel)
		case *redis.Subscription:
			switch m.Kind {
			case "psubscribe":
				// The pattern is (re)confirmed once per connection: after a
				// reconnect everybody re-checks what they wait on.
				if down {
					s.log.Info("redis subscriber reconnected")
					down = false
				}
				s.kickAll()
			case "subscribe":
				s.confirm(m.Channel)
			}
		}
	}
}

func (s *subscriber) dispatch(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs := s.channels[channel]; cs != nil {
		for w := range cs.waiters {
			w.fire()
		}
	}
}

func (s *subscriber) kickAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cs := range s.channels {
		for w := range cs.waiters {
			w.fire()
		}
	}
}

func (s *subscriber) confirm(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs := s.channels[channel]; cs != nil && cs.exact {
		select {
		case <-cs.ready:
		default:
			close(cs.ready)
		}
		// A message may have been published between the subscribe and
		// this confirmation's arrival: let the waiters look again.
		for w := range cs.waiters {
			w.fire()
		}
	}
}

// watch registers w on a channel covered by the pattern subscription. The
// registration is effective at once because the pattern is always active.
func (s *subscriber) watch(channel string, w *waiter) (unwatch func()) {
	s.mu.Lock()
	cs := s.channels[channel]
	if cs == nil {
		cs = &channelState{waiters: make(map[*waiter]struct{})}
		s.channels[channel] = cs
	}
	cs.waiters[w] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if cs := s.channels[channel]; cs != nil {
			delete(cs.waiters, w)
			if len(cs.waiters) == 0 {
				delete(s.channels, channel)
			}
		}
	}
}

// watchExact subscribes to channel by name (the first interested waiter
// sends SUBSCRIBE, the last one UNSUBSCRIBE) and waits until Redis has
// confirmed it, so nothing published afterwards is missed.
func (s *subscriber) watchExact(ctx context.Context, channel string, w *waiter) (unwatch func(), err error) {
	s.mu.Lock()
	cs := s.channels[channel]
	if cs == nil {
		cs = &channelState{waiters: make(map[*waiter]struct{}), exact: true, ready: make(chan struct{})}
		s.channels[channel] = cs
		// Sent under the lock so SUBSCRIBE and UNSUBSCRIBE of one channel
		// reach Redis in the order the map changed. A failure while Redis is
		// down is fine: the client re-subscribes every channel on reconnect.
		if err := s.ps.Subscribe(ctx, channel); err != nil {
			s.log.Debug("subscribe deferred until reconnect", "channel", channel, "err", err)
		}
	}
	cs.waiters[w] = struct{}{}
	ready := cs.ready
	s.mu.Unlock()
	unwatch = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		cs := s.channels[channel]
		if cs == nil {
			return
		}
		delete(cs.waiters, w)
		if len(cs.waiters) == 0 {
			delete(s.channels, channel)
			// The follower's context has usually ended by now: keep its
			// values (the trace) without its cancel.
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = s.ps.Unsubscribe(uctx, channel)
		}
	}
	select {
	case <-ready:
		return unwatch, nil
	case <-ctx.Done():
		unwatch()
		return nil, ctx.Err()
	}
}

// Stats describes what a replica's subscriber multiplexes.
type Stats struct {
	// Channels is the number of channels with at least one waiter.
	Channels int
	// Waiters counts suspended runs, cancel watches and event followers.
	Waiters int
}

// Stats reports the subscriber's registrations, for metrics and tests.
func (s *Store) Stats() Stats {
	s.sub.mu.Lock()
	defer s.sub.mu.Unlock()
	st := Stats{Channels: len(s.sub.channels)}
	for _, cs := range s.sub.channels {
		st.Waiters += len(cs.waiters)
	}
	return st
}
