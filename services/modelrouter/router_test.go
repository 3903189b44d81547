package modelrouter_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/modelrouter/routertest"
)

const wallArgs = `{"description":"Add a wall","code":"import Arch\nArch.makeWall(length=4000)"}`

// vendorCase is one vendor's recorded turn and what the router must make of it.
type vendorCase struct {
	name          string
	model         string
	env           func(url string) map[string]string
	first, second string // recorded streams for the tool turn and the answer after it
	toolDeltas    int    // tool_input_delta events the recorded stream yields
	thinking      string
	usage         *modelv1.Usage
	cost          float64
	maxPx         int
	// checkNext inspects the request that carried the tool result back.
	checkNext func(t *testing.T, v *vendorServer, body map[string]any, call *modelv1.ToolUseBlock)
}

func vendorCases(t *testing.T) []vendorCase {
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(catalog, []byte(`models:
  - id: openai-compat/qwen3:8b
    display_name: Qwen3 8B
    context_window: 40960
    max_output_tokens: 8192
    vision_max_px: 1024
    pricing: {input: 0.1, output: 0.4}
    features: [tools, vision]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return []vendorCase{
		{
			name: "anthropic", model: "anthropic/claude-sonnet-4-5",
			env: func(u string) map[string]string {
				return map[string]string{"ANTHROPIC_BASE_URL": u, "ANTHROPIC_API_KEY": "sk-ant-test"}
			},
			first: "anthropic_thinking_tool.sse", second: "anthropic_text.sse", toolDeltas: 3,
			thinking: "The user wants a wall. I should write a script that adds one.",
			usage:    &modelv1.Usage{InputTokens: 1423, OutputTokens: 89, CacheWriteTokens: 2048},
			cost:     (1423*3 + 89*15 + 2048*3.75) / 1e6, maxPx: 1568,
			checkNext: func(t *testing.T, v *vendorServer, b map[string]any, call *modelv1.ToolUseBlock) {
				r := v.requests()[1]
				if r.path != "/v1/messages" || r.header.Get("x-api-key") != "sk-ant-test" || r.header.Get("anthropic-version") != "2023-06-01" {
					t.Errorf("request %s with key %q version %q", r.path, r.header.Get("x-api-key"), r.header.Get("anthropic-version"))
				}
				if at(t, b, "stream") != true || str(t, b, "model") != "claude-sonnet-4-5" {
					t.Errorf("stream/model = %v/%v", b["stream"], b["model"])
				}
				// Cache breakpoints: system prompt, last tool, trailing message.
				if str(t, b, "system", 0, "cache_control", "type") != "ephemeral" {
					t.Error("no cache breakpoint on the system prompt")
				}
				if str(t, b, "tools", -1, "cache_control", "type") != "ephemeral" || at(t, b, "tools", 0).(map[string]any)["cache_control"] != nil {
					t.Error("cache breakpoint must be on the last tool only")
				}
				if str(t, b, "tools", 1, "name") != "execute_task_automation" || str(t, b, "tools", 1, "input_schema", "type") != "object" {
					t.Errorf("tool declaration = %v", at(t, b, "tools", 1))
				}
				if str(t, b, "messages", -1, "content", -1, "cache_control", "type") != "ephemeral" {
					t.Error("no cache breakpoint on the trailing message")
				}
				if str(t, b, "thinking", "type") != "enabled" {
					t.Error("thinking is not enabled")
				}
				// The thinking block comes back first, with its signature, unchanged.
				if str(t, b, "messages", 1, "content", 0, "type") != "thinking" ||
					str(t, b, "messages", 1, "content", 0, "signature") != "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" ||
					str(t, b, "messages", 1, "content", 0, "thinking") != "The user wants a wall. I should write a script that adds one." {
					t.Errorf("echoed thinking = %v", at(t, b, "messages", 1, "content", 0))
				}
				if str(t, b, "messages", 1, "content", 2, "type") != "tool_use" || str(t, b, "messages", 1, "content", 2, "id") != call.Id {
					t.Errorf("echoed tool_use = %v", at(t, b, "messages", 1, "content", 2))
				}
				res := at(t, b, "messages", 2, "content", 0)
				if str(t, res, "type") != "tool_result" || str(t, res, "tool_use_id") != call.Id || str(t, res, "content", 0, "text") != "Wall added." {
					t.Errorf("tool_result = %v", res)
				}
				if str(t, res, "content", 1, "type") != "image" || str(t, res, "content", 1, "source", "media_type") != "image/png" {
					t.Errorf("the image must sit inside the tool_result: %v", at(t, res, "content", 1))
				}
				// Anthropic's area ceiling (about 1.15 MP) binds before its 1568 px side.
				if w, h := imageSize(t, str(t, res, "content", 1, "source", "data")); w != 1356 || h != 848 || w*h > 1150000 {
					t.Errorf("image sent as %dx%d, want 1356x848 (within %d pixels)", w, h, 1150000)
				}
			},
		},
		{
			name: "openai", model: "openai/gpt-5",
			env: func(u string) map[string]string {
				return map[string]string{"OPENAI_BASE_URL": u, "OPENAI_API_KEY": "sk-test"}
			},
			first: "openai_reasoning_tool.sse", second: "openai_text.sse", toolDeltas: 3,
			thinking: "**Planning the wall**\n\nThe user wants a wall, so I will write a script.",
			usage:    &modelv1.Usage{InputTokens: 568, CacheReadTokens: 2944, OutputTokens: 415, ReasoningTokens: 320},
			cost:     (568*1.25 + 415*10 + 2944*0.125) / 1e6, maxPx: 2048,
			checkNext: func(t *testing.T, v *vendorServer, b map[string]any, call *modelv1.ToolUseBlock) {
				r := v.requests()[1]
				if r.path != "/responses" || r.header.Get("Authorization") != "Bearer sk-test" {
					t.Errorf("request %s with auth %q", r.path, r.header.Get("Authorization"))
				}
				if at(t, b, "store") != false || str(t, b, "include", 0) != "reasoning.encrypted_content" || str(t, b, "prompt_cache_key") != "session-1" {
					t.Errorf("store/include/prompt_cache_key = %v/%v/%v", b["store"], b["include"], b["prompt_cache_key"])
				}
				if str(t, b, "instructions") != "You automate FreeCAD." || str(t, b, "reasoning", "summary") != "auto" {
					t.Errorf("instructions/reasoning = %v/%v", b["instructions"], b["reasoning"])
				}
				if str(t, b, "tools", 1, "type") != "function" || str(t, b, "tools", 1, "name") != "execute_task_automation" || str(t, b, "tools", 1, "parameters", "type") != "object" {
					t.Errorf("tool declaration = %v", at(t, b, "tools", 1))
				}
				var types []string
				for i := range length(t, b, "input") {
					item := at(t, b, "input", i).(map[string]any)
					ty, _ := item["type"].(string)
					types = append(types, ty+":"+strOr(item["role"]))
				}
				want := []string{"message:user", "reasoning:", "message:assistant", "function_call:", "function_call_output:", "message:user"}
				if !slices.Equal(types, want) {
					t.Fatalf("input items = %v, want %v", types, want)
				}
				if str(t, b, "input", 1, "encrypted_content") != "gAAAAABouePT8kq2Zr1cXw9Lq0VfYx3h" || str(t, b, "input", 1, "id") != "rs_68b9e3a2f3b48193b2b5b6a0b0d1c9e40c2a" {
					t.Errorf("reasoning item = %v", at(t, b, "input", 1))
				}
				if str(t, b, "input", 3, "call_id") != call.Id || str(t, b, "input", 3, "id") != "fc_68b9e3a5c6b08193b9a0c1d2e3f4a5b60c2a" {
					t.Errorf("function_call = %v", at(t, b, "input", 3))
				}
				sameJSON(t, str(t, b, "input", 3, "arguments"), wallArgs)
				if str(t, b, "input", 4, "call_id") != call.Id || str(t, b, "input", 4, "output") != "Wall added." {
					t.Errorf("function_call_output = %v", at(t, b, "input", 4))
				}
				if str(t, b, "input", 5, "content", 1, "type") != "input_image" {
					t.Errorf("images must follow in a user message: %v", at(t, b, "input", 5))
				}
				// GPT-5 at detail "high" fits the image in 2048 px and scales
				// its short side to 768 px; the request says that detail.
				if w, h := imageSize(t, str(t, b, "input", 5, "content", 1, "image_url")); w != 1229 || h != 768 {
					t.Errorf("image sent as %dx%d, want 1229x768 (in 2048 px, short side 768)", w, h)
				}
				if d := str(t, b, "input", 5, "content", 1, "detail"); d != "high" {
					t.Errorf("image sent with detail %q, want the high it was sized for", d)
				}
			},
		},
		{
			name: "gemini", model: "gemini/gemini-2.5-pro",
			env: func(u string) map[string]string {
				return map[string]string{"GOOGLE_GEMINI_BASE_URL": u, "GEMINI_API_KEY": "gm-test"}
			},
			first: "gemini_thought_tool.sse", second: "gemini_text.sse", toolDeltas: 1,
			thinking: "**Planning the wall**\n\nThe user wants a wall, so I will write a script.",
			usage:    &modelv1.Usage{InputTokens: 806, CacheReadTokens: 1024, OutputTokens: 360, ReasoningTokens: 308},
			cost:     (806*1.25 + 360*10 + 1024*0.125) / 1e6, maxPx: 3072,
			checkNext: func(t *testing.T, v *vendorServer, b map[string]any, call *modelv1.ToolUseBlock) {
				r := v.requests()[1]
				if r.path != "/v1beta/models/gemini-2.5-pro:streamGenerateContent" || r.query != "alt=sse" || r.header.Get("x-goog-api-key") != "gm-test" {
					t.Errorf("request %s?%s with key %q", r.path, r.query, r.header.Get("x-goog-api-key"))
				}
				if str(t, b, "systemInstruction", "parts", 0, "text") != "You automate FreeCAD." || at(t, b, "generationConfig", "thinkingConfig", "includeThoughts") != true {
					t.Errorf("system/thinking config = %v/%v", b["systemInstruction"], b["generationConfig"])
				}
				decl := at(t, b, "tools", 0, "functionDeclarations", 1)
				if str(t, decl, "name") != "execute_task_automation" || str(t, decl, "parametersJsonSchema", "type") != "object" {
					t.Errorf("function declaration = %v", decl)
				}
				if str(t, b, "contents", 1, "role") != "model" {
					t.Fatalf("contents[1] = %v", at(t, b, "contents", 1))
				}
				// The call comes back whole with its signature on the same part.
				n := length(t, b, "contents", 1, "parts")
				fc := at(t, b, "contents", 1, "parts", n-1)
				if str(t, fc, "thoughtSignature") != "CiQB0e2Kb7bQ5Vh1Yw6yQdX9kPbOq2VvG4r3YxWl" || str(t, fc, "functionCall", "name") != "execute_task_automation" {
					t.Errorf("function call part = %v", fc)
				}
				if str(t, b, "contents", 1, "parts", n-2, "text") != "I'll add the wall now." {
					t.Errorf("prose part = %v", at(t, b, "contents", 1, "parts", n-2))
				}
				fr := at(t, b, "contents", 2, "parts", 0, "functionResponse")
				if str(t, fr, "name") != "execute_task_automation" || str(t, fr, "response", "output") != "Wall added." {
					t.Errorf("functionResponse = %v", fr)
				}
				img := at(t, b, "contents", 2, "parts", 2, "inlineData")
				if w, h := imageSize(t, str(t, img, "data")); w != 3072 || h != 1920 {
					t.Errorf("image sent as %dx%d, want 3072x1920", w, h)
				}
			},
		},
		{
			name: "openai-compat", model: "openai-compat/qwen3:8b",
			env: func(u string) map[string]string {
				return map[string]string{"NEXUS_OPENAI_COMPAT_BASE_URL": u + "/v1", "NEXUS_MODEL_CATALOG": catalog}
			},
			first: "compat_reasoning_tool.sse", second: "compat_text.sse", toolDeltas: 2,
			thinking: "The user wants a wall, so I will write a script.",
			usage:    &modelv1.Usage{InputTokens: 1210, OutputTokens: 96},
			cost:     (1210*0.1 + 96*0.4) / 1e6, maxPx: 1024,
			checkNext: func(t *testing.T, v *vendorServer, b map[string]any, call *modelv1.ToolUseBlock) {
				r := v.requests()[1]
				if r.path != "/v1/chat/completions" || r.header.Get("Authorization") != "" {
					t.Errorf("request %s with auth %q", r.path, r.header.Get("Authorization"))
				}
				if str(t, b, "model") != "qwen3:8b" || at(t, b, "stream_options", "include_usage") != true {
					t.Errorf("model/stream_options = %v/%v", b["model"], b["stream_options"])
				}
				if str(t, b, "tools", 1, "function", "name") != "execute_task_automation" || str(t, b, "tools", 1, "function", "parameters", "type") != "object" {
					t.Errorf("tool declaration = %v", at(t, b, "tools", 1))
				}
				var roles []string
				for i := range length(t, b, "messages") {
					roles = append(roles, str(t, b, "messages", i, "role"))
				}
				if want := []string{"system", "user", "assistant", "tool", "user"}; !slices.Equal(roles, want) {
					t.Fatalf("roles = %v, want %v", roles, want)
				}
				if str(t, b, "messages", 2, "tool_calls", 0, "id") != call.Id {
					t.Errorf("assistant tool call = %v", at(t, b, "messages", 2))
				}
				if str(t, b, "messages", 3, "tool_call_id") != call.Id || str(t, b, "messages", 3, "content") != "Wall added." {
					t.Errorf("tool message = %v", at(t, b, "messages", 3))
				}
				if w, h := imageSize(t, str(t, b, "messages", 4, "content", 1, "image_url", "url")); w != 1024 || h != 640 {
					t.Errorf("image sent as %dx%d, want 1024x640", w, h)
				}
			},
		},
	}
}

func strOr(v any) string {
	s, _ := v.(string)
	return s
}

// TestVendorTurns streams each vendor's recorded tool turn through the real
// gRPC router, then sends the tool result back and inspects that request.
func TestVendorTurns(t *testing.T) {
	img := wideImage(t)
	for _, tc := range vendorCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			v := newVendor(t, reply{file: tc.first}, reply{file: tc.second})
			r := start(t, tc.env(v.url))
			ctx := testCtx(t)
			req := &modelv1.StreamTurnRequest{
				Model: tc.model, System: "You automate FreeCAD.", Tools: tools(), MaxTokens: 8000, SessionId: "session-1",
				Messages: []*modelv1.Message{userText("Add a 4 m wall.")},
			}
			turn, err := routertest.Collect(ctx, r.Client, req)
			if err != nil {
				t.Fatalf("first turn: %v", err)
			}
			if got := kinds(turn.Events); !slices.Equal(got, []string{"thinking", "text", "tool_input", "end"}) {
				t.Errorf("event kinds = %v", got)
			}
			if turn.Thinking != tc.thinking || turn.Text != "I'll add the wall now." {
				t.Errorf("thinking %q text %q", turn.Thinking, turn.Text)
			}
			if n := countKind(turn.Events, "tool_input"); n != tc.toolDeltas {
				t.Errorf("%d tool_input_delta events, want %d", n, tc.toolDeltas)
			}
			sameJSON(t, turn.ToolInput, wallArgs)
			end := turn.End
			if end == nil {
				t.Fatalf("no end event; error %v", turn.Error)
			}
			if end.StopReason != modelv1.StopReason_STOP_REASON_TOOL_USE || end.Model != tc.model {
				t.Errorf("stop %v model %q", end.StopReason, end.Model)
			}
			cost := end.Usage.GetCostUsd()
			end.Usage.CostUsd = 0
			if !proto.Equal(end.Usage, tc.usage) {
				t.Errorf("usage = %v, want %v", end.Usage, tc.usage)
			}
			if math.Abs(cost-tc.cost) > 1e-12 {
				t.Errorf("cost = %v, want %v", cost, tc.cost)
			}
			call := firstToolUse(t, end.Message)
			if call.Name != "execute_task_automation" || call.Id == "" || call.Vendor != strings.Split(tc.model, "/")[0] || call.Model != tc.model {
				t.Errorf("tool call = %v", call)
			}
			sameJSON(t, call.InputJson, wallArgs)
			for _, b := range end.Message.Content {
				if th := b.GetThinking(); th != nil && (th.Vendor == "" || th.Model != tc.model) {
					t.Errorf("thinking block without its origin: %v", th)
				}
			}

			req.Messages = append(req.Messages, end.Message, toolResult(call.Id, call.Name, "Wall added.", img))
			next, err := routertest.Collect(ctx, r.Client, req)
			if err != nil {
				t.Fatalf("second turn: %v", err)
			}
			if next.End == nil || next.Text != "The wall is in place." || next.End.StopReason != modelv1.StopReason_STOP_REASON_END_TURN {
				t.Fatalf("second turn = text %q end %v error %v", next.Text, next.End, next.Error)
			}
			tc.checkNext(t, v, v.json(1), call)
		})
	}
}
