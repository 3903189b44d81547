package orchestrator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/proctest"
	"nexus.local/platform/telemetry/telemetrytest"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

const (
	heavy = 32000
	light = 4000
)

// testTimeout is generous: the machine running the tests may be loaded.
const testTimeout = 2 * time.Minute

func baseEnv() map[string]string {
	return map[string]string{
		"NEXUS_HEAVY_MAX_TOKENS": fmt.Sprint(heavy),
		"NEXUS_LIGHT_MAX_TOKENS": fmt.Sprint(light),
	}
}

func withEnv(extra map[string]string) map[string]string {
	env := baseEnv()
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func newSession(ctx context.Context, t *testing.T, c agentv1.OrchestratorServiceClient) *agentv1.Session {
	t.Helper()
	sess, err := c.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad", Model: ot.Model, ReviewPolicy: agentv1.ReviewPolicy_REVIEW_POLICY_NONE})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	return sess
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 8, 6))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func toolCalls(chunks []*agentv1.StreamChunk) []*agentv1.ToolCall {
	var out []*agentv1.ToolCall
	for _, c := range chunks {
		if tc := c.GetToolCall(); tc != nil {
			out = append(out, tc)
		}
	}
	return out
}

// metadataOf collects one kind of metadata, e.g.
// metadataOf(chunks, (*agentv1.Metadata).GetToolResult).
func metadataOf[T comparable](chunks []*agentv1.StreamChunk, kind func(*agentv1.Metadata) T) []T {
	var out []T
	var none T
	for _, c := range chunks {
		if md := kind(c.GetMetadata()); md != none {
			out = append(out, md)
		}
	}
	return out
}

func maxTokensSeen(v *ot.Vendor) []int {
	var out []int
	for _, r := range v.Requests() {
		out = append(out, r.MaxTokens)
	}
	return out
}

