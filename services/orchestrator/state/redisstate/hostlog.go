package redisstate

// This file is each linked host's delivery log: calls offered, acknowledged,
// read again on reconnect, and the notification that wakes its link.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// offerLua appends a call to a host's delivery log unless it holds it, and
// wakes the log's watchers. KEYS: calls hash, seqs hash, counter. ARGV:
// field, call bytes, channel.
const offerLua = `
local seq = redis.call('HGET', KEYS[2], ARGV[1])
if seq then return tonumber(seq) end
seq = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], seq)
redis.call('PUBLISH', ARGV[3], '1')
return seq
`

// Offer appends a call unless the log holds it.
func (h *Hosts) Offer(ctx context.Context, key string, c *agentv1.HostCall) (int64, error) {
	stored := proto.Clone(c).(*agentv1.HostCall)
	stored.Seq = 0
	b, err := proto.Marshal(stored)
	if err != nil {
		return 0, fmt.Errorf("encode host call: %w", err)
	}
	seq, err := h.offer.Run(ctx, h.s.rdb, []string{h.callsKey(key), h.seqsKey(key), h.counterKey(key)},
		callField(c.GetSessionId(), c.GetToolCall().GetToolCallId()), b, h.channel(key)).Int64()
	if err != nil {
		return 0, fmt.Errorf("offer call to host log %s: %w", key, err)
	}
	return seq, nil
}

// Ack removes a call.
func (h *Hosts) Ack(ctx context.Context, key, sessionID, toolCallID string) error {
	f := callField(sessionID, toolCallID)
	pipe := h.s.rdb.TxPipeline()
	pipe.HDel(ctx, h.callsKey(key), f)
	pipe.HDel(ctx, h.seqsKey(key), f)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("ack call in host log %s: %w", key, err)
	}
	return nil
}

// Calls returns a log's calls in seq order.
func (h *Hosts) Calls(ctx context.Context, key string) ([]*agentv1.HostCall, error) {
	pipe := h.s.rdb.Pipeline()
	calls := pipe.HGetAll(ctx, h.callsKey(key))
	seqs := pipe.HGetAll(ctx, h.seqsKey(key))
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read host log %s: %w", key, err)
	}
	var out []*agentv1.HostCall
	for f, b := range calls.Val() {
		seq, err := strconv.ParseInt(seqs.Val()[f], 10, 64)
		if err != nil {
			// Acked between the two reads: gone.
			continue
		}
		c := &agentv1.HostCall{}
		if err := proto.Unmarshal([]byte(b), c); err != nil {
			return nil, fmt.Errorf("decode host call: %w", err)
		}
		c.Seq = seq
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *agentv1.HostCall) int { return cmp.Compare(a.GetSeq(), b.GetSeq()) })
	return out, nil
}

// Watch wakes on every change of the log key through the replica's shared
// subscriber (also after it reconnects), and once at the start.
func (h *Hosts) Watch(_ context.Context, key string) (<-chan struct{}, func(), error) {
	w := newWaiter()
	w.fire()
	return w.kick, h.s.sub.watch(h.channel(key), w), nil
}
