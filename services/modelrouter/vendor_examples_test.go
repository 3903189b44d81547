package modelrouter_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/modelrouter/routertest"
)

// Values copied from the vendor examples under testdata/vendor-examples, so
// a mismatch names the exact wire field the router lost.
const (
	anthSignature  = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."
	anthThinking   = "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3\n3. 27 * 400 = 10,800\n4. 27 * 50 = 1,350\n5. 27 * 3 = 81\n6. 10,800 + 1,350 + 81 = 12,231"
	oaiSummary     = "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product."
	oaiReasoningID = "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9"
	oaiCallItemID  = "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f"
	gemAnswer      = "There are **3** \"r\"s in strawberry.\n\nSt**r**awbe**rr**y"
)

// exampleStream reads a vendor example and frames it the way that vendor
// sends it: Anthropic examples are already SSE; the JSON-lines recordings get
// "event:"/"data:" lines (Responses API), CRLF "data:" lines (Gemini) or
// "data:" lines ending in "[DONE]" (Chat Completions).
func exampleStream(t *testing.T, vendor, file string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "vendor-examples", vendor, file))
	if err != nil {
		t.Fatal(err)
	}
	if vendor == "anthropic" {
		return string(raw)
	}
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
		switch vendor {
		case "openai-responses":
			var ev struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", ev.Type, line)
		case "gemini":
			fmt.Fprintf(&b, "data: %s\r\n\r\n", line)
		default:
			fmt.Fprintf(&b, "data: %s\n\n", line)
		}
	}
	if vendor == "chat-completions" {
		b.WriteString("data: [DONE]\n\n")
	}
	return b.String()
}

// exampleField extracts one JSON string field from a JSON-lines example: the
// value of key in the first line whose JSON contains match.
func exampleField(t *testing.T, vendor, file, match string, path ...any) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "vendor-examples", vendor, file))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if strings.Contains(line, match) {
			var v any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatal(err)
			}
			return str(t, v, path...)
		}
	}
	t.Fatalf("%s has no line with %q", file, match)
	return ""
}

func thinkingBlock(th *modelv1.ThinkingBlock) *modelv1.ContentBlock {
	return &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Thinking{Thinking: th}}
}

func textBlock(s string) *modelv1.ContentBlock {
	return &modelv1.ContentBlock{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: s}}}
}

func toolUseBlock(tu *modelv1.ToolUseBlock) *modelv1.ContentBlock {
	return &modelv1.ContentBlock{Block: &modelv1.ContentBlock_ToolUse{ToolUse: tu}}
}

// exampleCase is one real vendor stream and what the router must make of it.
type exampleCase struct {
	name    string
	model   string
	env     func(url string) map[string]string
	replies []reply
	// Expected normalised events.
	kinds      []string
	thinking   string
	text       string
	toolInput  string
	toolDeltas int
	deltaID    string // the call id every tool_input_delta carries, when fixed by the stream
	// Expected end: the whole message (a generated call id is filled in from
	// the result), stop reason and usage; or the error.
	message *modelv1.Message
	stop    modelv1.StopReason
	usage   *modelv1.Usage
	errCode modelv1.TurnErrorCode
	retry   bool
	sleeps  int
	// echo inspects the next request, which carries this turn back.
	echo func(t *testing.T, body map[string]any, end *modelv1.TurnEnd)
}

