package redisstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// Each run's log is a Redis Stream whose entry ids are "<seq>-0", so a
// client's Last-Event-ID is directly a stream position and a chunk appended
// twice or out of order is refused by Redis itself. Finish appends one entry
// with the end field and an automatic id, which sorts after every seq.
const (
	fieldChunk = "c"
	fieldEnd   = "end"
	// followBatch is how many entries one XRANGE reads.
	followBatch = 256
)

// Append adds a chunk, trims the log and renews its TTL, then tells
// followers (on any replica) to read.
func (s *Store) Append(ctx context.Context, runID string, c *agentv1.StreamChunk) error {
	if c.GetSeq() <= 0 {
		return fmt.Errorf("append to run %s: seq must be at least 1, got %d", runID, c.GetSeq())
	}
	b, err := proto.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode chunk: %w", err)
	}
	return s.addEntry(ctx, runID, strconv.FormatInt(c.GetSeq(), 10)+"-0", fieldChunk, b)
}

// Finish appends the end marker.
func (s *Store) Finish(ctx context.Context, runID string) error {
	return s.addEntry(ctx, runID, "*", fieldEnd, "1")
}

func (s *Store) addEntry(ctx context.Context, runID, id, field string, value any) error {
	key := s.eventsKey(runID)
	var add *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		add = p.XAdd(ctx, &redis.XAddArgs{
			Stream: key,
			MaxLen: s.opts.EventMaxLen,
			Approx: true,
			ID:     id,
			Values: []any{field, value},
		})
		p.PExpire(ctx, key, s.opts.EventTTL)
		p.Publish(ctx, eventsChannel(s.opts.Prefix, runID), "")
		return nil
	})
	if add != nil && add.Err() != nil {
		return fmt.Errorf("append to run %s at %s: %w", runID, id, add.Err())
	}
	if err != nil {
		return fmt.Errorf("append to run %s: %w", runID, err)
	}
	return nil
}

// Follow replays the log after afterSeq and then follows it live. Followers
// do not hold a connection while they wait: they subscribe to the run's
// channel on the replica's shared subscriber and read with XRANGE when
// kicked, so a thousand rejoined browsers cost a thousand map entries rather
// than a thousand blocked XREADs exhausting the pool.
func (s *Store) Follow(ctx context.Context, runID string, afterSeq int64, fn func(*agentv1.StreamChunk) error) error {
	key := s.eventsKey(runID)
	n, err := s.rdb.Exists(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("follow run %s: %w", runID, err)
	}
	if n == 0 {
		return state.ErrNotFound
	}
	w := newWaiter()
	unwatch, err := s.sub.watchExact(ctx, eventsChannel(s.opts.Prefix, runID), w)
	if err != nil {
		return err
	}
	defer unwatch()

	start := "-"
	if afterSeq > 0 {
		start = "(" + strconv.FormatInt(afterSeq, 10) + "-0"
	}
	retry := newRetry()
	for {
		entries, err := s.rdb.XRangeN(ctx, key, start, "+", followBatch).Result()
		if err != nil {
			if !isRedisDown(err) {
				return fmt.Errorf("follow run %s: %w", runID, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-w.kick:
			case <-retry.next():
			}
			continue
		}
		retry.reset()
		for _, e := range entries {
			if _, ok := e.Values[fieldEnd]; ok {
				return nil
			}
			raw, _ := e.Values[fieldChunk].(string)
			c := &agentv1.StreamChunk{}
			if err := proto.Unmarshal([]byte(raw), c); err != nil {
				return fmt.Errorf("decode chunk %s of run %s: %w", e.ID, runID, err)
			}
			if err := fn(c); err != nil {
				return err
			}
			start = "(" + e.ID
		}
		if len(entries) == followBatch {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.kick:
		}
	}
}

// LastSeq returns the seq of the last chunk in the run's log and whether the
// log is finished. Unknown runs give (0, false, nil).
func (s *Store) LastSeq(ctx context.Context, runID string) (int64, bool, error) {
	entries, err := s.rdb.XRevRangeN(ctx, s.eventsKey(runID), "+", "-", 2).Result()
	if err != nil {
		return 0, false, fmt.Errorf("read last event of %s: %w", runID, err)
	}
	finished := false
	if len(entries) > 0 {
		if _, ok := entries[0].Values[fieldEnd]; ok {
			finished = true
			entries = entries[1:]
		}
	}
	if len(entries) == 0 {
		return 0, finished, nil
	}
	seq, _, err := parseID(entries[0].ID)
	if err != nil {
		return 0, false, fmt.Errorf("read last event of %s: %w", runID, err)
	}
	return seq, finished, nil
}

func parseID(id string) (ms int64, n int64, err error) {
	for i := range len(id) {
		if id[i] == '-' {
			ms, err1 := strconv.ParseInt(id[:i], 10, 64)
			n, err2 := strconv.ParseInt(id[i+1:], 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return 0, 0, fmt.Errorf("stream id %q: %w", id, err)
			}
			return ms, n, nil
		}
	}
	return 0, 0, fmt.Errorf("stream id %q has no dash", id)
}
