package orchestrator_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestResultsAreRefusedUnlessPendingWithToken posts a wrong token, an unknown
// call id and a duplicate around the one good result: each is refused with
// its own code and the model sees only the good result.
func TestResultsAreRefusedUnlessPendingWithToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_q", "execute_data_collection", map[string]any{"code": "print(1)", "description": "One"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}},
	)
	stack := ot.Start(t, vendor.URL, baseEnv())
	sess := newSession(ctx, t, stack.Client)
	submit := func(callID, token, stdout string) error {
		_, err := stack.Client.SubmitToolResult(ctx, &agentv1.SubmitToolResultRequest{SessionId: sess.GetSessionId(), ToolCallId: callID, ResultToken: token,
			Result: &hostv1.HostResult{Stdout: stdout}})
		return err
	}
	if err := submit("toolu_q", "early", "too early"); status.Code(err) != codes.Aborted {
		t.Errorf("result before any call: %v, want Aborted", err)
	}
	stream, err := stack.Client.Run(ctx, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Look"})
	if err != nil {
		t.Fatal(err)
	}
	var last *agentv1.StreamChunk
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = c
		tc := c.GetToolCall()
		if tc == nil {
			continue
		}
		steps := []struct {
			name        string
			callID, tok string
			stdout      string
			want        []codes.Code
		}{
			{"wrong token", tc.GetToolCallId(), "not-the-token", "forged", []codes.Code{codes.PermissionDenied}},
			{"unknown call id", "toolu_other", tc.GetResultToken(), "stray", []codes.Code{codes.Aborted}},
			{"the pending call with its token", tc.GetToolCallId(), tc.GetResultToken(), "genuine", []codes.Code{codes.OK}},
			// The run may already have closed the mailbox after taking the
			// genuine result; either way the duplicate is refused.
			{"a second result for the same call", tc.GetToolCallId(), tc.GetResultToken(), "duplicate", []codes.Code{codes.Aborted}},
		}
		for _, s := range steps {
			if err := submit(s.callID, s.tok, s.stdout); !slices.Contains(s.want, status.Code(err)) {
				t.Errorf("%s: %v, want %v", s.name, err, s.want)
			} else if err != nil && !strings.Contains(status.Convert(err).Message(), "tool call") {
				t.Errorf("%s: message %q does not say what was refused", s.name, status.Convert(err).Message())
			}
		}
	}
	if last.GetComplete() == nil {
		t.Fatalf("run ended with %v", last)
	}
	text, _ := vendor.Requests()[1].ToolResults()[0].ToolResultText()
	if !strings.Contains(text, "genuine") || strings.Contains(text, "forged") || strings.Contains(text, "duplicate") {
		t.Errorf("model saw %q, want only the genuine result", text)
	}
}

// TestCancelLeavesTheSessionReady cancels a run suspended on a tool call: the
// run ends with usage and a cancelled error, the session has no active run,
// a second run is accepted, and its model sees "no result" for the call;
// the session keeps its first prompt as its title.
func TestCancelLeavesTheSessionReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_c", "execute_data_collection", map[string]any{"code": "slow()", "description": "Slow"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("Starting over.")}},
	)
	stack := ot.Start(t, vendor.URL, baseEnv())
	sess := newSession(ctx, t, stack.Client)
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Look"},
		func(*agentv1.ToolCall) *hostv1.HostResult {
			// The refusal comes as the stream's first receive; waiting for it
			// also makes sure the server handled the request before the cancel.
			s, err := stack.Client.Run(ctx, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "again"})
			if err == nil {
				_, err = s.Recv()
			}
			if status.Code(err) != codes.Aborted {
				t.Errorf("second run while one is active: %v, want Aborted", err)
			}
			got, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()})
			if err != nil || got.GetPendingToolCall().GetToolCallId() != "toolu_c" {
				t.Errorf("session while suspended = %v (%v), want the pending call", got, err)
			}
			if _, err := stack.Client.CancelRun(ctx, &agentv1.CancelRunRequest{SessionId: sess.GetSessionId()}); err != nil {
				t.Errorf("cancel: %v", err)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	n := len(chunks)
	if n < 2 || chunks[n-1].GetError().GetCode() != agentv1.ErrorCode_ERROR_CODE_CANCELLED || !chunks[n-2].GetUsage().GetFinal() {
		t.Fatalf("run ended with %v, want a final usage then a cancelled error", chunks[n-2:])
	}
	if md := metadataOf(chunks, (*agentv1.Metadata).GetToolResult); len(md) != 1 || !md[0].GetNoResult() {
		t.Errorf("tool result metadata = %v, want one with no_result", md)
	}
	got, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()})
	if err != nil || got.GetActiveRunId() != "" || got.GetPendingToolCall() != nil {
		t.Fatalf("session after cancel = %v (%v), want no active run or pending call", got, err)
	}
	second, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Start over"}, nil)
	if err != nil || len(second) == 0 || second[len(second)-1].GetComplete() == nil {
		t.Fatalf("second run: %v, chunks %v", err, second)
	}
	req := vendor.Requests()[1]
	lastMsg := req.Messages[len(req.Messages)-1]
	text, _ := lastMsg.Content[0].ToolResultText()
	if lastMsg.Role != "user" || lastMsg.Content[0].Type != "tool_result" || !strings.HasPrefix(text, "No result") ||
		lastMsg.Content[len(lastMsg.Content)-1].Text != "Start over" {
		t.Errorf("second run's last message = %+v, want the no-result tool result and then the prompt", lastMsg)
	}
	// A session list titles it by the first prompt, and shows the last.
	got, err = stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()})
	if err != nil || got.GetFirstPrompt() != "Look" || got.GetLastPrompt() != "Start over" {
		t.Errorf("session after two runs: first prompt %q, last %q (%v); want \"Look\" and \"Start over\"", got.GetFirstPrompt(), got.GetLastPrompt(), err)
	}
}