func equalInts(a, b []int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

const (
	boxScript = "import FreeCAD as App\ndoc = App.ActiveDocument\nbox = doc.addObject('Part::Box', 'Box')\nbox.Length = 10\nbox.Widht = 20\n"
	fixedLine = "box.Width = 20"
)

// TestThreeTurnRun drives a whole run through the real router and capability
// service: data collection, an automation that fails, a one-line fix that
// commits with a change report and an image, then the final message.
func TestThreeTurnRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.Thinking("I should see what the document holds first."), ot.Text("Let me look at the document."),
			ot.ToolUse("toolu_01", "execute_data_collection", map[string]any{"code": "print(len(App.ActiveDocument.Objects))", "description": "Count objects"})}},
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_02", "execute_task_automation", map[string]any{"description": "Add a 10 x 20 box", "code": boxScript})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("A typo; fixing line 5."),
			ot.ToolUse("toolu_03", "execute_task_automation", map[string]any{"description": "Fix the width", "edits": []map[string]any{{"start_line": 5, "end_line": 5, "new_text": fixedLine}}})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("I added a box, 10 by 20 mm.")}},
	)
	stack := ot.Start(t, vendor.URL, baseEnv())
	sess := newSession(ctx, t, stack.Client)
	img := pngBytes(t)
	report := "=== CHANGE REPORT ===\n1 object(s) changed:\n- Box | Part::Box"

	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Add a 10 x 20 box"},
		func(tc *agentv1.ToolCall) *hostv1.HostResult {
			switch tc.GetToolCallId() {
			case "toolu_01":
				return &hostv1.HostResult{Stdout: "3\n"}
			case "toolu_02":
				return &hostv1.HostResult{Error: &hostv1.ExecError{Type: "AttributeError", Message: "'Part::Box' has no attribute 'Widht'", Line: 5}}
			}
			return &hostv1.HostResult{Committed: true, Changes: &hostv1.Changes{Added: []string{"Box"}},
				Epilogue: &hostv1.EpilogueResult{Stdout: report, ContentHash: tc.GetEpilogueStamp().GetContentHash()},
				Images:   []*hostv1.Image{{MimeType: "image/png", Data: img, View: "isometric", Width: 8, Height: 6}}}
		})
	if err != nil {
		t.Fatalf("run: %v", err)
	}

	t.Run("chunks arrive in order with increasing seq", func(t *testing.T) {
		for i, c := range chunks {
			if c.GetSeq() != int64(i+1) {
				t.Fatalf("chunk %d has seq %d, want %d", i, c.GetSeq(), i+1)
			}
		}
		first := chunks[0].GetMetadata().GetRunStarted()
		if first == nil || first.GetModel() != ot.Model || first.GetHostApp() != "freecad" {
			t.Errorf("first chunk = %v, want RUN_STARTED with model and host", chunks[0])
		}
		last := chunks[len(chunks)-1].GetComplete()
		if last.GetText() != "I added a box, 10 by 20 mm." || last.GetStopReason() != agentv1.StopReason_STOP_REASON_END_TURN {
			t.Errorf("last chunk = %v, want complete with the final message", chunks[len(chunks)-1])
		}
		if u := chunks[len(chunks)-2].GetUsage(); !u.GetFinal() || u.GetTurns() != 4 || u.GetTotal().GetInputTokens() != 1000+1100+1200+1300 {
			t.Errorf("chunk before complete = %v, want the final usage of 4 turns", chunks[len(chunks)-2])
		}
	})

	t.Run("tool input deltas arrive before each tool call", func(t *testing.T) {
		deltas := map[string]int{}
		var sawThinking, sawMessage bool
		for _, c := range chunks {
			switch {
			case c.GetToolInputDelta() != nil:
				deltas[c.GetToolInputDelta().GetToolCallId()]++
			case c.GetToolCall() != nil:
				if n := deltas[c.GetToolCall().GetToolCallId()]; n < 2 {
					t.Errorf("tool call %s dispatched after %d input deltas, want several first", c.GetToolCall().GetToolCallId(), n)
				}
			case c.GetThinking() != nil:
				sawThinking = true
			case c.GetMessage() != nil:
				sawMessage = true
			}
		}
		if !sawThinking || !sawMessage {
			t.Errorf("thinking streamed %v, prose streamed %v; want both", sawThinking, sawMessage)
		}
	})

	calls := toolCalls(chunks)
	if len(calls) != 3 {
		t.Fatalf("got %d tool calls, want 3", len(calls))
	}
	t.Run("automation carries the merged script and the stamped epilogue", func(t *testing.T) {
		if m := calls[0].GetExecute().GetMode(); m != hostv1.Mode_MODE_READ_ONLY {
			t.Errorf("data collection mode = %v", m)
		}
		fix := calls[2]
		want := strings.Replace(strings.TrimSuffix(boxScript, "\n"), "box.Widht = 20", fixedLine, 1)
		if got := fix.GetExecute().GetCode(); got != want {
			t.Errorf("merged script =\n%s\nwant\n%s", got, want)
		}
		if fix.GetExecute().GetMode() != hostv1.Mode_MODE_TRANSACTION || fix.GetResultToken() == "" {
			t.Errorf("automation = %v, want a transaction with a result token", fix)
		}
		st := fix.GetEpilogueStamp()
		sum := sha256.Sum256([]byte(fix.GetExecute().GetEpilogue().GetCode()))
		if st.GetHostApp() != "freecad" || st.GetCapabilityVersion() == "" || st.GetContentHash() != hex.EncodeToString(sum[:]) ||
			fix.GetExecute().GetEpilogue().GetContentHash() != st.GetContentHash() {
			t.Errorf("epilogue stamp %v does not match the epilogue sent", st)
		}
		if calls[1].GetResultToken() == calls[2].GetResultToken() {
			t.Error("two calls share a result token")
		}
	})

	t.Run("the user gets every whole result", func(t *testing.T) {
		results := metadataOf(chunks, (*agentv1.Metadata).GetToolResult)
		if len(results) != 3 || results[0].GetResult().GetStdout() != "3\n" || results[2].GetResult().GetEpilogue().GetStdout() != report {
			t.Errorf("tool result metadata = %v", results)
		}
	})

	reqs := vendor.Requests()
	if len(reqs) != 4 {
		t.Fatalf("vendor got %d requests, want 4", len(reqs))
	}
	t.Run("the model sees each result", func(t *testing.T) {
		text, _ := reqs[1].ToolResults()[0].ToolResultText()
		if !strings.Contains(text, "3") {
			t.Errorf("data collection result = %q", text)
		}
		failed := reqs[2].ToolResults()[0]
		text, _ = failed.ToolResultText()
		if !failed.IsError || !strings.Contains(text, "AttributeError") || !strings.Contains(text, "rolled back") {
			t.Errorf("failed automation result = %q (is_error %v)", text, failed.IsError)
		}
		text, images := reqs[3].ToolResults()[0].ToolResultText()
		if !strings.Contains(text, "Transaction committed") || !strings.Contains(text, "CHANGE REPORT") || images != 1 {
			t.Errorf("committed automation result = %q with %d images, want the change report and one image", text, images)
		}
	})

	t.Run("phases size the output budget", func(t *testing.T) {
		// initial, post data collection, edit, verify
		if got, want := maxTokensSeen(vendor), []int{heavy, heavy, heavy, light}; !equalInts(got, want) {
			t.Errorf("max_tokens per turn = %v, want %v", got, want)
		}
		var phases []string
		for _, md := range metadataOf(chunks, (*agentv1.Metadata).GetTurnStarted) {
			phases = append(phases, md.GetPhase().String())
		}
		if got := strings.Join(phases, ","); got != "PHASE_INITIAL,PHASE_POST_DATA_COLLECTION,PHASE_EDIT,PHASE_VERIFY" {
			t.Errorf("phases = %s", got)
		}
	})

	t.Run("the session is ready for the next run", func(t *testing.T) {
		got, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetActiveRunId() != "" || got.GetPendingToolCall() != nil || got.GetFixRetryCount() != 1 || got.GetIterationCount() != 0 ||
			!got.GetLastTaskCommitted() || got.GetCurrentScript() != calls[2].GetExecute().GetCode() || got.GetLastRunId() != chunks[0].GetRunId() {
			t.Errorf("session after the run = %v", got)
		}
	})

	t.Run("the audit log names every script", func(t *testing.T) {
		d, err := stack.Client.ListDispatches(ctx, &agentv1.ListDispatchesRequest{SessionId: sess.GetSessionId()})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.GetDispatches()) != 5 {
			t.Errorf("got %d dispatches, want 5 (one read-only script, two automations with their epilogues)", len(d.GetDispatches()))
		}
	})

	t.Run("a follower replays the log after a seq", func(t *testing.T) {
		stream, err := stack.Client.StreamRunEvents(ctx, &agentv1.StreamRunEventsRequest{RunId: chunks[0].GetRunId(), AfterSeq: 3})
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for {
			c, err := stream.Recv()
			if err != nil {
				break
			}
			seqs = append(seqs, c.GetSeq())
		}
		if len(seqs) != len(chunks)-3 || seqs[0] != 4 || seqs[len(seqs)-1] != int64(len(chunks)) {
			t.Errorf("replayed seqs %v, want 4..%d", seqs, len(chunks))
		}
	})
}

