package modelrouter_test

import (
	"slices"
	"strings"
	"testing"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/modelrouter/routertest"
)

// TestVendorSwitch continues one conversation across vendors: each vendor
// gets only its own reasoning signatures back, and every tool call still pairs
// with its result.
func TestVendorSwitch(t *testing.T) {
	ant := newVendor(t, reply{file: "anthropic_thinking_tool.sse"}, reply{file: "anthropic_text.sse"})
	oai := newVendor(t, reply{file: "openai_text.sse"}, reply{file: "openai_reasoning_tool.sse"})
	gem := newVendor(t, reply{file: "gemini_text.sse"})
	r := start(t, map[string]string{
		"ANTHROPIC_BASE_URL": ant.url, "ANTHROPIC_API_KEY": "a",
		"OPENAI_BASE_URL": oai.url, "OPENAI_API_KEY": "o",
		"GOOGLE_GEMINI_BASE_URL": gem.url, "GEMINI_API_KEY": "g",
	})
	ctx := testCtx(t)
	turn := func(model string, msgs []*modelv1.Message) *modelv1.TurnEnd {
		t.Helper()
		got, err := routertest.Collect(ctx, r.Client, &modelv1.StreamTurnRequest{Model: model, Messages: msgs, Tools: tools(), MaxTokens: 8000, SessionId: "s"})
		if err != nil {
			t.Fatalf("%s turn: %v", model, err)
		}
		if got.End == nil {
			t.Fatalf("%s turn ended without an end event: %v", model, got.Error)
		}
		return got.End
	}

	// Anthropic calls a tool; the result goes to OpenAI.
	msgs := []*modelv1.Message{userText("Add a 4 m wall.")}
	a := turn("anthropic/claude-sonnet-4-5", msgs)
	aCall := firstToolUse(t, a.Message)
	msgs = append(msgs, a.Message, toolResult(aCall.Id, aCall.Name, "Wall added."))
	o1 := turn("openai/gpt-5", msgs)
	b := oai.json(0)
	for i := range length(t, b, "input") {
		if ty := strOr(at(t, b, "input", i).(map[string]any)["type"]); ty == "reasoning" {
			t.Errorf("Anthropic thinking reached OpenAI: %v", at(t, b, "input", i))
		}
	}
	if strings.Contains(string(oai.requests()[0].body), "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds") {
		t.Error("the Anthropic signature reached OpenAI")
	}
	if str(t, b, "input", 2, "type") != "function_call" || str(t, b, "input", 2, "call_id") != aCall.Id ||
		str(t, b, "input", 3, "type") != "function_call_output" || str(t, b, "input", 3, "call_id") != aCall.Id {
		t.Errorf("tool pair not kept: %v / %v", at(t, b, "input", 2), at(t, b, "input", 3))
	}
	if _, ok := at(t, b, "input", 2).(map[string]any)["id"]; ok {
		t.Error("a foreign tool call must not carry a vendor item id")
	}

	// OpenAI's own answer, then a tool turn from OpenAI; its result goes to Gemini 3.
	msgs = append(msgs, o1.Message, userText("Now check it."))
	o := turn("openai/gpt-5", msgs)
	oCall := firstToolUse(t, o.Message)
	msgs = append(msgs, o.Message, toolResult(oCall.Id, "", "Checked."))
	turn("gemini/gemini-3-pro-preview", msgs)
	g := gem.json(0)
	last := at(t, g, "contents", -2)
	if str(t, last, "role") != "model" {
		t.Fatalf("contents[-2] = %v", last)
	}
	n := length(t, last, "parts")
	fc := at(t, last, "parts", n-1)
	if str(t, fc, "functionCall", "name") != "execute_task_automation" || str(t, fc, "thoughtSignature") != "skip_thought_signature_validator" {
		t.Errorf("a foreign call on Gemini 3 needs the documented placeholder signature: %v", fc)
	}
	for i := range n {
		if at(t, last, "parts", i).(map[string]any)["thought"] != nil {
			t.Errorf("OpenAI reasoning reached Gemini: %v", at(t, last, "parts", i))
		}
	}
	if str(t, g, "contents", -1, "parts", 0, "functionResponse", "name") != "execute_task_automation" {
		t.Errorf("the result's tool name must come from its call: %v", at(t, g, "contents", -1))
	}

	// Back on Anthropic: its own signed thinking comes back, OpenAI's reasoning
	// does not, and thinking is off because the latest tool turn has none.
	turn("anthropic/claude-sonnet-4-5", msgs)
	c := ant.json(1)
	if _, on := c["thinking"]; on {
		t.Error("thinking must be off when the latest tool turn came from another vendor")
	}
	if str(t, c, "messages", 1, "content", 0, "signature") != "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" {
		t.Errorf("Anthropic's own thinking was not echoed: %v", at(t, c, "messages", 1, "content", 0))
	}
	if strings.Contains(string(ant.requests()[1].body), "gAAAAABouePT8kq2Zr1cXw9Lq0VfYx3h") {
		t.Error("OpenAI encrypted reasoning reached Anthropic")
	}
	// Every tool_use has its tool_result in the next message.
	msgsOut := at(t, c, "messages").([]any)
	for i, m := range msgsOut {
		for _, blk := range m.(map[string]any)["content"].([]any) {
			bl := blk.(map[string]any)
			if bl["type"] != "tool_use" {
				continue
			}
			found := false
			for _, nb := range msgsOut[i+1].(map[string]any)["content"].([]any) {
				found = found || nb.(map[string]any)["tool_use_id"] == bl["id"]
			}
			if !found {
				t.Errorf("tool_use %v has no tool_result after it", bl["id"])
			}
		}
	}
}