// TestTimeoutIsNoResult lets a call go unanswered past the timeout: the run
// goes on and the model is told there was no result.
func TestTimeoutIsNoResult(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_t", "execute_data_collection", map[string]any{"code": "hang()", "description": "Hang"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("The host did not answer.")}},
	)
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_TOOL_RESULT_TIMEOUT": "50ms"}))
	sess := newSession(ctx, t, stack.Client)
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Look"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if chunks[len(chunks)-1].GetComplete() == nil {
		t.Fatalf("run ended with %v", chunks[len(chunks)-1])
	}
	tr := vendor.Requests()[1].ToolResults()[0]
	text, _ := tr.ToolResultText()
	if !tr.IsError || !strings.HasPrefix(text, "No result: the host did not answer within 50ms") {
		t.Errorf("model saw %q, want no result", text)
	}
}

// TestLightTurnCutInToolIsRedoneHeavy cuts the verify turn (light budget) in
// the middle of a tool call: it is redone once with the heavy budget and a
// metadata chunk says so.
func TestLightTurnCutInToolIsRedoneHeavy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cut := ot.ToolUse("toolu_v1", "execute_task_automation", map[string]any{"description": "Another pass", "code": strings.Repeat("x = 1\n", 40)})
	cut.CutToolInput = true
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_a", "execute_task_automation", map[string]any{"description": "Make", "code": "make()"})}},
		ot.Turn{Blocks: []ot.Block{cut}, StopReason: "max_tokens"},
		ot.Turn{Blocks: []ot.Block{ot.Text("It looks right.")}},
	)
	stack := ot.Start(t, vendor.URL, baseEnv())
	sess := newSession(ctx, t, stack.Client)
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Make it"},
		func(*agentv1.ToolCall) *hostv1.HostResult { return &hostv1.HostResult{Committed: true} })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := maxTokensSeen(vendor), []int{heavy, light, heavy}; !equalInts(got, want) {
		t.Errorf("max_tokens per request = %v, want %v", got, want)
	}
	retried := metadataOf(chunks, (*agentv1.Metadata).GetTurnRetried)
	if len(retried) != 1 || retried[0].GetMaxTokens() != heavy || retried[0].GetPhase() != agentv1.Phase_PHASE_VERIFY {
		t.Errorf("retry metadata = %v, want one naming the heavy budget", retried)
	}
	if chunks[len(chunks)-1].GetComplete().GetText() != "It looks right." {
		t.Errorf("run ended with %v", chunks[len(chunks)-1])
	}
}

// TestSuspiciousMergeRunsWithItsNote sends an edit that changes indentation:
// the merged script still runs, and the concern reaches the courier and the
// model.
func TestSuspiciousMergeRunsWithItsNote(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	script := "for o in doc.Objects:\n    print(o.Name)\n"
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_m1", "execute_task_automation", map[string]any{"description": "List", "code": script})}},
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_m2", "execute_task_automation", map[string]any{"description": "Label",
			"edits": []map[string]any{{"start_line": 2, "end_line": 2, "new_text": "print(o.Label)"}}})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}},
	)
	stack := ot.Start(t, vendor.URL, baseEnv())
	sess := newSession(ctx, t, stack.Client)
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "List"},
		func(tc *agentv1.ToolCall) *hostv1.HostResult {
			if tc.GetToolCallId() == "toolu_m1" {
				return &hostv1.HostResult{Error: &hostv1.ExecError{Type: "NameError", Message: "doc"}}
			}
			return &hostv1.HostResult{Error: &hostv1.ExecError{Type: "IndentationError", Message: "expected an indented block", Line: 2}}
		})
	if err != nil {
		t.Fatal(err)
	}
	calls := toolCalls(chunks)
	if len(calls) != 2 || calls[1].GetExecute().GetCode() != "for o in doc.Objects:\nprint(o.Label)" {
		t.Fatalf("merged script = %q, want it run as merged", calls[len(calls)-1].GetExecute().GetCode())
	}
	if notes := calls[1].GetMergeNotes(); len(notes) != 1 || !strings.Contains(notes[0], "indentation") {
		t.Errorf("merge notes = %q, want the indentation concern", notes)
	}
	text, _ := vendor.Requests()[2].ToolResults()[0].ToolResultText()
	if !strings.Contains(text, "IndentationError") || !strings.Contains(text, "Merge notes") || !strings.Contains(text, "indentation") {
		t.Errorf("model saw %q, want the real error and the merge note", text)
	}
}

