package redisstate

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/state"
)

// maxUpdateAttempts bounds optimistic retries of one Update; each failed
// attempt means another replica changed the session in between.
const maxUpdateAttempts = 100

// Create stores a new session and indexes it under its owner.
func (s *Store) Create(ctx context.Context, sess *agentv1.Session) error {
	if sess.GetSessionId() == "" {
		return errors.New("create session: session id is empty")
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(sess)
	if err != nil {
		return fmt.Errorf("encode session: %w", err)
	}
	ok, err := s.rdb.SetNX(ctx, s.sessionKey(sess.GetSessionId()), b, s.opts.SessionTTL).Result()
	if err != nil {
		return fmt.Errorf("create session %s: %w", sess.GetSessionId(), err)
	}
	if !ok {
		// The same bytes under the id are this create's own write, retried
		// after its answer was lost (the client retries on a broken
		// connection); anything else is another session.
		cur, err := s.rdb.Get(ctx, s.sessionKey(sess.GetSessionId())).Bytes()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("create session %s: %w", sess.GetSessionId(), err)
		}
		if !bytes.Equal(cur, b) {
			return fmt.Errorf("create session %s: the id is already used", sess.GetSessionId())
		}
	}
	// The owner index lives in another slot; a crash between the two writes
	// leaves a session its owner cannot list, never a listed ghost.
	score := float64(sess.GetCreateTime().AsTime().UnixNano())
	if err := s.rdb.ZAdd(ctx, s.ownerKey(sess.GetOwner()), redis.Z{Score: score, Member: sess.GetSessionId()}).Err(); err != nil {
		return fmt.Errorf("index session %s: %w", sess.GetSessionId(), err)
	}
	return nil
}

// Get returns the session, or state.ErrNotFound.
func (s *Store) Get(ctx context.Context, sessionID string) (*agentv1.Session, error) {
	return sessionOf(sessionID, s.rdb.Get(ctx, s.sessionKey(sessionID)))
}

// sessionOf reads the answer of a GET of the session.
func sessionOf(sessionID string, cmd *redis.StringCmd) (*agentv1.Session, error) {
	b, err := cmd.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get session %s: %w", sessionID, err)
	}
	return decodeSession(b)
}

func decodeSession(b []byte) (*agentv1.Session, error) {
	sess := &agentv1.Session{}
	if err := proto.Unmarshal(b, sess); err != nil {
		return nil, fmt.Errorf("decode session: %w", err)
	}
	return sess, nil
}

// updateLua stores a session only if it is still the one read, compared by
// its SHA-1, so an update costs a read and one script rather than WATCH,
// GET and MULTI/EXEC. KEYS: session. ARGV: SHA-1 of what was read, the new
// bytes, ttl in ms (0 keeps the key's own).
const updateLua = `
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
if redis.sha1hex(cur) ~= ARGV[1] then return 0 end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
end
return 1
`

// Update applies fn to the session read and stores the result only if
// nobody wrote it in between; otherwise it reads again and retries, so no
// update is lost across replicas.
func (s *Store) Update(ctx context.Context, sessionID string, fn func(*agentv1.Session) error) (*agentv1.Session, error) {
	key := s.sessionKey(sessionID)
	ttl := s.updateTTL()
	for range maxUpdateAttempts {
		b, err := s.rdb.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return nil, state.ErrNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("update session %s: %w", sessionID, err)
		}
		sess, err := decodeSession(b)
		if err != nil {
			return nil, err
		}
		if err := fn(sess); err != nil {
			return nil, err
		}
		nb, err := proto.Marshal(sess)
		if err != nil {
			return nil, fmt.Errorf("encode session: %w", err)
		}
		sum := sha1.Sum(b)
		res, err := s.scripts.update.Run(ctx, s.rdb, []string{key}, hex.EncodeToString(sum[:]), nb, ttl).Int()
		switch {
		case err != nil:
			return nil, fmt.Errorf("update session %s: %w", sessionID, err)
		case res == 1:
			return sess, nil
		case res == -1:
			return nil, state.ErrNotFound
		}
	}
	return nil, fmt.Errorf("update session %s: gave up after %d conflicting writers", sessionID, maxUpdateAttempts)
}

// updateTTL is the ttl argument of updateLua: the session's retention in
// ms, or 0 to keep the key's own.
func (s *Store) updateTTL() int64 {
	if d := s.sessionTTL(); d > 0 {
		return max(d.Milliseconds(), 1)
	}
	return 0
}

// fnError marks an error returned by an Update callback so it is returned
// unchanged rather than retried or wrapped.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

// List returns the owner's sessions, newest first.
func (s *Store) List(ctx context.Context, owner string) ([]*agentv1.Session, error) {
	ids, err := s.rdb.ZRevRange(ctx, s.ownerKey(owner), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list sessions of %s: %w", owner, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	// One GET per session in a pipeline rather than MGET: on Cluster the
	// sessions live in different slots.
	cmds := make([]*redis.StringCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.Get(ctx, s.sessionKey(id))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("list sessions of %s: %w", owner, err)
	}
	out := make([]*agentv1.Session, 0, len(ids))
	for i, c := range cmds {
		b, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			// The session expired (retention); its index entry goes too.
			s.rdb.ZRem(ctx, s.ownerKey(owner), ids[i])
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list sessions of %s: %w", owner, err)
		}
		sess, err := decodeSession(b)
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, nil
}

// Transcript returns the session's transcript, one protobuf message per
// list element.
func (s *Store) Transcript(ctx context.Context, sessionID string) ([]*modelv1.Message, error) {
	var read transcriptRead
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		read = s.readTranscript(ctx, p, sessionID)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read transcript of %s: %w", sessionID, err)
	}
	return read.decode(sessionID)
}