// TestOpenAICompaction shows server-side compaction: a visible compacted
// event, the opaque item kept in the transcript and sent back in place, and
// dropped for a vendor that cannot read it.
func TestOpenAICompaction(t *testing.T) {
	oai := newVendor(t, reply{file: "openai_compaction.sse"}, reply{file: "openai_text.sse"})
	ant := newVendor(t, reply{file: "anthropic_text.sse"})
	r := start(t, map[string]string{"OPENAI_BASE_URL": oai.url, "OPENAI_API_KEY": "o", "ANTHROPIC_BASE_URL": ant.url, "ANTHROPIC_API_KEY": "a"})
	ctx := testCtx(t)
	msgs := []*modelv1.Message{userText("Keep going.")}
	req := &modelv1.StreamTurnRequest{Model: "openai/gpt-5.1", Messages: msgs, AllowCompaction: true}
	first, err := routertest.Collect(ctx, r.Client, req)
	if err != nil || first.End == nil {
		t.Fatalf("first turn: %v %v", err, first)
	}
	if k := kinds(first.Events); !slices.Equal(k, []string{"compacted", "text", "end"}) {
		t.Errorf("event kinds = %v", k)
	}
	if at(t, oai.json(0), "context_management", 0, "compact_threshold") != float64(300000) {
		t.Errorf("context_management = %v", oai.json(0)["context_management"])
	}
	c := first.End.Message.Content[0].GetCompaction()
	if c == nil || c.Encrypted != "gAAAAABpCmpctDq1xVbN3w" || c.Vendor != "openai" {
		t.Fatalf("first block = %v, want the compaction", first.End.Message.Content[0])
	}
	req.Messages = append(msgs, first.End.Message, userText("And now?"))
	if _, err := routertest.Collect(ctx, r.Client, req); err != nil {
		t.Fatal(err)
	}
	if str(t, oai.json(1), "input", 1, "type") != "compaction" || str(t, oai.json(1), "input", 1, "encrypted_content") != "gAAAAABpCmpctDq1xVbN3w" {
		t.Errorf("compaction item not sent back in place: %v", at(t, oai.json(1), "input"))
	}
	req.Model = "anthropic/claude-sonnet-4-5"
	if _, err := routertest.Collect(ctx, r.Client, req); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(ant.requests()[0].body), "gAAAAABpCmpctDq1xVbN3w") {
		t.Error("OpenAI's compaction payload reached Anthropic")
	}
}
