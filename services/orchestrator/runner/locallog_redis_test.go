package runner

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/statetest"
)

// signalFollow tells the test each time a follower opens the store's log.
type signalFollow struct {
	state.Store
	opened chan struct{}
}

func (s signalFollow) Follow(ctx context.Context, runID string, afterSeq int64, fn func([]*agentv1.StreamChunk) error) error {
	select {
	case s.opened <- struct{}{}:
	default:
	}
	return s.Store.Follow(ctx, runID, afterSeq, fn)
}

// TestHandoverToTheStoreWaitsOutAnOutage: a follower reads a run from this
// replica's memory; Redis goes down, and the worker lets the run go while it
// is down (its lease lapsed), so the follower has to move to the store's
// log during the outage. It must wait there, as a follower that read the
// store all along does, and get the rest of the run once, in order, not end
// its stream: an ended stream sends the client to rejoin through a store
// that is away, and the gateway's resume of such a rejoin is where events
// 1 to 7 were once replayed after 7 (TestRunsOutliveTheirReplicasAndRedis).
func TestHandoverToTheStoreWaitsOutAnOutage(t *testing.T) {
	ctx := t.Context()
	srv := statetest.StartRedis(t, "always")
	rs, err := redisstate.Open(ctx, srv.URL(), redisstate.Options{Prefix: "handover:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })
	store := signalFollow{Store: rs, opened: make(chan struct{}, 16)}
	s := testDeps(store)
	const run = "run-handover"
	chunk := func(seq int64) *agentv1.StreamChunk {
		return &agentv1.StreamChunk{Seq: seq, RunId: run, Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: fmt.Sprintf("delta %d", seq)}}}
	}
	here := s.Local.open(run)
	for seq := int64(1); seq <= 3; seq++ {
		if err := rs.Append(ctx, run, chunk(seq)); err != nil {
			t.Fatal(err)
		}
		here.add(chunk(seq))
	}

	var got []int64
	var followErr error
	saw3 := make(chan struct{})
	var wg sync.WaitGroup
	ended := make(chan struct{})
	wg.Go(func() {
		defer close(ended)
		followErr = s.Local.Follow(ctx, s.Store, run, 0, func(c *agentv1.StreamChunk) error {
			got = append(got, c.GetSeq())
			if c.GetSeq() == 3 {
				close(saw3)
			}
			return nil
		})
	})
	<-saw3 // from memory: the store was never opened

	srv.Stop(syscall.SIGTERM)
	s.Local.close(run, here)
	// Redis stays down until the follower has found it away: it opened the
	// store's log and was refused (it opens it again, or its stream ends).
	<-store.opened
	select {
	case <-store.opened:
	case <-ended:
	}
	srv.Start()
	// Another replica writes on and ends the run.
	for seq := int64(4); seq <= 5; seq++ {
		if err := rs.Append(ctx, run, chunk(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.Finish(ctx, run); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if followErr != nil {
		t.Errorf("the follower's stream ended with %v, want it at the log's end", followErr)
	}
	if fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Errorf("the follower got events %v, want [1 2 3 4 5] once each", got)
	}
}
