package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/proctest"
	"nexus.local/platform/telemetry/telemetrytest"
	ot "nexus.local/services/orchestrator/orchestratortest"
	"nexus.local/services/orchestrator/state/statetest"
)

// storeBackoff paces a courier's retries while the store is away.
const storeBackoff = 100 * time.Millisecond

// storeAway says whether a call failed because the state store was away or
// full: a courier tries again.
func storeAway(err error) bool {
	c := status.Code(err)
	return c == codes.Unavailable || c == codes.ResourceExhausted
}

// followed is what a courier saw of one run.
type followed struct {
	chunks []*agentv1.StreamChunk
	// answered counts the distinct tool calls answered, by tool.
	answered map[agentv1.ToolName]int
	// lastResult is when the last result was accepted; ended when the run's
	// last chunk arrived.
	lastResult, ended time.Time
}

func (f *followed) end() *agentv1.StreamChunk {
	if len(f.chunks) == 0 {
		return nil
	}
	return f.chunks[len(f.chunks)-1]
}

// failure describes a run that did not complete, or "" for one that did.
func (f *followed) failure() string {
	last := f.end()
	switch {
	case last == nil:
		return "the run sent no chunk"
	case last.GetComplete() != nil:
		return ""
	case last.GetError() != nil:
		return fmt.Sprintf("the run failed: %s: %s", last.GetError().GetCode(), last.GetError().GetMessage())
	}
	return fmt.Sprintf("the run's stream ended on %T", last.GetChunk())
}

// courier follows a run to its end the way a client does through Redis
// outages (it rejoins after the seq it saw last) and answers each tool call
// once, retrying while the store is away; answer gives the host's result.
func courier(ctx context.Context, c agentv1.OrchestratorServiceClient, sessionID, runID string, answer func(*agentv1.ToolCall) *hostv1.HostResult) (*followed, error) {
	f := &followed{answered: map[agentv1.ToolName]int{}}
	done := map[string]bool{}
	var after int64
	for {
		stream, err := c.StreamRunEvents(ctx, &agentv1.StreamRunEventsRequest{RunId: runID, AfterSeq: after})
		for err == nil {
			var ch *agentv1.StreamChunk
			ch, err = stream.Recv()
			if errors.Is(err, io.EOF) {
				f.ended = time.Now()
				return f, nil
			}
			if err != nil {
				break
			}
			after = ch.GetSeq()
			f.chunks = append(f.chunks, ch)
			tc := ch.GetToolCall()
			if tc == nil || done[tc.GetToolCallId()] {
				continue
			}
			done[tc.GetToolCallId()] = true
			if err := submit(ctx, c, sessionID, tc, answer(tc)); err != nil {
				return f, fmt.Errorf("answer tool call %s: %w", tc.GetToolCallId(), err)
			}
			f.answered[tc.GetToolName()]++
			f.lastResult = time.Now()
		}
		if !storeAway(err) {
			return f, fmt.Errorf("follow run %s: %w", runID, err)
		}
		select {
		case <-ctx.Done():
			return f, fmt.Errorf("follow run %s: %w", runID, ctx.Err())
		case <-time.After(storeBackoff):
		}
	}
}

// submit posts a result until it is accepted or refused for good.
func submit(ctx context.Context, c agentv1.OrchestratorServiceClient, sessionID string, tc *agentv1.ToolCall, res *hostv1.HostResult) error {
	for {
		_, err := c.SubmitToolResult(ctx, &agentv1.SubmitToolResultRequest{SessionId: sessionID, ToolCallId: tc.GetToolCallId(), ResultToken: tc.GetResultToken(), Result: res})
		if !storeAway(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(storeBackoff):
		}
	}
}

// committed is a host result of an automation that committed.
func committed(tc *agentv1.ToolCall) *hostv1.HostResult {
	return &hostv1.HostResult{Committed: tc.GetToolName() == agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION, Stdout: "ok " + tc.GetToolCallId()}
}

