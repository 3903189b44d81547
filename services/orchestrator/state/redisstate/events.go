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
// client's Last-Event-ID is directly a stream position. Finish appends one
// entry with the end field and an automatic id, which sorts after every seq.
const (
	fieldChunk = "c"
	fieldEnd   = "end"
	// followBatch is how many entries one XRANGE reads.
	followBatch = 256
)

// appendLua adds chunks at their seqs, unless the log already holds one
// there: the same bytes are a retried append whose first try landed and
// whose answer was lost, so it is success; other bytes are a conflict.
// Checking and adding in one script means a retry can never be refused by
// its own first try, and every chunk is checked before any is added, so a
// refused append adds none. Only an id at or before the log's last can be a
// retry, so chunks that go on the end cost no lookup of their own ids.
// KEYS: log. ARGV: max length, ttl ms, channel, then id and chunk of each.
const appendLua = `
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local last, finished = -1, false
if #top > 0 then
  last = tonumber(string.match(top[1][1], '^(%d+)'))
  finished = top[1][2][1] == 'end'
end
local first = 4
for i = 4, #ARGV, 2 do
  if tonumber(string.match(ARGV[i], '^(%d+)')) > last then break end
  local got = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])
  if #got == 0 then
    if finished then return 'finished' end
    return 'order'
  end
  local f = got[1][2]
  if f[1] ~= 'c' or f[2] ~= ARGV[i+1] then return 'conflict' end
  first = i + 2
end
if first > #ARGV then return 'same' end
if finished then return 'finished' end
local prev = last
for i = first, #ARGV, 2 do
  local seq = tonumber(string.match(ARGV[i], '^(%d+)'))
  if seq <= prev then return 'increase' end
  prev = seq
end
for i = first, #ARGV, 2 do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], ARGV[i], 'c', ARGV[i+1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], '')
return 'ok'
`

// finishLua appends the end marker once; finishing again changes nothing.
// KEYS: log. ARGV: max length, ttl ms, channel.
const finishLua = `
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #top > 0 and top[1][2][1] == 'end' then return 'same' end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'end', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], '')
return 'ok'
`

// Append adds chunks in one script, trims the log and renews its TTL, then
// tells followers (on any replica) to read.
func (s *Store) Append(ctx context.Context, runID string, cs ...*agentv1.StreamChunk) error {
	if len(cs) == 0 {
		return nil
	}
	keys, args, err := s.appendArgs(runID, cs)
	if err != nil {
		return err
	}
	res, err := s.appends.do(ctx, keys, args...)
	return appended(runID, cs, res, err)
}

// appendArgs are appendLua's keys and arguments for cs.
func (s *Store) appendArgs(runID string, cs []*agentv1.StreamChunk) ([]string, []any, error) {
	args := make([]any, 0, 3+2*len(cs))
	args = append(args, s.opts.EventMaxLen, s.opts.EventTTL.Milliseconds(), eventsChannel(s.opts.Prefix, runID))
	for _, c := range cs {
		if c.GetSeq() <= 0 {
			return nil, nil, fmt.Errorf("append to run %s: seq must be at least 1, got %d", runID, c.GetSeq())
		}
		// Deterministic, so a retry of the same chunk has the same bytes.
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
		if err != nil {
			return nil, nil, fmt.Errorf("encode chunk: %w", err)
		}
		args = append(args, strconv.FormatInt(c.GetSeq(), 10)+"-0", b)
	}
	return []string{s.eventsKey(runID)}, args, nil
}

// appended reads appendLua's answer for cs.
func appended(runID string, cs []*agentv1.StreamChunk, res string, err error) error {
	seqs := seqRange(cs)
	if err != nil {
		return fmt.Errorf("append to run %s at seq %s: %w", runID, seqs, err)
	}
	switch res {
	case "ok", "same":
		return nil
	case "conflict":
		return fmt.Errorf("append to run %s at seq %s: %w", runID, seqs, state.ErrEventConflict)
	case "finished":
		return fmt.Errorf("append to run %s at seq %s: its event log is finished", runID, seqs)
	case "increase":
		return fmt.Errorf("append to run %s at seq %s: the seqs of one append must increase", runID, seqs)
	case "order":
		return fmt.Errorf("append to run %s at seq %s: the log already goes further, and holds nothing at that seq", runID, seqs)
	}
	return fmt.Errorf("append to run %s: unexpected script reply %q", runID, res)
}

// seqRange names the seqs of cs: "7", or "7-9".
func seqRange(cs []*agentv1.StreamChunk) string {
	first, last := cs[0].GetSeq(), cs[len(cs)-1].GetSeq()
	if first == last {
		return strconv.FormatInt(first, 10)
	}
	return strconv.FormatInt(first, 10) + "-" + strconv.FormatInt(last, 10)
}

// Finish appends the end marker, once.
func (s *Store) Finish(ctx context.Context, runID string) error {
	err := s.scripts.finish.Run(ctx, s.rdb, []string{s.eventsKey(runID)},
		s.opts.EventMaxLen, s.opts.EventTTL.Milliseconds(), eventsChannel(s.opts.Prefix, runID)).Err()
	if err != nil {
		return fmt.Errorf("finish the log of run %s: %w", runID, err)
	}
	return nil
}

// Follow replays the log after afterSeq and then follows it live. Followers
// do not hold a connection while they wait: they subscribe to the run's
// channel on the replica's shared subscriber and read with XRANGE when
// kicked, so a thousand rejoined browsers cost a thousand map entries rather
// than a thousand blocked XREADs exhausting the pool.
func (s *Store) Follow(ctx context.Context, runID string, afterSeq int64, fn func([]*agentv1.StreamChunk) error) error {
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
		// What one XRANGE read goes to fn together; the end marker ends
		// the follow after the chunks before it.
		batch := make([]*agentv1.StreamChunk, 0, len(entries))
		end := false
		for _, e := range entries {
			if _, ok := e.Values[fieldEnd]; ok {
				end = true
				break
			}
			raw, _ := e.Values[fieldChunk].(string)
			c := &agentv1.StreamChunk{}
			if err := proto.Unmarshal([]byte(raw), c); err != nil {
				return fmt.Errorf("decode chunk %s of run %s: %w", e.ID, runID, err)
			}
			batch = append(batch, c)
			start = "(" + e.ID
		}
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
		}
		if end {
			return nil
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
	return lastSeqOf(runID, s.readLastSeq(ctx, s.rdb, runID))
}

// readLastSeq reads the log's last two entries: the end marker and the last
// chunk before it.
func (s *Store) readLastSeq(ctx context.Context, c redis.Cmdable, runID string) *redis.XMessageSliceCmd {
	return c.XRevRangeN(ctx, s.eventsKey(runID), "+", "-", 2)
}

func lastSeqOf(runID string, cmd *redis.XMessageSliceCmd) (int64, bool, error) {
	entries, err := cmd.Result()
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
