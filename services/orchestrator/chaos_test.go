package orchestrator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
	"nexus.local/services/orchestrator/state/statetest"
)

// chaosAutomations is how many automations each run of the chaos test makes.
const chaosAutomations = 6

// callsIn counts the calls of tool the model already made in the
// transcript it was sent.
func callsIn(r ot.Request, tool string) int {
	n := 0
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" && b.Name == tool {
				n++
			}
		}
	}
	return n
}

// TestRunsSurviveRedisCrashes runs sessions of six automations each while
// Redis (append-only, every write synced) is killed with SIGKILL and
// restarted on the same data folder, down about a second each time; the
// first crash comes as a run charges an automation's budget, its answer
// lost. Every run completes, with each automation charged once, and ends
// well within a minute of its last result (a run whose wake-up was lost
// would wait for its tool-result deadline). NEXUS_TEST_CHAOS=full runs the
// full size: 30 runs and 8 crashes; NEXUS_TEST_CHAOS=busy keeps Redis busy
// through 6 crashes with 28 inspections beside each run's automations.
func TestRunsSurviveRedisCrashes(t *testing.T) {
	runs, crashes, inspections, patience := 6, 2, 0, testTimeout
	switch os.Getenv("NEXUS_TEST_CHAOS") {
	case "full":
		runs, crashes, patience = 30, 8, 10*time.Minute
	case "busy":
		runs, crashes, inspections, patience = 30, 6, 28, 10*time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	srv := statetest.StartRedis(t, "always")
	proxy := statetest.StartFaultProxy(t, srv.Addr())
	var ids atomic.Int64
	vendor := ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
		n, looked := callsIn(r, "execute_task_automation"), callsIn(r, "execute_data_collection")
		id := ids.Add(1)
		// The inspections come spread between the automations.
		if looked < inspections && (n >= chaosAutomations || looked < (n+1)*inspections/chaosAutomations) {
			return ot.Turn{Blocks: []ot.Block{ot.ToolUse(fmt.Sprintf("toolu_c%05d", id), "execute_data_collection",
				map[string]any{"code": "print(len(App.ActiveDocument.Objects))", "description": "Count"})}}
		}
		if n >= chaosAutomations {
			return ot.Turn{Blocks: []ot.Block{ot.Text(fmt.Sprintf("%d boxes.", n))}}
		}
		// The raw line break marks the script where the session holds it.
		code := fmt.Sprintf("box_%d = %d\nprint('automation %d')", n+1, id, n+1)
		return ot.Turn{Blocks: []ot.Block{ot.ToolUse(fmt.Sprintf("toolu_c%05d", id), "execute_task_automation", map[string]any{"code": code, "description": "A box"})}}
	})
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_REDIS_URL": proxy.URL(), "NEXUS_LOG_LEVEL": "error"}))
	charging := proxy.Add(&statetest.FaultRule{Match: statetest.Contains("s:{", "\nprint('automation 3')"), Fault: statetest.LoseAnswer})

	type outcome struct {
		sessionID string
		f         *followed
		err       error
	}
	outcomes := make([]outcome, runs)
	var wg sync.WaitGroup
	var going atomic.Int64
	begin := time.Now()
	for i := range runs {
		sessionID, runID := startRun(ctx, t, stack.Client)
		outcomes[i].sessionID = sessionID
		going.Add(1)
		wg.Go(func() {
			defer going.Add(-1)
			// A person's host takes a moment to run each script, so the
			// runs are still going while Redis crashes.
			outcomes[i].f, outcomes[i].err = courier(ctx, stack.Client, sessionID, runID, func(tc *agentv1.ToolCall) *hostv1.HostResult {
				wait := time.Duration(200+rand.IntN(1800)) * time.Millisecond
				if tc.GetToolName() == agentv1.ToolName_TOOL_NAME_EXECUTE_DATA_COLLECTION {
					wait /= 10
				}
				select {
				case <-time.After(wait):
				case <-ctx.Done():
				}
				return committed(tc)
			})
		})
	}
	for i := range crashes {
		if i == 0 {
			select {
			case <-charging.Fired():
			case <-ctx.Done():
				t.Fatal("no run charged a third automation's budget")
			}
		} else {
			time.Sleep(1200 * time.Millisecond)
		}
		t.Logf("crash %d with %d runs going", i+1, going.Load())
		srv.Stop(syscall.SIGKILL)
		time.Sleep(time.Second)
		srv.Start()
	}
	wg.Wait()

	var tail time.Duration
	for i, o := range outcomes {
		if o.err != nil {
			t.Errorf("run %d: %v", i, o.err)
			continue
		}
		if msg := o.f.failure(); msg != "" {
			t.Errorf("run %d: %s", i, msg)
			continue
		}
		if n := o.f.answered[agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION]; n != chaosAutomations {
			t.Errorf("run %d: %d automations reached the host, want %d", i, n, chaosAutomations)
		}
		if n := o.f.answered[agentv1.ToolName_TOOL_NAME_EXECUTE_DATA_COLLECTION]; n != inspections {
			t.Errorf("run %d: %d inspections reached the host, want %d", i, n, inspections)
		}
		sess, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: o.sessionID})
		if err != nil {
			t.Fatal(err)
		}
		if sess.GetIterationCount() != chaosAutomations-1 || sess.GetFixRetryCount() != 0 {
			t.Errorf("run %d: %d iterations and %d fixes charged, want %d and 0", i, sess.GetIterationCount(), sess.GetFixRetryCount(), chaosAutomations-1)
		}
		// Not a speed test: the bound tells a run woken by its result from
		// one found by the sweep at its ten-minute deadline.
		d := o.f.ended.Sub(o.f.lastResult)
		tail = max(tail, d)
		if d >= time.Minute {
			t.Errorf("run %d ended %s after its last result, want under a minute", i, d.Round(time.Millisecond))
		}
	}
	t.Logf("%d runs of %d automations and %d inspections, %d crashes: all done in %s; the slowest run ended %s after its last result",
		runs, chaosAutomations, inspections, crashes, time.Since(begin).Round(time.Millisecond), tail.Round(time.Millisecond))
}