// transcriptRead is a transcript's read queued in a pipeline.
type transcriptRead struct {
	exists *redis.IntCmd
	items  *redis.StringSliceCmd
}

func (s *Store) readTranscript(ctx context.Context, p redis.Pipeliner, sessionID string) transcriptRead {
	return transcriptRead{exists: p.Exists(ctx, s.sessionKey(sessionID)), items: p.LRange(ctx, s.transcriptKey(sessionID), 0, -1)}
}

func (t transcriptRead) decode(sessionID string) ([]*modelv1.Message, error) {
	if err := errors.Join(t.exists.Err(), t.items.Err()); err != nil {
		return nil, fmt.Errorf("read transcript of %s: %w", sessionID, err)
	}
	if t.exists.Val() == 0 {
		return nil, state.ErrNotFound
	}
	out := make([]*modelv1.Message, 0, len(t.items.Val()))
	for i, raw := range t.items.Val() {
		m := &modelv1.Message{}
		if err := proto.Unmarshal([]byte(raw), m); err != nil {
			return nil, fmt.Errorf("decode transcript of %s, message %d: %w", sessionID, i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// saveTranscriptLua replaces a session's transcript if the session exists,
// in one step: a reader sees the old transcript or the new one, never a mix,
// and the save is one round trip. Messages are pushed a thousand at a time,
// below Lua's bound on unpacked arguments. KEYS: session, transcript. ARGV:
// ttl in ms (0 for none), then the messages.
const saveTranscriptLua = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('DEL', KEYS[2])
local n = #ARGV
for i = 2, n, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 999, n)))
end
if n > 1 and tonumber(ARGV[1]) > 0 then
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
return 1
`

// SaveTranscript replaces the transcript in one step, so a reader sees the
// old or the new one, never a mix.
func (s *Store) SaveTranscript(ctx context.Context, sessionID string, msgs []*modelv1.Message) error {
	keys, args, err := s.saveTranscriptArgs(sessionID, msgs)
	if err != nil {
		return err
	}
	return transcriptSaved(sessionID, s.scripts.saveTranscript.Run(ctx, s.rdb, keys, args...))
}

// saveTranscriptArgs are saveTranscriptLua's keys and arguments.
func (s *Store) saveTranscriptArgs(sessionID string, msgs []*modelv1.Message) ([]string, []any, error) {
	args := make([]any, 1, len(msgs)+1)
	args[0] = s.opts.SessionTTL.Milliseconds()
	for i, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, nil, fmt.Errorf("encode transcript of %s, message %d: %w", sessionID, i, err)
		}
		args = append(args, b)
	}
	return []string{s.sessionKey(sessionID), s.transcriptKey(sessionID)}, args, nil
}

// transcriptSaved reads saveTranscriptLua's answer.
func transcriptSaved(sessionID string, cmd *redis.Cmd) error {
	n, err := cmd.Int()
	if err != nil {
		return fmt.Errorf("save transcript of %s: %w", sessionID, err)
	}
	if n < 0 {
		return state.ErrNotFound
	}
	return nil
}

// Delete removes every key of the session: its state, transcript, mailbox
// and decided calls, its entry in the owner's index, and the event logs,
// cancel signals, run states and schedule entries of its last run and of
// runIDs. The session's own keys share a slot and go in
// one transaction; the others live in other slots and follow one by one.
func (s *Store) Delete(ctx context.Context, sessionID string, runIDs ...string) error {
	sess, err := s.Get(ctx, sessionID)
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("delete session %s: %w", sessionID, err)
	}
	if sess != nil && sess.GetLastRunId() != "" {
		runIDs = append(runIDs, sess.GetLastRunId())
	}
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.sessionKey(sessionID), s.transcriptKey(sessionID), s.mailboxKey(sessionID), s.decidedKey(sessionID))
		return nil
	}); err != nil {
		return fmt.Errorf("delete session %s: %w", sessionID, err)
	}
	if sess != nil {
		if err := s.rdb.ZRem(ctx, s.ownerKey(sess.GetOwner()), sessionID).Err(); err != nil {
			return fmt.Errorf("delete session %s from its owner's index: %w", sessionID, err)
		}
	}
	// A run's event log, cancel signal and state share the run's slot; its
	// schedule entry lives with every other run's.
	for _, id := range runIDs {
		if err := s.rdb.Del(ctx, s.eventsKey(id), s.cancelKey(id), s.runKey(id)).Err(); err != nil {
			return fmt.Errorf("delete the event log of run %s: %w", id, err)
		}
		if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HDel(ctx, s.leaseInfoKey(), id)
			p.ZRem(ctx, s.leaseExpiryKey(), id)
			return nil
		}); err != nil {
			return fmt.Errorf("delete the schedule entry of run %s: %w", id, err)
		}
	}
	return nil
}