// TestBudgetsAreIndependent shows that failures spend only the fix budget and
// commits only the iteration budget, and that a cap is a normal tool result.
func TestBudgetsAreIndependent(t *testing.T) {
	auto := func(id string) ot.Block {
		return ot.ToolUse(id, "execute_task_automation", map[string]any{"description": "Try", "code": "print('try " + id + "')"})
	}
	tests := []struct {
		name       string
		commit     bool
		env        map[string]string
		wantCap    string
		fix, iters int32
		// The budget the refusal is counted under, and the other one.
		budget, other string
	}{
		{name: "a stubborn failure uses only the fix budget", commit: false, env: map[string]string{"NEXUS_MAX_FIX_RETRIES": "2", "NEXUS_MAX_ITERATIONS": "1"},
			wantCap: "The fix budget is spent", fix: 2, iters: 0, budget: "fix", other: "iteration"},
		{name: "repeated commits use only the iteration budget", commit: true, env: map[string]string{"NEXUS_MAX_FIX_RETRIES": "1", "NEXUS_MAX_ITERATIONS": "2"},
			wantCap: "The iteration budget is spent", fix: 0, iters: 2, budget: "iteration", other: "fix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			// The first automation is free; two more spend the budget; the
			// fourth is refused; the fifth turn summarises.
			vendor := ot.NewAnthropic(t,
				ot.Turn{Blocks: []ot.Block{auto("toolu_a1")}}, ot.Turn{Blocks: []ot.Block{auto("toolu_a2")}},
				ot.Turn{Blocks: []ot.Block{auto("toolu_a3")}}, ot.Turn{Blocks: []ot.Block{auto("toolu_a4")}},
				ot.Turn{Blocks: []ot.Block{ot.Text("I could not finish; here is what happened.")}},
			)
			metrics := proctest.FreeAddr(t)
			env := withEnv(tt.env)
			env["NEXUS_METRICS_ADDR"] = metrics
			stack := ot.Start(t, vendor.URL, env)
			sess := newSession(ctx, t, stack.Client)
			chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Do it"},
				func(*agentv1.ToolCall) *hostv1.HostResult {
					if tt.commit {
						return &hostv1.HostResult{Committed: true, Stdout: "done"}
					}
					return &hostv1.HostResult{Error: &hostv1.ExecError{Type: "RuntimeError", Message: "still broken"}}
				})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(toolCalls(chunks)); n != 3 {
				t.Errorf("dispatched %d automations, want 3 (the capped one is not dispatched)", n)
			}
			reqs := vendor.Requests()
			if len(reqs) != 5 {
				t.Fatalf("vendor got %d requests, want 5", len(reqs))
			}
			capped := reqs[4].ToolResults()[0]
			text, _ := capped.ToolResultText()
			if !strings.Contains(text, tt.wantCap) || capped.IsError {
				t.Errorf("capped result = %q (is_error %v), want a normal result saying %q", text, capped.IsError, tt.wantCap)
			}
			if got := reqs[4].MaxTokens; got != light {
				t.Errorf("summary turn max_tokens = %d, want the light budget %d", got, light)
			}
			if c := chunks[len(chunks)-1].GetComplete(); c == nil {
				t.Errorf("run ended with %v, want complete", chunks[len(chunks)-1])
			}
			got, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()})
			if err != nil {
				t.Fatal(err)
			}
			if got.GetFixRetryCount() != tt.fix || got.GetIterationCount() != tt.iters {
				t.Errorf("fix %d, iterations %d; want %d and %d", got.GetFixRetryCount(), got.GetIterationCount(), tt.fix, tt.iters)
			}
			// The refusal is counted under the budget that was spent; the
			// run has ended, so the count is already there.
			fams := telemetrytest.Scrape(t, metrics)
			if n := telemetrytest.Value(fams, "nexus_budget_caps_reached_total", map[string]string{"budget": tt.budget}); n != 1 {
				t.Errorf("caps reached for the %s budget = %v, want 1", tt.budget, n)
			}
			if n := telemetrytest.Value(fams, "nexus_budget_caps_reached_total", map[string]string{"budget": tt.other}); n != 0 {
				t.Errorf("caps reached for the %s budget = %v, want 0", tt.other, n)
			}
		})
	}
}

