package redisstate

// This file holds the outbox of outcome records: per session a hash of
// record bodies, a hash of the results they were decided with and a list of
// their ids in order, all in the session's slot; and one sorted set of the
// sessions that have records (session -> when the last one was put), which
// the replicas' drainers read.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// decideRecordLua is decideLua that also puts the outbox record, with the
// result it returns, in the same step. KEYS: mailbox, decided, bodies,
// results, order. ARGV: call, decided ttl in ms, record id, record body.
const decideRecordLua = `
local res
if redis.call('HGET', KEYS[1], 'call') ~= ARGV[1] then
  res = {'gone'}
else
  redis.call('HSET', KEYS[1], 'decided', '1')
  local v = redis.call('HMGET', KEYS[1], 'token', 'digest', 'result', 'trace')
  redis.call('HSET', KEYS[2], ARGV[1], v[1] .. '\n' .. (v[2] or 'none'))
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  if not v[3] then res = {'none'} else res = {'ok', v[3], v[4] or ''} end
end
if redis.call('HSETNX', KEYS[3], ARGV[3], ARGV[4]) == 1 then
  if res[1] == 'ok' then redis.call('HSET', KEYS[4], ARGV[3], res[2]) end
  redis.call('RPUSH', KEYS[5], ARGV[3])
end
return res
`

// putOutboxLua puts records whose id is new. KEYS: bodies, results, order.
// ARGV: id, body, result (” for none), and so on.
const putOutboxLua = `
for i = 1, #ARGV, 3 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i+1]) == 1 then
    if ARGV[i+2] ~= '' then redis.call('HSET', KEYS[2], ARGV[i], ARGV[i+2]) end
    redis.call('RPUSH', KEYS[3], ARGV[i])
  end
end
return 1
`

// listOutboxLua returns up to ARGV[1] records: id, body, result (” for
// none), and so on. KEYS: bodies, results, order.
const listOutboxLua = `
local ids = redis.call('LRANGE', KEYS[3], 0, tonumber(ARGV[1]) - 1)
local out = {}
for _, id in ipairs(ids) do
  local b = redis.call('HGET', KEYS[1], id)
  if b then
    table.insert(out, id)
    table.insert(out, b)
    table.insert(out, redis.call('HGET', KEYS[2], id) or '')
  else
    redis.call('LREM', KEYS[3], 0, id)
  end
end
return out
`

// doneOutboxLua removes records. KEYS: bodies, results, order. ARGV: ids.
const doneOutboxLua = `
for _, id in ipairs(ARGV) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('LREM', KEYS[3], 0, id)
end
return 1
`

// unindexLua forgets a session that had no records when it was read, unless
// one was put since. KEYS: index. ARGV: session, score read.
const unindexLua = `
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if cur and tonumber(cur) <= tonumber(ARGV[2]) then redis.call('ZREM', KEYS[1], ARGV[1]) end
return 1
`

type outboxScripts struct{ decide, put, list, done, unindex *redis.Script }

func newOutboxScripts() outboxScripts {
	return outboxScripts{
		decide: redis.NewScript(decideRecordLua), put: redis.NewScript(putOutboxLua), list: redis.NewScript(listOutboxLua),
		done: redis.NewScript(doneOutboxLua), unindex: redis.NewScript(unindexLua),
	}
}

func (s *Store) outboxKeys(sessionID string) []string {
	return []string{s.opts.Prefix + "ob:{" + sessionID + "}", s.opts.Prefix + "obr:{" + sessionID + "}", s.opts.Prefix + "obl:{" + sessionID + "}"}
}

func (s *Store) outboxIndexKey() string { return s.opts.Prefix + "{outbox}" }

// index names the session in the drainers' index. It goes in the same
// pipeline as the record, before it: an index entry without a record is
// dropped by the next drainer that reads it.
func (s *Store) index(ctx context.Context, p redis.Pipeliner, sessionID string) {
	p.ZAdd(ctx, s.outboxIndexKey(), redis.Z{Score: float64(time.Now().UnixMilli()), Member: sessionID})
}