func exampleCases(t *testing.T) []exampleCase {
	anthEnv := func(u string) map[string]string {
		return map[string]string{"ANTHROPIC_BASE_URL": u, "ANTHROPIC_API_KEY": "sk-ant-test"}
	}
	oaiEnv := func(u string) map[string]string {
		return map[string]string{"OPENAI_BASE_URL": u, "OPENAI_API_KEY": "sk-test"}
	}
	gemEnv := func(u string) map[string]string {
		return map[string]string{"GOOGLE_GEMINI_BASE_URL": u, "GEMINI_API_KEY": "gm-test"}
	}
	anth := func(file string) reply { return reply{body: exampleStream(t, "anthropic", file)} }
	oai := func(file string) reply { return reply{body: exampleStream(t, "openai-responses", file)} }
	gem := func(file string) reply { return reply{body: exampleStream(t, "gemini", file)} }
	const claude, gpt, gemini = "anthropic/claude-sonnet-4-5", "openai/gpt-5.1", "gemini/gemini-3-pro-preview"

	oaiEncrypted := exampleField(t, "openai-responses", "reasoning-encrypted-content.jsonl",
		`"type":"response.output_item.done","sequence_number":38`, "item", "encrypted_content")
	gemCallSig := exampleField(t, "gemini", "tool-call-gemini3.jsonl", "functionCall", "candidates", 0, "content", "parts", 0, "thoughtSignature")
	gemTextSig := exampleField(t, "gemini", "reasoning-gemini3.jsonl", "thoughtSignature", "candidates", 0, "content", "parts", 0, "thoughtSignature")

	// The documented basic stream cut after its first text delta by the
	// documented mid-stream error event.
	basic := exampleStream(t, "anthropic", "streaming-basic.sse")
	cut := strings.Index(basic, "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"!\"}}")
	if cut < 0 {
		t.Fatal("streaming-basic.sse changed")
	}
	midStreamError := basic[:cut] + exampleStream(t, "anthropic", "error-overloaded.sse")

	return []exampleCase{
		{
			name: "anthropic basic text with ping", model: claude, env: anthEnv,
			replies: []reply{anth("streaming-basic.sse")},
			kinds:   []string{"text", "end"}, text: "Hello!",
			message: &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{textBlock("Hello!")}},
			stop:    modelv1.StopReason_STOP_REASON_END_TURN,
			usage:   &modelv1.Usage{InputTokens: 25, OutputTokens: 15},
		},
		{
			name: "anthropic tool use with input_json_delta pieces", model: claude, env: anthEnv,
			replies: []reply{anth("streaming-tool-use.sse"), anth("streaming-basic.sse")},
			kinds:   []string{"text", "tool_input", "end"}, text: "Okay, let's check the weather for San Francisco, CA:",
			// Nine documented pieces, the first empty: eight deltas.
			toolInput: `{"location": "San Francisco, CA", "unit": "fahrenheit"}`, toolDeltas: 8, deltaID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
			message: &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{
				textBlock("Okay, let's check the weather for San Francisco, CA:"),
				toolUseBlock(&modelv1.ToolUseBlock{Id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather",
					InputJson: `{"location": "San Francisco, CA", "unit": "fahrenheit"}`, Vendor: "anthropic", Model: claude}),
			}},
			stop:  modelv1.StopReason_STOP_REASON_TOOL_USE,
			usage: &modelv1.Usage{InputTokens: 472, OutputTokens: 89},
			echo: func(t *testing.T, b map[string]any, _ *modelv1.TurnEnd) {
				tu := at(t, b, "messages", 1, "content", 1)
				if str(t, tu, "type") != "tool_use" || str(t, tu, "id") != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || str(t, tu, "input", "unit") != "fahrenheit" {
					t.Errorf("echoed tool_use = %v", tu)
				}
				if str(t, b, "messages", 2, "content", 0, "tool_use_id") != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" {
					t.Errorf("tool_result = %v", at(t, b, "messages", 2, "content", 0))
				}
			},
		},
		{
			name: "anthropic extended thinking with signature_delta", model: claude, env: anthEnv,
			replies:  []reply{anth("streaming-extended-thinking.sse"), anth("streaming-basic.sse")},
			kinds:    []string{"thinking", "text", "end"},
			thinking: anthThinking, text: "27 * 453 = 12,231",
			message: &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{
				thinkingBlock(&modelv1.ThinkingBlock{Text: anthThinking, Signature: anthSignature, Vendor: "anthropic", Model: claude}),
				textBlock("27 * 453 = 12,231"),
			}},
			stop: modelv1.StopReason_STOP_REASON_END_TURN,
			// The documented stream carries no usage at all.
			usage: &modelv1.Usage{},
			echo: func(t *testing.T, b map[string]any, _ *modelv1.TurnEnd) {
				th := at(t, b, "messages", 1, "content", 0)
				if str(t, th, "type") != "thinking" || str(t, th, "thinking") != anthThinking || str(t, th, "signature") != anthSignature {
					t.Errorf("echoed thinking = %v", th)
				}
			},
		},
		{
			name: "anthropic overloaded_error before output is retried", model: claude, env: anthEnv,
			replies: []reply{anth("error-overloaded.sse"), anth("streaming-basic.sse")},
			kinds:   []string{"text", "end"}, text: "Hello!", sleeps: 1,
			message: &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{textBlock("Hello!")}},
			stop:    modelv1.StopReason_STOP_REASON_END_TURN,
			usage:   &modelv1.Usage{InputTokens: 25, OutputTokens: 15},
		},
		{
			name: "anthropic overloaded_error mid-stream ends the turn", model: claude, env: anthEnv,
			replies: []reply{{body: midStreamError}},
			kinds:   []string{"text", "error"}, text: "Hello",
			errCode: modelv1.TurnErrorCode_TURN_ERROR_CODE_OVERLOADED, retry: false,
		},
		{
			name: "openai reasoning summary, encrypted content and a function call", model: gpt, env: oaiEnv,
			replies:  []reply{oai("reasoning-encrypted-content.jsonl"), oai("gpt-5.1-tool-call.jsonl")},
			kinds:    []string{"thinking", "tool_input", "end"},
			thinking: oaiSummary, toolInput: `{"a":12,"b":7,"op":"add"}`, toolDeltas: 13, deltaID: "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
			message: &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{
				thinkingBlock(&modelv1.ThinkingBlock{Text: oaiSummary, Encrypted: oaiEncrypted, ItemId: oaiReasoningID, Vendor: "openai", Model: gpt}),
				toolUseBlock(&modelv1.ToolUseBlock{Id: "call_AB6AaRZ1FYZB2RwS6A5vbdqn", Name: "calculator", InputJson: `{"a":12,"b":7,"op":"add"}`,
					ItemId: oaiCallItemID, Vendor: "openai", Model: gpt}),
			}},
			stop:  modelv1.StopReason_STOP_REASON_TOOL_USE,
			usage: &modelv1.Usage{InputTokens: 134, OutputTokens: 28},
			echo: func(t *testing.T, b map[string]any, _ *modelv1.TurnEnd) {
				rs := at(t, b, "input", 1)
				if str(t, rs, "type") != "reasoning" || str(t, rs, "id") != oaiReasoningID || str(t, rs, "encrypted_content") != oaiEncrypted ||
					str(t, rs, "summary", 0, "text") != oaiSummary {
					t.Errorf("echoed reasoning item = %v", rs)
				}
				fc := at(t, b, "input", 2)
				if str(t, fc, "type") != "function_call" || str(t, fc, "id") != oaiCallItemID || str(t, fc, "call_id") != "call_AB6AaRZ1FYZB2RwS6A5vbdqn" ||
					str(t, fc, "arguments") != `{"a":12,"b":7,"op":"add"}` {
					t.Errorf("echoed function_call = %v", fc)
				}
				if str(t, b, "input", 3, "call_id") != "call_AB6AaRZ1FYZB2RwS6A5vbdqn" {
					t.Errorf("function_call_output = %v", at(t, b, "input", 3))
				}
			},
		},
		{
			name: "openai function call with usage details", model: gpt, env: oaiEnv,
			replies: []reply{oai("gpt-5.1-tool-call.jsonl")},
			kinds:   []string{"tool_input", "end"}, toolInput: `{"city":"Beijing"}`, toolDeltas: 6, deltaID: "call_2FQdm3Br7Qb35YUBSkDR7kue",
			message: &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{
				toolUseBlock(&modelv1.ToolUseBlock{Id: "call_2FQdm3Br7Qb35YUBSkDR7kue", Name: "get_weather", InputJson: `{"city":"Beijing"}`,
					ItemId: "fc_0775572d10a16b66006a8d8528e8a887d2a32ef76463d40c98", Vendor: "openai", Model: gpt}),
			}},
			stop:  modelv1.StopReason_STOP_REASON_TOOL_USE,
			usage: &modelv1.Usage{InputTokens: 45, OutputTokens: 25},
		},
		{
			// The guide shows the call's events only, without response.completed,
			// so the arguments stream through and the turn ends as cut.
			name: "openai function calling guide excerpt", model: gpt, env: oaiEnv,
			replies: []reply{oai("function-calling-guide.jsonl")},
			kinds:   []string{"tool_input", "error"}, toolInput: `{"location":"Paris, France"}`, toolDeltas: 7, deltaID: "call_1234xyz",
			errCode: modelv1.TurnErrorCode_TURN_ERROR_CODE_STREAM_CUT, retry: false,
		},
		{
			name: "gemini 3 function call with thoughtSignature", model: gemini, env: gemEnv,
			replies: []reply{gem("tool-call-gemini3.jsonl"), gem("reasoning-gemini3.jsonl")},
			kinds:   []string{"tool_input", "end"}, toolInput: `{"location":"San Francisco"}`, toolDeltas: 1,
			message: &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{
				toolUseBlock(&modelv1.ToolUseBlock{Name: "weather", InputJson: `{"location":"San Francisco"}`, Signature: gemCallSig, Vendor: "gemini", Model: gemini}),
			}},
			stop:  modelv1.StopReason_STOP_REASON_TOOL_USE,
			usage: &modelv1.Usage{InputTokens: 29, OutputTokens: 15 + 804, ReasoningTokens: 804},
			echo: func(t *testing.T, b map[string]any, _ *modelv1.TurnEnd) {
				part := at(t, b, "contents", 1, "parts", 0)
				if str(t, part, "thoughtSignature") != gemCallSig || str(t, part, "functionCall", "name") != "weather" ||
					str(t, part, "functionCall", "args", "location") != "San Francisco" {
					t.Errorf("echoed call part = %v", part)
				}
				if str(t, b, "contents", 2, "parts", 0, "functionResponse", "name") != "weather" {
					t.Errorf("function response = %v", at(t, b, "contents", 2, "parts", 0))
				}
			},
		},
		{
			name: "gemini 3 prose with a trailing signature-only part", model: gemini, env: gemEnv,
			replies: []reply{gem("reasoning-gemini3.jsonl"), gem("reasoning-gemini3.jsonl")},
			kinds:   []string{"text", "end"}, text: gemAnswer,
			message: &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{
				textBlock(gemAnswer),
				thinkingBlock(&modelv1.ThinkingBlock{Signature: gemTextSig, Vendor: "gemini", Model: gemini}),
			}},
			stop:  modelv1.StopReason_STOP_REASON_END_TURN,
			usage: &modelv1.Usage{InputTokens: 9, OutputTokens: 23 + 302, ReasoningTokens: 302},
			echo: func(t *testing.T, b map[string]any, _ *modelv1.TurnEnd) {
				// The signature goes back on the prose it followed.
				part := at(t, b, "contents", 1, "parts", 0)
				if str(t, part, "text") != gemAnswer || str(t, part, "thoughtSignature") != gemTextSig || length(t, b, "contents", 1, "parts") != 1 {
					t.Errorf("echoed model turn = %v", at(t, b, "contents", 1))
				}
			},
		},
		{
			name: "chat completions prose then a tool call, usage in the last chunk", model: "openai-compat/gpt-4o",
			env: func(u string) map[string]string {
				return map[string]string{"NEXUS_OPENAI_COMPAT_BASE_URL": u + "/v1", "NEXUS_OPENAI_COMPAT_MODELS": "gpt-4o"}
			},
			replies: []reply{{body: exampleStream(t, "chat-completions", "gpt-4o-text-then-tool-call.jsonl")}},
			kinds:   []string{"text", "tool_input", "end"}, text: "PRE_TOOL", toolInput: "{}", toolDeltas: 1, deltaID: "call_NZa7xqfefoaMI2YYHowVXVlU",
			message: &modelv1.Message{Role: modelv1.Role_ROLE_ASSISTANT, Content: []*modelv1.ContentBlock{
				textBlock("PRE_TOOL"),
				toolUseBlock(&modelv1.ToolUseBlock{Id: "call_NZa7xqfefoaMI2YYHowVXVlU", Name: "weather", InputJson: "{}", Vendor: "openai-compat", Model: "openai-compat/gpt-4o"}),
			}},
			stop:  modelv1.StopReason_STOP_REASON_TOOL_USE,
			usage: &modelv1.Usage{InputTokens: 58, OutputTokens: 12},
		},
	}
}