// TestCompactionSummarizesEarlierTurns sets the compaction threshold low:
// after three data collections the earlier turns are summarised locally, the
// recent ones kept verbatim, and the person sees a "context summarized" chunk.
func TestCompactionSummarizesEarlierTurns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	dc := func(id string) ot.Turn {
		return ot.Turn{Blocks: []ot.Block{ot.ToolUse(id, "execute_data_collection", map[string]any{"code": "print('" + id + "')", "description": id})}}
	}
	vendor := ot.NewAnthropic(t, dc("toolu_d1"), dc("toolu_d2"), dc("toolu_d3"),
		ot.Turn{Blocks: []ot.Block{ot.Text("SUMMARY: the person asked to look; three lookups ran.")}},
		ot.Turn{Blocks: []ot.Block{ot.Text("All looked up.")}},
	)
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_COMPACT_AT": "0.0001"}))
	sess := newSession(ctx, t, stack.Client)
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Look three times"},
		func(tc *agentv1.ToolCall) *hostv1.HostResult {
			return &hostv1.HostResult{Stdout: "out of " + tc.GetToolCallId()}
		})
	if err != nil {
		t.Fatal(err)
	}
	if md := metadataOf(chunks, (*agentv1.Metadata).GetContextSummarized); len(md) != 1 || !strings.Contains(md[0].GetText(), "summarized") {
		t.Errorf("context summarized metadata = %v, want one", md)
	}
	for _, c := range chunks {
		if strings.Contains(c.GetMessage().GetText(), "SUMMARY") {
			t.Error("the summary turn was streamed to the person")
		}
	}
	reqs := vendor.Requests()
	if len(reqs) != 5 {
		t.Fatalf("vendor got %d requests, want 5", len(reqs))
	}
	final := reqs[4]
	if !strings.Contains(string(final.Raw), "SUMMARY: the person asked") || strings.Contains(string(final.Raw), "Look three times") ||
		!strings.Contains(string(final.Raw), "out of toolu_d3") || len(final.Messages) != 5 {
		t.Errorf("request after compaction has %d messages: %s", len(final.Messages), final.Raw)
	}
}

// TestSessionsBelongToTheirCreator: for anyone else every session method
// answers NotFound, never PermissionDenied.
func TestSessionsBelongToTheirCreator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropic(t, ot.Turn{Blocks: []ot.Block{ot.Text("Hi.")}})
	stack := ot.Start(t, vendor.URL, baseEnv())
	alice, mallory := ot.As(ctx, "alice"), ot.As(ctx, "mallory")
	sess := newSession(alice, t, stack.Client)
	chunks, err := ot.RunAndServe(alice, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Hi"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := sess.GetSessionId()
	calls := map[string]func() error{
		"GetSession": func() error {
			_, err := stack.Client.GetSession(mallory, &agentv1.GetSessionRequest{SessionId: id})
			return err
		},
		"Run": func() error {
			s, err := stack.Client.Run(mallory, &agentv1.RunRequest{SessionId: id, Prompt: "x"})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		},
		"SubmitToolResult": func() error {
			_, err := stack.Client.SubmitToolResult(mallory, &agentv1.SubmitToolResultRequest{SessionId: id, ToolCallId: "a", ResultToken: "b", Result: &hostv1.HostResult{}})
			return err
		},
		"CancelRun": func() error {
			_, err := stack.Client.CancelRun(mallory, &agentv1.CancelRunRequest{SessionId: id})
			return err
		},
		"ListDispatches": func() error {
			_, err := stack.Client.ListDispatches(mallory, &agentv1.ListDispatchesRequest{SessionId: id})
			return err
		},
		"StreamRunEvents": func() error {
			s, err := stack.Client.StreamRunEvents(mallory, &agentv1.StreamRunEventsRequest{RunId: chunks[0].GetRunId()})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			if err := call(); status.Code(err) != codes.NotFound {
				t.Errorf("%s as another user: %v, want NotFound", name, err)
			}
		})
	}
	list, err := stack.Client.ListSessions(mallory, &agentv1.ListSessionsRequest{})
	if err != nil || len(list.GetSessions()) != 0 {
		t.Errorf("another user's list = %v (%v), want empty", list, err)
	}
	if _, err := stack.Client.GetSession(alice, &agentv1.GetSessionRequest{SessionId: id}); err != nil {
		t.Errorf("the owner's GetSession: %v", err)
	}
}
