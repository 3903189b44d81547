package gateway

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// sameAsProtojson checks that appendDeltaJSON rendered c as protojson
// does: protojson reads it back as c, and it decodes to the same JSON
// value as protojson's own rendering (protojson varies its whitespace from
// build to build on purpose, so the bytes are not compared).
func sameAsProtojson(t *testing.T, c *agentv1.StreamChunk) {
	t.Helper()
	got, ok := appendDeltaJSON([]byte("data: "), c)
	if !ok {
		t.Fatalf("the fast path refused %v", c)
	}
	got = got[len("data: "):]
	back := &agentv1.StreamChunk{}
	if err := protojson.Unmarshal(got, back); err != nil {
		t.Fatalf("protojson cannot read %s: %v", got, err)
	}
	if !proto.Equal(back, c) {
		t.Fatalf("%s reads back as %v, want %v", got, back, c)
	}
	want, err := protojson.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s is not JSON: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("fast path rendered\n%s\nprotojson\n%s", got, want)
	}
}

func TestDeltaJSONIsProtojsons(t *testing.T) {
	texts := []string{"", "x", "a \"quoted\" \\ back\\slash", "line\nbreak\r\ttab\b\f\x00\x01\x1f\x7f", "ünïcødé ✓ 𝄞 \u2028\u2029", "<b>&amp;</b>", strings.Repeat("long ", 2000)}
	for _, s := range texts {
		for _, seq := range []int64{0, 1, 1 << 40} {
			sameAsProtojson(t, &agentv1.StreamChunk{Seq: seq, RunId: "run-1", SessionId: "s", Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: s}}})
			sameAsProtojson(t, &agentv1.StreamChunk{Seq: seq, Chunk: &agentv1.StreamChunk_Thinking{Thinking: &agentv1.Thinking{Text: s}}})
			sameAsProtojson(t, &agentv1.StreamChunk{Seq: seq, RunId: s, Chunk: &agentv1.StreamChunk_ToolInputDelta{ToolInputDelta: &agentv1.ToolInputDelta{
				ToolCallId: "toolu_1", PartialJson: s, ToolName: agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION}}})
			sameAsProtojson(t, &agentv1.StreamChunk{Seq: seq, Chunk: &agentv1.StreamChunk_ToolInputDelta{ToolInputDelta: &agentv1.ToolInputDelta{PartialJson: s}}})
		}
	}
	// Random text: every byte value below 0x80 and runes from the whole range.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			if rng.IntN(3) == 0 {
				b.WriteRune(rune(rng.IntN(0x10FFFF)))
			} else {
				b.WriteByte(byte(rng.IntN(0x80)))
			}
		}
		s := strings.ToValidUTF8(b.String(), "?")
		sameAsProtojson(t, &agentv1.StreamChunk{Seq: rng.Int64(), RunId: "r", Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: s}}})
	}
}

// TestDeltaJSONLeavesTheRestToProtojson: every chunk the fast path does not
// render exactly as protojson would goes to protojson, and dst is as it was.
func TestDeltaJSONLeavesTheRestToProtojson(t *testing.T) {
	unknown := &agentv1.MessageDelta{Text: "x"}
	unknown.ProtoReflect().SetUnknown([]byte{0xf8, 0x01, 0x01}) // field 31, varint 1
	outer := &agentv1.StreamChunk{Seq: 2, Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "x"}}}
	outer.ProtoReflect().SetUnknown([]byte{0xf8, 0x01, 0x01})
	for name, c := range map[string]*agentv1.StreamChunk{
		"a tool call":             {Seq: 1, Chunk: &agentv1.StreamChunk_ToolCall{ToolCall: &agentv1.ToolCall{ToolCallId: "t"}}},
		"usage":                   {Seq: 1, Chunk: &agentv1.StreamChunk_Usage{Usage: &agentv1.Usage{}}},
		"an error":                {Chunk: &agentv1.StreamChunk_Error{Error: &agentv1.Error{Message: "m"}}},
		"no chunk at all":         {Seq: 1},
		"text that is not UTF-8":  {Seq: 1, Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "a\xffb"}}},
		"a run id not UTF-8":      {Seq: 1, RunId: "\xc3", Chunk: &agentv1.StreamChunk_Thinking{Thinking: &agentv1.Thinking{Text: "t"}}},
		"an unnamed tool":         {Seq: 1, Chunk: &agentv1.StreamChunk_ToolInputDelta{ToolInputDelta: &agentv1.ToolInputDelta{ToolName: 999}}},
		"an unknown inner field":  {Seq: 1, Chunk: &agentv1.StreamChunk_Message{Message: unknown}},
		"an unknown outer field":  outer,
		"a nil message delta":     {Seq: 1, Chunk: &agentv1.StreamChunk_Message{}},
		"a nil thinking delta":    {Seq: 1, Chunk: &agentv1.StreamChunk_Thinking{}},
		"a nil tool-input delta":  {Seq: 1, Chunk: &agentv1.StreamChunk_ToolInputDelta{}},
		"tool-input text not UTF": {Seq: 1, Chunk: &agentv1.StreamChunk_ToolInputDelta{ToolInputDelta: &agentv1.ToolInputDelta{ToolCallId: "t", PartialJson: "{\"\xfe"}}},
	} {
		got, ok := appendDeltaJSON([]byte("data: "), c)
		if ok || string(got) != "data: " {
			t.Errorf("%s: fast path answered %q, %v; want it left to protojson", name, got, ok)
		}
	}
}

// TestFrameOfADeltaIsProtojsons reads a whole SSE frame of each kind back.
func TestFrameOfADeltaIsProtojsons(t *testing.T) {
	g := &Gateway{}
	c := &agentv1.StreamChunk{Seq: 7, RunId: "r", SessionId: "s", Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "hi\n"}}}
	frame := string(g.appendFrame(t.Context(), nil, c, false))
	const head = "event: message\nid: 7\ndata: "
	if !strings.HasPrefix(frame, head) || !strings.HasSuffix(frame, "\n\n") {
		t.Fatalf("frame %q", frame)
	}
	back := &agentv1.StreamChunk{}
	if err := protojson.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(frame, head), "\n\n")), back); err != nil || !proto.Equal(back, c) {
		t.Fatalf("frame %q reads back as %v (%v)", frame, back, err)
	}
}

// BenchmarkAppendFrame is one prose delta's frame: the fast path, and
// protojson as every frame was rendered before it.
func BenchmarkAppendFrame(b *testing.B) {
	g := &Gateway{}
	c := &agentv1.StreamChunk{Seq: 1234, RunId: "0193f6a2-7b1c-7c3e-9d2a-5b8e1f4c6a7d", SessionId: "0193f6a2-7b1c-7c3e-9d2a-5b8e1f4c6a7e",
		Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "the walls on level 2 "}}}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = g.appendFrame(b.Context(), buf[:0], c, false)
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = protojson.MarshalOptions{}.MarshalAppend(buf[:0], c)
		}
	})
}
