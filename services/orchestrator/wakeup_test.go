package orchestrator_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
	"nexus.local/services/orchestrator/state/statetest"
)

// leaseOwner reads who holds a run's lease straight from Redis: "" while the
// run is suspended.
func leaseOwner(ctx context.Context, rdb *redis.Client, runID string) (string, error) {
	v, err := rdb.HGet(ctx, "nexus:{leases}:info", runID).Result()
	if err != nil {
		return "", err
	}
	owner, _, _ := strings.Cut(v, "\n")
	return owner, nil
}

// TestResultAcceptedBeforeABlipWakesItsRun posts the result of a suspended
// run's call; Redis accepts it, and the network to Redis goes away for two
// seconds just as the wake-up that follows is sent, so it is lost. The run
// still ends soon after, not at its tool-result deadline.
func TestResultAcceptedBeforeABlipWakesItsRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := statetest.StartRedis(t, "always")
	proxy := statetest.StartFaultProxy(t, srv.Addr())
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_w", "execute_data_collection", map[string]any{"code": "print(1)", "description": "Look"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("Seen.")}},
	)
	// The deadline is far beyond the test's patience: only a wake-up ends it.
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_REDIS_URL": proxy.URL(), "NEXUS_LOG_LEVEL": "error", "NEXUS_TOOL_RESULT_TIMEOUT": "30m"}))
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	sessionID, runID := startRun(ctx, t, stack.Client)
	var blip *statetest.FaultRule
	f, err := courier(ctx, stack.Client, sessionID, runID, func(tc *agentv1.ToolCall) *hostv1.HostResult {
		// The run has given its lease up, so nothing but the wake-up (or
		// the deadline) brings it back.
		for {
			if owner, err := leaseOwner(ctx, rdb, runID); err == nil && owner == "" {
				break
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(10 * time.Millisecond):
			}
		}
		// The first command about the run's lease after the result is
		// accepted is its wake-up.
		blip = proxy.Add(&statetest.FaultRule{Match: statetest.Contains("{leases}:info", runID), Fault: statetest.Drop, For: 2 * time.Second})
		return &hostv1.HostResult{Stdout: "seen"}
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-blip.Fired():
	default:
		t.Fatal("the blip never came; the test did not test it")
	}
	if msg := f.failure(); msg != "" {
		t.Fatal(msg)
	}
}

// TestResultWhoseAnswerWasLostWakesItsRun posts a result once: Redis stores
// it, the answer is lost and Redis stays away for two seconds, so the
// courier hears Unavailable and, here, never posts again. The run still
// takes its result up once Redis is back, not at its tool-result deadline.
func TestResultWhoseAnswerWasLostWakesItsRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := statetest.StartRedis(t, "always")
	proxy := statetest.StartFaultProxy(t, srv.Addr())
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_l", "execute_data_collection", map[string]any{"code": "print(1)", "description": "Look"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("Seen.")}},
	)
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_REDIS_URL": proxy.URL(), "NEXUS_LOG_LEVEL": "error", "NEXUS_TOOL_RESULT_TIMEOUT": "30m"}))
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	sessionID, runID := startRun(ctx, t, stack.Client)
	stream, err := stack.Client.StreamRunEvents(ctx, &agentv1.StreamRunEventsRequest{RunId: runID})
	if err != nil {
		t.Fatal(err)
	}
	var last *agentv1.StreamChunk
	posted := false
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("follow the run: %v", err)
		}
		last = c
		tc := c.GetToolCall()
		if tc == nil || posted {
			continue
		}
		posted = true
		for {
			if owner, err := leaseOwner(ctx, rdb, runID); err == nil && owner == "" {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatal("the run never suspended")
			case <-time.After(10 * time.Millisecond):
			}
		}
		// This Redis has not run the delivery script yet, so the client's
		// first try (EVALSHA) is answered NOSCRIPT and its second (EVAL)
		// stores the result: that is the answer to lose.
		stored := statetest.Contains("stored-but-unanswered")
		lost := proxy.Add(&statetest.FaultRule{Match: func(b []byte) bool { return stored(b) && !bytes.Contains(b, []byte("evalsha")) },
			Fault: statetest.LoseAnswer, For: 2 * time.Second})
		_, err = stack.Client.SubmitToolResult(ctx, &agentv1.SubmitToolResultRequest{SessionId: sessionID, ToolCallId: tc.GetToolCallId(), ResultToken: tc.GetResultToken(),
			Result: &hostv1.HostResult{Stdout: "stored-but-unanswered"}})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("the post whose answer was lost: %v, want Unavailable", err)
		}
		<-lost.Fired()
	}
	if last.GetComplete() == nil {
		t.Fatalf("the run ended with %v, want complete", last)
	}
}