// TestLargeResultReachesTheModelCapped sends 60,000 distinct rows: the model
// gets at most the cap with the cap note, the person gets every row.
func TestLargeResultReachesTheModelCapped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_big", "execute_data_collection", map[string]any{"code": "dump()", "description": "Dump every door"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("There are 60,000 doors.")}},
	)
	stack := ot.Start(t, vendor.URL, baseEnv())
	sess := newSession(ctx, t, stack.Client)
	var rows strings.Builder
	for i := range 60000 {
		fmt.Fprintf(&rows, "door %05d | Level %d\n", i, i%7)
	}
	full := rows.String()
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "List the doors"},
		func(*agentv1.ToolCall) *hostv1.HostResult { return &hostv1.HostResult{Stdout: full} })
	if err != nil {
		t.Fatal(err)
	}
	results := metadataOf(chunks, (*agentv1.Metadata).GetToolResult)
	if len(results) != 1 || results[0].GetResult().GetStdout() != full {
		t.Fatalf("the user's copy is not the whole output")
	}
	text, _ := vendor.Requests()[1].ToolResults()[0].ToolResultText()
	if !strings.HasSuffix(text, "[Note: output capped for AI processing.]") {
		t.Errorf("model's copy ends with %q, want the cap note", text[max(0, len(text)-80):])
	}
	if len(text) > 20000+500 || !strings.Contains(text, "door 00000") || strings.Contains(text, "door 59999") {
		t.Errorf("model's copy is %d characters, want the first rows capped near 20000", len(text))
	}
}
