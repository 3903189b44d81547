package redisstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// offlineLua drops a link's presence if it is still that link's, and
// records since when the host is offline. KEYS: presence, host. ARGV: conn,
// offline-since bytes are written by the caller, so this only answers
// whether the presence was this link's.
const offlineLua = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`

// onlineLua records link ARGV[1] as the host's live link for ARGV[2] ms and
// when it would lapse (ARGV[3], unix ms), and wakes the host's watchers on
// channel ARGV[4] when it takes over from another live link. With ARGV[5]
// = "renew" it only extends a presence that is its own or lapsed, and
// answers -1 when another link holds it. KEYS: presence, seen.
const onlineLua = `
local cur = redis.call('GET', KEYS[1])
if ARGV[5] == 'renew' and cur and cur ~= ARGV[1] then return -1 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], ARGV[3])
if cur and cur ~= ARGV[1] then
  redis.call('PUBLISH', ARGV[4], 'superseded')
  return 1
end
return 0
`

// Hosts implements state.Hosts on the same Redis as a Store, with its
// shared subscriber for the links' wake-ups.
type Hosts struct {
	s                               *Store
	offer, attempt, offline, online *redis.Script
}

// NewHosts returns the host registry of store s.
func NewHosts(s *Store) *Hosts {
	return &Hosts{s: s, offer: redis.NewScript(offerLua), attempt: redis.NewScript(attemptLua), offline: redis.NewScript(offlineLua),
		online: redis.NewScript(onlineLua)}
}

var _ state.Hosts = (*Hosts)(nil)

func (h *Hosts) p() string                       { return h.s.opts.Prefix }
func (h *Hosts) hostKey(id string) string        { return h.p() + "h:{" + id + "}" }
func (h *Hosts) hostTokenKey(id string) string   { return h.p() + "h:{" + id + "}:token" }
func (h *Hosts) presenceKey(id string) string    { return h.p() + "h:{" + id + "}:online" }
func (h *Hosts) seenKey(id string) string        { return h.p() + "h:{" + id + "}:seen" }
func (h *Hosts) tokenKey(digest string) string   { return h.p() + "ht:{" + digest + "}" }
func (h *Hosts) ownerKey(owner string) string    { return h.p() + "ho:{" + owner + "}" }
func (h *Hosts) callsKey(key string) string      { return h.p() + "hl:{" + key + "}:calls" }
func (h *Hosts) seqsKey(key string) string       { return h.p() + "hl:{" + key + "}:seqs" }
func (h *Hosts) counterKey(key string) string    { return h.p() + "hl:{" + key + "}:next" }
func (h *Hosts) channel(key string) string       { return h.p() + "n:hl:" + key }
func (h *Hosts) pairingKey(digest string) string { return h.p() + "hp:{" + digest + "}" }
func (h *Hosts) codeKey(code string) string      { return h.p() + "hc:{" + code + "}" }
func (h *Hosts) attemptKey(key string) string    { return h.p() + "ha:{" + key + "}" }

func callField(sessionID, toolCallID string) string { return sessionID + "\x00" + toolCallID }

// CreateHost stores a new host, its token digest and its owner index.
func (h *Hosts) CreateHost(ctx context.Context, lh *agentv1.LinkedHost, tokenDigest string) error {
	b, err := proto.Marshal(lh)
	if err != nil {
		return fmt.Errorf("encode host: %w", err)
	}
	ok, err := h.s.rdb.SetNX(ctx, h.hostKey(lh.GetHostId()), b, 0).Result()
	if err != nil {
		return fmt.Errorf("create host %s: %w", lh.GetHostId(), err)
	}
	if !ok {
		return state.ErrConflict
	}
	if err := h.s.rdb.Set(ctx, h.hostTokenKey(lh.GetHostId()), tokenDigest, 0).Err(); err != nil {
		return fmt.Errorf("create host %s: %w", lh.GetHostId(), err)
	}
	if err := h.s.rdb.Set(ctx, h.tokenKey(tokenDigest), lh.GetHostId(), 0).Err(); err != nil {
		return fmt.Errorf("create host %s: %w", lh.GetHostId(), err)
	}
	score := float64(lh.GetCreateTime().AsTime().UnixNano())
	if err := h.s.rdb.ZAdd(ctx, h.ownerKey(lh.GetOwner()), redis.Z{Score: score, Member: lh.GetHostId()}).Err(); err != nil {
		return fmt.Errorf("index host %s: %w", lh.GetHostId(), err)
	}
	return nil
}

// HostByToken finds a host by its token's digest.
func (h *Hosts) HostByToken(ctx context.Context, tokenDigest string) (*agentv1.LinkedHost, error) {
	id, err := h.s.rdb.Get(ctx, h.tokenKey(tokenDigest)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("find host by token: %w", err)
	}
	return h.GetHost(ctx, id)
}

// GetHost returns a host with its presence.
func (h *Hosts) GetHost(ctx context.Context, hostID string) (*agentv1.LinkedHost, error) {
	pipe := h.s.rdb.Pipeline()
	rec := pipe.Get(ctx, h.hostKey(hostID))
	online := pipe.Exists(ctx, h.presenceKey(hostID))
	seen := pipe.Get(ctx, h.seenKey(hostID))
	_, _ = pipe.Exec(ctx)
	b, err := rec.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get host %s: %w", hostID, err)
	}
	out := &agentv1.LinkedHost{}
	if err := proto.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("decode host %s: %w", hostID, err)
	}
	out.Online = online.Val() == 1
	if out.Online {
		out.OfflineSince = nil
	} else if ms, err := seen.Int64(); err == nil && out.GetOfflineSince() == nil {
		// The link's replica went away without closing it: offline since
		// its presence lapsed.
		out.OfflineSince = timestamppb.New(time.UnixMilli(ms))
	}
	return out, nil
}

// UpdateHost applies fn under WATCH/MULTI.
func (h *Hosts) UpdateHost(ctx context.Context, hostID string, fn func(*agentv1.LinkedHost) error) (*agentv1.LinkedHost, error) {
	key := h.hostKey(hostID)
	txf := func(tx *redis.Tx) error {
		b, err := tx.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return state.ErrNotFound
		}
		if err != nil {
			return err
		}
		lh := &agentv1.LinkedHost{}
		if err := proto.Unmarshal(b, lh); err != nil {
			return fmt.Errorf("decode host: %w", err)
		}
		if err := fn(lh); err != nil {
			return fnError{err}
		}
		lh.Online = false
		nb, err := proto.Marshal(lh)
		if err != nil {
			return fmt.Errorf("encode host: %w", err)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, key, nb, 0); return nil })
		return err
	}
	for range maxUpdateAttempts {
		err := h.s.rdb.Watch(ctx, txf, key)
		var fe fnError
		switch {
		case err == nil:
			return h.GetHost(ctx, hostID)
		case errors.As(err, &fe):
			return nil, fe.err
		case errors.Is(err, state.ErrNotFound):
			return nil, state.ErrNotFound
		case errors.Is(err, redis.TxFailedErr):
			continue
		default:
			return nil, fmt.Errorf("update host %s: %w", hostID, err)
		}
	}
	return nil, fmt.Errorf("update host %s: gave up after %d conflicting writers", hostID, maxUpdateAttempts)
}

// ListHosts returns the owner's hosts, oldest first.
func (h *Hosts) ListHosts(ctx context.Context, owner string) ([]*agentv1.LinkedHost, error) {
	ids, err := h.s.rdb.ZRange(ctx, h.ownerKey(owner), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	return state.EachHost(ctx, ids, h.GetHost)
}

// RevokeHost removes the host, its token and its log, and wakes its links.
func (h *Hosts) RevokeHost(ctx context.Context, hostID string) error {
	lh, err := h.GetHost(ctx, hostID)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	digest, err := h.s.rdb.Get(ctx, h.hostTokenKey(hostID)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("revoke host %s: %w", hostID, err)
	}
	// The token goes first: from then on the host is refused everywhere.
	if digest != "" {
		if err := h.s.rdb.Del(ctx, h.tokenKey(digest)).Err(); err != nil {
			return fmt.Errorf("revoke host %s: %w", hostID, err)
		}
	}
	if err := h.s.rdb.Del(ctx, h.hostKey(hostID), h.hostTokenKey(hostID), h.presenceKey(hostID), h.seenKey(hostID)).Err(); err != nil {
		return fmt.Errorf("revoke host %s: %w", hostID, err)
	}
	if err := h.s.rdb.Del(ctx, h.callsKey(hostID), h.seqsKey(hostID), h.counterKey(hostID)).Err(); err != nil {
		return fmt.Errorf("revoke host %s: %w", hostID, err)
	}
	if err := h.s.rdb.ZRem(ctx, h.ownerKey(lh.GetOwner()), hostID).Err(); err != nil {
		return fmt.Errorf("revoke host %s: %w", hostID, err)
	}
	return h.s.rdb.Publish(ctx, h.channel(hostID), "revoked").Err()
}

// SetOnline records an open link, the host's live one from now on.
func (h *Hosts) SetOnline(ctx context.Context, hostID, connID string, ttl time.Duration) error {
	if _, err := h.setOnline(ctx, hostID, connID, ttl, "claim"); err != nil {
		return fmt.Errorf("record host %s online: %w", hostID, err)
	}
	return nil
}

// RenewOnline extends a link's presence while it is the live one.
func (h *Hosts) RenewOnline(ctx context.Context, hostID, connID string, ttl time.Duration) error {
	n, err := h.setOnline(ctx, hostID, connID, ttl, "renew")
	if err != nil {
		return fmt.Errorf("renew host %s online: %w", hostID, err)
	}
	if n < 0 {
		return state.ErrLeaseLost
	}
	return nil
}

func (h *Hosts) setOnline(ctx context.Context, hostID, connID string, ttl time.Duration, mode string) (int, error) {
	return h.online.Run(ctx, h.s.rdb, []string{h.presenceKey(hostID), h.seenKey(hostID)}, connID, ttl.Milliseconds(),
		strconv.FormatInt(time.Now().Add(ttl).UnixMilli(), 10), h.channel(hostID), mode).Int()
}

// LinkConn answers the live link of a host.
func (h *Hosts) LinkConn(ctx context.Context, hostID string) (string, error) {
	conn, err := h.s.rdb.Get(ctx, h.presenceKey(hostID)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the link of host %s: %w", hostID, err)
	}
	return conn, nil
}

// SetOffline records a closed link unless a newer one is open.
func (h *Hosts) SetOffline(ctx context.Context, hostID, connID string) error {
	mine, err := h.offline.Run(ctx, h.s.rdb, []string{h.presenceKey(hostID), h.hostKey(hostID)}, connID).Int()
	if err != nil {
		return fmt.Errorf("record host %s offline: %w", hostID, err)
	}
	if mine == 0 {
		return nil
	}
	_, err = h.UpdateHost(ctx, hostID, func(lh *agentv1.LinkedHost) error {
		lh.OfflineSince = timestamppb.Now()
		return nil
	})
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	return err
}