// startRun starts a run on a new session of the stack.
func startRun(ctx context.Context, t *testing.T, c agentv1.OrchestratorServiceClient) (sessionID, runID string) {
	t.Helper()
	sess := newSession(ctx, t, c)
	resp, err := c.StartRun(ctx, &agentv1.StartRunRequest{SessionId: sess.GetSessionId(), Prompt: "Add the boxes"})
	if err != nil {
		t.Fatalf("start run: %v", err)
	}
	return sess.GetSessionId(), resp.GetRunId()
}

// TestBudgetChargeAndEventSurviveLostAnswers runs two automations through a
// proxy that lets Redis execute, and then loses the answer of, the write
// that charges the second automation's budget and then the append of its
// tool call, as a Redis crash between its reply and the orchestrator does.
// The run completes, the iteration is charged once, and the tool call is in
// the log once.
func TestBudgetChargeAndEventSurviveLostAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := statetest.StartRedis(t, "always")
	proxy := statetest.StartFaultProxy(t, srv.Addr())
	// The script's line break is raw only where the session holds the
	// script and where the call is logged; the transcript holds it as JSON.
	second := "box = 2\nprint('second')"
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_a1", "execute_task_automation", map[string]any{"code": "box = 1\nprint('first')", "description": "First box"})}},
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_a2", "execute_task_automation", map[string]any{"code": second, "description": "Second box"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("Two boxes.")}},
	)
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_REDIS_URL": proxy.URL(), "NEXUS_LOG_LEVEL": "error"}))
	charge := proxy.Add(&statetest.FaultRule{Match: statetest.Contains("s:{", second), Fault: statetest.LoseAnswer})
	logged := proxy.Add(&statetest.FaultRule{Match: statetest.Contains("ev:{", second), Fault: statetest.LoseAnswer})

	sessionID, runID := startRun(ctx, t, stack.Client)
	f, err := courier(ctx, stack.Client, sessionID, runID, committed)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*statetest.FaultRule{"the budget charge": charge, "the tool call's append": logged} {
		select {
		case <-r.Fired():
		default:
			t.Errorf("the answer of %s was never lost; the test did not test it", name)
		}
	}
	if msg := f.failure(); msg != "" {
		t.Fatal(msg)
	}
	calls := 0
	for _, c := range f.chunks {
		if c.GetToolCall().GetToolCallId() == "toolu_a2" {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("the second automation's call is in the log %d times, want once", calls)
	}
	sess, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	if sess.GetIterationCount() != 1 || sess.GetFixRetryCount() != 0 {
		t.Errorf("budgets used: %d iterations and %d fixes, want 1 and 0 (the second automation charged once)", sess.GetIterationCount(), sess.GetFixRetryCount())
	}
}

