package orchestrator_test

import (
	"context"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestStartedRunAsksTheModelAtOnce counts the round trips to Redis on a
// run's way from StartRun to its first model request, through the proxy
// of TestRendezvousRoundTrips. The worker goes on from what the start
// wrote and read: after the start takes the run's lease, one round trip
// (its turn's start: the run's state and the turn_started chunk) comes
// before the model is asked, where the worker read the run's state, its
// cancel key, the transcript, the last event and the session again first.
func TestStartedRunAsksTheModelAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, redisURL, rec := countedRedis(t)
	asked := make(chan int, 2)
	vendor := ot.NewAnthropicFunc(t, func(ot.Request) ot.Turn {
		select {
		case asked <- rec.len():
		default:
		}
		return ot.Turn{Blocks: []ot.Block{ot.Text("Seen.")}}
	})
	stack := ot.Start(t, vendor.URL, countedEnv(redisURL))

	// The first run loads Redis's script cache; the second is counted.
	for i := range 2 {
		sess := newSession(ctx, t, stack.Client)
		from := rec.len()
		resp, err := stack.Client.StartRun(ctx, &agentv1.StartRunRequest{SessionId: sess.GetSessionId(), Prompt: "Look"})
		if err != nil {
			t.Fatalf("start run: %v", err)
		}
		var to int
		select {
		case to = <-asked:
		case <-ctx.Done():
			t.Fatal("the model was never asked")
		}
		if i == 0 {
			continue
		}
		runID := resp.GetRunId()
		writes := rec.between(from, to)
		// The first run may still be ending: only this run's writes count.
		ours := func(w write) bool {
			for _, c := range w {
				if c.names(runID) || c.names(sess.GetSessionId()) {
					return true
				}
			}
			return false
		}
		acquired, onPath, after := -1, 0, 0
		for j, w := range writes {
			if offPath(w, runID) != "" || !ours(w) {
				continue
			}
			onPath++
			for _, c := range w {
				if c.touchesOnly("{leases}") && c.names(runID) {
					acquired = j
				}
			}
		}
		for j, w := range writes {
			why := offPath(w, runID)
			if why == "" && !ours(w) {
				why = "(another run)"
			}
			if why == "" && acquired >= 0 && j > acquired {
				after++
			}
			t.Logf("%2d %-70s %s", j+1, w.String(), why)
		}
		t.Logf("%d round trips from StartRun to the model request, %d of them after the lease", onPath, after)
		if acquired < 0 {
			t.Fatal("no write took the run's lease before the model was asked")
		}
		if after > 1 {
			t.Errorf("the worker waited for %d round trips to Redis before asking the model, want 1 (its turn's start)", after)
		}
	}
}
