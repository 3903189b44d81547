package replicatest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// TestKillAfterLocalDelivery kills the replica that works a run right after
// a client following the run on that replica (the replica a run starts on
// works it and serves its first stream from memory) got a chunk of the
// model's turn. The client reconnects after the last id it saw, through any
// gateway. It sees every event once, the turn redone after turn_restarted,
// and every chunk it was ever given under a seq is the chunk the run's
// durable log holds under that seq: a chunk reaches a follower from memory
// only once the store has it, so no client sees two different chunks under
// one sequence number. (A tail that delivered a chunk before the store had
// it, flushing it a moment later, fails here: the client saw a model delta
// as event 3 and then the redone turn's turn_restarted under 3 again.)
func TestKillAfterLocalDelivery(t *testing.T) {
	const lease = 3 * time.Second
	m := startMeshOpts(t, meshOptions{orchEnv: []string{"NEXUS_RUN_LEASE=" + lease.String()}, vendor: newPacedVendor(t, 100*time.Millisecond)})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sid, err := m.createSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := newFollower(m, sid)
	seen := map[int64]*agentv1.StreamChunk{}
	killed := false
	f.onChunk = func(c *agentv1.StreamChunk) {
		seen[c.GetSeq()] = proto.Clone(c).(*agentv1.StreamChunk)
		if c.GetMessage() == nil || killed {
			return
		}
		i := m.replicaHolding(ctx, t, c.GetRunId())
		m.orchs[i].Kill()
		killed = true
		t.Logf("killed %s right after it delivered event %d", m.replicas[i], c.GetSeq())
	}
	f.followAnswering(ctx, t)
	if !killed {
		t.Fatal("the run ended before a replica could be killed in its turn")
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	if f.restarts != 1 {
		t.Errorf("the client saw %d turn_restarted notices, want 1", f.restarts)
	}

	opts, err := redis.ParseURL(m.redis.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	entries, err := rdb.XRange(ctx, "nexus:ev:{"+f.runID+"}", "-", "+").Result()
	if err != nil {
		t.Fatalf("read the run's log: %v", err)
	}
	logged := map[int64]*agentv1.StreamChunk{}
	for _, e := range entries {
		raw, ok := e.Values["c"].(string)
		if !ok {
			continue // the end marker
		}
		seq, err := strconv.ParseInt(e.ID[:len(e.ID)-len("-0")], 10, 64)
		if err != nil {
			t.Fatalf("log entry %s: %v", e.ID, err)
		}
		c := &agentv1.StreamChunk{}
		if err := proto.Unmarshal([]byte(raw), c); err != nil {
			t.Fatalf("log entry %s: %v", e.ID, err)
		}
		logged[seq] = c
	}
	for seq, c := range seen {
		if got, ok := logged[seq]; !ok || !proto.Equal(got, c) {
			t.Errorf("the client was given %v as event %d; the durable log holds %v", c, seq, got)
		}
	}
	t.Logf("the client saw %d events, each the one the log holds under its seq", len(seen))
}