// TestFullStoreDelaysRunsAndSaysSo fills Redis (maxmemory below use,
// noeviction) while a run streams its second turn: the run waits instead of
// failing, creating a session or starting a run is refused with a message
// that names the full state store, the operator's metric counts the
// refusals, and once there is room the run completes.
func TestFullStoreDelaysRunsAndSaysSo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := statetest.StartRedis(t, "everysec")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	full := make(chan struct{})
	var filled sync.Once
	vendor := ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
		if len(r.ToolResults()) == 0 {
			return ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_f", "execute_task_automation", map[string]any{"code": "box = 1", "description": "A box"})}}
		}
		// The store fills up as the second turn begins.
		filled.Do(func() {
			if err := rdb.ConfigSet(context.Background(), "maxmemory", "1").Err(); err != nil {
				t.Errorf("fill redis: %v", err)
			}
			close(full)
		})
		return ot.Turn{Blocks: []ot.Block{ot.Text("One box.")}}
	})
	metrics := proctest.FreeAddr(t)
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_REDIS_URL": srv.URL(), "NEXUS_LOG_LEVEL": "error", "NEXUS_METRICS_ADDR": metrics}))
	other := newSession(ctx, t, stack.Client)
	sessionID, runID := startRun(ctx, t, stack.Client)

	ended := make(chan error, 1)
	var f *followed
	go func() {
		var err error
		f, err = courier(ctx, stack.Client, sessionID, runID, committed)
		ended <- err
	}()
	select {
	case <-full:
	case err := <-ended:
		t.Fatalf("the run ended before the store filled up: %v", err)
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	// The run's writes are refused and counted until there is room.
	for telemetrytest.Value(telemetrytest.Scrape(t, metrics), "nexus_state_full_refusals_total", nil) == 0 {
		select {
		case err := <-ended:
			t.Fatalf("the run ended while the store was full instead of waiting: %v (%s)", err, f.failure())
		case <-ctx.Done():
			t.Fatal("no refusal was counted in nexus_state_full_refusals_total")
		case <-time.After(50 * time.Millisecond):
		}
	}
	wantFull := func(what string, err error) {
		t.Helper()
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "state store is full") {
			t.Errorf("%s while the store is full: %v, want ResourceExhausted saying the state store is full", what, err)
		}
	}
	_, err := stack.Client.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad", Model: ot.Model})
	wantFull("create session", err)
	_, err = stack.Client.StartRun(ctx, &agentv1.StartRunRequest{SessionId: other.GetSessionId(), Prompt: "Another box"})
	wantFull("start run", err)

	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	if msg := f.failure(); msg != "" {
		t.Fatal(msg)
	}
	// The session refused while the store was full can run now.
	if _, err := stack.Client.StartRun(ctx, &agentv1.StartRunRequest{SessionId: other.GetSessionId(), Prompt: "Another box"}); err != nil {
		t.Errorf("start run once there is room: %v", err)
	}
}

// TestRunStartRefusedInABlipFreesTheSession starts a run as the network to
// Redis goes away, either right after the session was marked busy with it or
// as that write's answer is lost: the start is refused as unavailable, and
// once Redis is back the session is free again, so the next start succeeds
// instead of finding a run that never started still active.
func TestRunStartRefusedInABlipFreesTheSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule func() *statetest.FaultRule
	}{
		// The run's state is the first thing stored under its id after the
		// session names it.
		{"before the run is stored", func() *statetest.FaultRule {
			return &statetest.FaultRule{Match: statetest.Contains("run:{"), Fault: statetest.Drop, For: 2 * time.Second}
		}},
		// The session is the first thing stored with the run's prompt.
		{"answer of the session's write lost", func() *statetest.FaultRule {
			return &statetest.FaultRule{Match: statetest.Contains("s:{", "Look-at-the-blip"), Fault: statetest.LoseAnswer, For: 2 * time.Second}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { testRunStartInABlip(t, tc.rule()) })
	}
}

func testRunStartInABlip(t *testing.T, rule *statetest.FaultRule) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := statetest.StartRedis(t, "always")
	proxy := statetest.StartFaultProxy(t, srv.Addr())
	vendor := ot.NewAnthropic(t, ot.Turn{Blocks: []ot.Block{ot.Text("Nothing to do.")}})
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_REDIS_URL": proxy.URL(), "NEXUS_LOG_LEVEL": "error"}))
	sess := newSession(ctx, t, stack.Client)
	blip := proxy.Add(rule)
	_, err := stack.Client.StartRun(ctx, &agentv1.StartRunRequest{SessionId: sess.GetSessionId(), Prompt: "Look-at-the-blip"})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("start during the blip: %v, want Unavailable", err)
	}
	<-blip.Fired()
	for {
		resp, err := stack.Client.StartRun(ctx, &agentv1.StartRunRequest{SessionId: sess.GetSessionId(), Prompt: "Look again"})
		if err == nil {
			f, err := courier(ctx, stack.Client, sess.GetSessionId(), resp.GetRunId(), committed)
			if err != nil {
				t.Fatal(err)
			}
			if msg := f.failure(); msg != "" {
				t.Fatal(msg)
			}
			return
		}
		// Unavailable while Redis is away; Aborted (the session still busy
		// with the run that never started) until it is freed.
		if c := status.Code(err); c != codes.Unavailable && c != codes.Aborted {
			t.Fatalf("start after the blip: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the session never became free for a run: %v", err)
		case <-time.After(storeBackoff):
		}
	}
}