// DecideRecord decides callID and puts rec in one script.
func (s *Store) DecideRecord(ctx context.Context, sessionID, callID string, rec state.OutboxRecord) (state.Delivery, bool, error) {
	keys, args := s.decideRecordArgs(sessionID, callID, rec)
	var cmd *redis.Cmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		s.index(ctx, p, sessionID)
		cmd = s.outbox.decide.EvalSha(ctx, p, keys, args...)
		return nil
	}); err != nil && !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return state.Delivery{}, false, fmt.Errorf("decide tool call %s of %s: %w", callID, sessionID, err)
	}
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = s.outbox.decide.Run(ctx, s.rdb, keys, args...)
	}
	return decidedBy(sessionID, callID, cmd)
}

// decideRecordArgs are decideRecordLua's keys and arguments.
func (s *Store) decideRecordArgs(sessionID, callID string, rec state.OutboxRecord) ([]string, []any) {
	keys := append([]string{s.mailboxKey(sessionID), s.decidedKey(sessionID)}, s.outboxKeys(sessionID)...)
	return keys, []any{callID, s.decidedTTL().Milliseconds(), rec.ID, rec.Body}
}

// decidedBy reads a decide script's answer.
func decidedBy(sessionID, callID string, cmd *redis.Cmd) (state.Delivery, bool, error) {
	vals, err := cmd.Slice()
	if err != nil {
		return state.Delivery{}, false, fmt.Errorf("decide tool call %s of %s: %w", callID, sessionID, err)
	}
	return decided(callID, vals)
}

// PutOutbox adds records, each session's in one script.
func (s *Store) PutOutbox(ctx context.Context, recs ...state.OutboxRecord) error {
	bySession := map[string][]any{}
	for _, r := range recs {
		var res []byte
		if r.Delivery != nil {
			b, err := proto.Marshal(r.Delivery)
			if err != nil {
				return fmt.Errorf("encode outbox record %s: %w", r.ID, err)
			}
			res = b
		}
		bySession[r.SessionID] = append(bySession[r.SessionID], r.ID, r.Body, res)
	}
	for sessionID, args := range bySession {
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			s.index(ctx, p, sessionID)
			return nil
		}); err != nil {
			return fmt.Errorf("index outbox of %s: %w", sessionID, err)
		}
		if err := s.outbox.put.Run(ctx, s.rdb, s.outboxKeys(sessionID), args...).Err(); err != nil {
			return fmt.Errorf("put outbox records of %s: %w", sessionID, err)
		}
	}
	return nil
}

// Outboxed returns up to limit records, oldest first within a session.
func (s *Store) Outboxed(ctx context.Context, sessionID string, limit int) ([]state.OutboxRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	if sessionID != "" {
		return s.sessionOutbox(ctx, sessionID, limit)
	}
	sessions, err := s.rdb.ZRangeWithScores(ctx, s.outboxIndexKey(), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("read the outbox index: %w", err)
	}
	var out []state.OutboxRecord
	for _, z := range sessions {
		id, _ := z.Member.(string)
		recs, err := s.sessionOutbox(ctx, id, limit-len(out))
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			if err := s.outbox.unindex.Run(ctx, s.rdb, []string{s.outboxIndexKey()}, id, strconv.FormatFloat(z.Score, 'f', -1, 64)).Err(); err != nil {
				return nil, fmt.Errorf("update the outbox index: %w", err)
			}
			continue
		}
		out = append(out, recs...)
		if len(out) >= limit {
			break
		}
	}
	return out, nil
}

func (s *Store) sessionOutbox(ctx context.Context, sessionID string, limit int) ([]state.OutboxRecord, error) {
	vals, err := s.outbox.list.Run(ctx, s.rdb, s.outboxKeys(sessionID), limit).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("read the outbox of %s: %w", sessionID, err)
	}
	out := make([]state.OutboxRecord, 0, len(vals)/3)
	for i := 0; i+2 < len(vals); i += 3 {
		r := state.OutboxRecord{ID: vals[i], SessionID: sessionID, Body: []byte(vals[i+1])}
		if vals[i+2] != "" {
			r.Delivery = &orchestratorv1.MailboxDelivery{}
			if err := proto.Unmarshal([]byte(vals[i+2]), r.Delivery); err != nil {
				return nil, fmt.Errorf("decode outbox record %s: %w", r.ID, err)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// DoneOutbox removes the session's records ids.
func (s *Store) DoneOutbox(ctx context.Context, sessionID string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	if err := s.outbox.done.Run(ctx, s.rdb, s.outboxKeys(sessionID), args...).Err(); err != nil {
		return fmt.Errorf("remove outbox records of %s: %w", sessionID, err)
	}
	return nil
}