// TestRealVendorExamples streams each vendor's own published example (docs
// or recorded SDK fixtures, see testdata/vendor-examples/README.md) through
// the real router and checks every normalised event, the assembled message
// and the usage, then that the next request carries the turn back intact.
func TestRealVendorExamples(t *testing.T) {
	for _, tc := range exampleCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			v := newVendor(t, tc.replies...)
			env := tc.env(v.url)
			env["NEXUS_MODEL_MAX_RETRIES"] = "2"
			r := start(t, env)
			ctx := testCtx(t)
			req := &modelv1.StreamTurnRequest{
				Model: tc.model, System: "You automate FreeCAD.", Tools: tools(), MaxTokens: 8000, SessionId: "session-1",
				Messages: []*modelv1.Message{userText("What is the weather like?")},
			}
			turn, err := routertest.Collect(ctx, r.Client, req)
			if err != nil {
				t.Fatalf("turn: %v", err)
			}
			if got := kinds(turn.Events); !slices.Equal(got, tc.kinds) {
				t.Errorf("event kinds = %v, want %v", got, tc.kinds)
			}
			if turn.Thinking != tc.thinking || turn.Text != tc.text {
				t.Errorf("thinking %q text %q, want %q and %q", turn.Thinking, turn.Text, tc.thinking, tc.text)
			}
			if turn.ToolInput != tc.toolInput || countKind(turn.Events, "tool_input") != tc.toolDeltas {
				t.Errorf("tool input %q in %d deltas, want %q in %d", turn.ToolInput, countKind(turn.Events, "tool_input"), tc.toolInput, tc.toolDeltas)
			}
			for _, ev := range turn.Events {
				if d := ev.GetToolInputDelta(); d != nil && (tc.deltaID != "" && d.ToolCallId != tc.deltaID || d.ToolCallId == "" || d.ToolName == "") {
					t.Errorf("tool input delta %v, want call id %q", d, tc.deltaID)
				}
			}
			if n := len(r.Sleeps()); n != tc.sleeps {
				t.Errorf("%d retries, want %d", n, tc.sleeps)
			}
			if tc.errCode != modelv1.TurnErrorCode_TURN_ERROR_CODE_UNSPECIFIED {
				if turn.Error == nil || turn.Error.Code != tc.errCode || turn.Error.Retryable != tc.retry || turn.End != nil {
					t.Fatalf("error = %v end = %v, want code %v retryable %v", turn.Error, turn.End, tc.errCode, tc.retry)
				}
				return
			}
			end := turn.End
			if end == nil {
				t.Fatalf("no end event; error %v", turn.Error)
			}
			if end.StopReason != tc.stop || end.Model != tc.model {
				t.Errorf("stop %v model %q, want %v %q", end.StopReason, end.Model, tc.stop, tc.model)
			}
			usage := proto.Clone(end.Usage).(*modelv1.Usage)
			usage.CostUsd = 0
			if !proto.Equal(usage, tc.usage) {
				t.Errorf("usage = %v, want %v", usage, tc.usage)
			}
			want := proto.Clone(tc.message).(*modelv1.Message)
			for i, b := range want.GetContent() {
				// Gemini calls carry no id; the router names them.
				if tu := b.GetToolUse(); tu != nil && tu.Id == "" && i < len(end.Message.GetContent()) {
					tu.Id = end.Message.Content[i].GetToolUse().GetId()
					if tu.Id == "" {
						t.Error("the router left a Gemini call without an id")
					}
				}
			}
			if !proto.Equal(end.Message, want) {
				t.Errorf("message differs:\n%s", cmpDiff(want, end.Message))
			}
			if tc.echo == nil {
				return
			}
			next := userText("Go on.")
			for _, b := range end.Message.Content {
				if tu := b.GetToolUse(); tu != nil {
					next = toolResult(tu.Id, tu.Name, "Sunny, 21 C.")
				}
			}
			req.Messages = append(req.Messages, end.Message, next)
			if _, err := routertest.Collect(ctx, r.Client, req); err != nil {
				t.Fatalf("second turn: %v", err)
			}
			tc.echo(t, v.json(len(v.requests())-1), end)
		})
	}
}

// cmpDiff shows both messages, one field per line.
func cmpDiff(want, got proto.Message) string {
	o := prototext.MarshalOptions{Multiline: true}
	return fmt.Sprintf("want:\n%s\ngot:\n%s", o.Format(want), o.Format(got))
}
