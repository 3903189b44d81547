package modelrouter_test

import (
	"encoding/json"
	"strings"
	"testing"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/modelrouter/routertest"
)

const demoPrompt = "Build a small room: four walls on a level, with a door and a window."

// TestReplayDemo plays the demo cassette through the router turn by turn, the
// way the orchestrator drives it, with nothing configured.
func TestReplayDemo(t *testing.T) {
	r := start(t, map[string]string{})
	ctx := testCtx(t)
	models, err := r.Client.ListModels(ctx, &modelv1.ListModelsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if models.DefaultModel != "replay/demo" {
		t.Fatalf("default model = %q, want replay/demo when no vendor is configured", models.DefaultModel)
	}

	steps := []struct {
		tool   string
		input  []string // keys the call's input must have
		result string
		isErr  bool
	}{
		// The results as the orchestrator words them (services/orchestrator/call/shape.go).
		{"execute_data_collection", []string{"code", "description"}, "The read-only script ran.\n\nOutput:\nDocument Room: 0 objects\n", false},
		{"execute_task_automation", []string{"code", "description"}, "Transaction rolled back: the document is exactly as it was before this script.\n\nThe script printed nothing.\n\nError: NameError: name 'wals' is not defined (line 27)\n", true},
		{"execute_task_automation", []string{"edits", "description"}, "Transaction committed.\n\nOutput:\nBuilt 4 walls on Ground level with a door and a window.\n", false},
	}
	msgs := []*modelv1.Message{userText(demoPrompt)}
	ids := map[string]bool{}
	for i, step := range steps {
		turn, err := routertest.Collect(ctx, r.Client, &modelv1.StreamTurnRequest{Messages: msgs, Tools: tools(), SessionId: "demo"})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if turn.End == nil {
			t.Fatalf("turn %d: no end (%v)", i, turn.Error)
		}
		if turn.End.Model != "replay/demo" || turn.End.StopReason != modelv1.StopReason_STOP_REASON_TOOL_USE {
			t.Errorf("turn %d: model %q stop %v", i, turn.End.Model, turn.End.StopReason)
		}
		if turn.Thinking == "" || turn.Text == "" || countKind(turn.Events, "tool_input") < 2 {
			t.Errorf("turn %d: thinking %q text %q, %d tool input deltas", i, turn.Thinking, turn.Text, countKind(turn.Events, "tool_input"))
		}
		call := firstToolUse(t, turn.End.Message)
		if call.Name != step.tool || ids[call.Id] {
			t.Errorf("turn %d: call %s %s, want a new id for %s", i, call.Id, call.Name, step.tool)
		}
		ids[call.Id] = true
		sameJSON(t, turn.ToolInput, call.InputJson)
		var input map[string]any
		if err := json.Unmarshal([]byte(call.InputJson), &input); err != nil {
			t.Fatal(err)
		}
		for _, k := range step.input {
			if input[k] == nil {
				t.Errorf("turn %d: input has no %q: %v", i, k, input)
			}
		}
		res := toolResult(call.Id, call.Name, step.result)
		res.Content[0].GetToolResult().IsError = step.isErr
		msgs = append(msgs, turn.End.Message, res)
	}
	final, err := routertest.Collect(ctx, r.Client, &modelv1.StreamTurnRequest{Messages: msgs, Tools: tools()})
	if err != nil || final.End == nil {
		t.Fatalf("final turn: %v %v", err, final)
	}
	if final.End.StopReason != modelv1.StopReason_STOP_REASON_END_TURN || !strings.Contains(final.Text, "The room is built") {
		t.Errorf("final turn: stop %v text %q", final.End.StopReason, final.Text)
	}

	// A prompt the cassette does not know gets directions instead.
	other, err := routertest.Collect(ctx, r.Client, &modelv1.StreamTurnRequest{Messages: []*modelv1.Message{userText("Design a bridge.")}})
	if err != nil || other.End == nil {
		t.Fatalf("unknown prompt: %v %v", err, other)
	}
	if !strings.Contains(other.Text, "ANTHROPIC_API_KEY") || other.End.StopReason != modelv1.StopReason_STOP_REASON_END_TURN {
		t.Errorf("unknown prompt answered %q", other.Text)
	}
}

// TestListModels shows availability and the default model following the
// configuration.
func TestListModels(t *testing.T) {
	cases := []struct {
		name        string
		env         map[string]string
		wantDefault string
		available   []string
		unavailable []string
	}{
		{"nothing configured", map[string]string{}, "replay/demo",
			[]string{"replay/demo"}, []string{"anthropic/claude-sonnet-4-5", "openai/gpt-5", "gemini/gemini-2.5-pro"}},
		{"an OpenAI key", map[string]string{"OPENAI_API_KEY": "k"}, "openai/gpt-5.1",
			[]string{"openai/gpt-5", "replay/demo"}, []string{"anthropic/claude-sonnet-4-5"}},
		{"a default model", map[string]string{"GEMINI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "NEXUS_DEFAULT_MODEL": "gemini/gemini-2.5-flash"}, "gemini/gemini-2.5-flash",
			[]string{"gemini/gemini-2.5-flash", "anthropic/claude-haiku-4-5"}, []string{"openai/gpt-5"}},
		{"a compatible server", map[string]string{"NEXUS_OPENAI_COMPAT_BASE_URL": "http://127.0.0.1:1/v1", "NEXUS_OPENAI_COMPAT_MODELS": "llama3.2,qwen3:8b"}, "openai-compat/llama3.2",
			[]string{"openai-compat/llama3.2", "openai-compat/qwen3:8b"}, []string{"gemini/gemini-2.5-pro"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, tc.env)
			resp, err := r.Client.ListModels(testCtx(t), &modelv1.ListModelsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if resp.DefaultModel != tc.wantDefault {
				t.Errorf("default = %q, want %q", resp.DefaultModel, tc.wantDefault)
			}
			byID := map[string]*modelv1.ModelInfo{}
			for _, m := range resp.Models {
				byID[m.Id] = m
				if m.ContextWindow <= 0 || m.MaxOutputTokens <= 0 || m.Vendor == modelv1.Vendor_VENDOR_UNSPECIFIED || m.Pricing == nil {
					t.Errorf("incomplete entry %v", m)
				}
			}
			for _, id := range tc.available {
				if m := byID[id]; m == nil || !m.Available {
					t.Errorf("%s should be available: %v", id, m)
				}
			}
			for _, id := range tc.unavailable {
				if m := byID[id]; m == nil || m.Available || m.Note == "" {
					t.Errorf("%s should be unavailable with a note: %v", id, m)
				}
			}
		})
	}
}
