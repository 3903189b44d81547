package gateway

// This file renders the chunks a model turn streams most as JSON without
// protojson's reflection.

import (
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// appendDeltaJSON renders c as protojson does (the same fields under the
// same names, int64 as a string, an enum by its name, zero values left
// out) when it is one of the three chunks that make up nearly all of a
// stream: a prose delta, a thinking delta or a tool call's input delta. It
// answers false for any other chunk, and for one that protojson renders
// differently or refuses (unknown fields, an enum value without a name,
// text that is not UTF-8), which the caller then hands to protojson.
//
// Every frame of a stream went through protojson, whose reflection over
// the chunk's fields made it the gateway's largest allocator: about 14 of
// the mesh's 124 allocations per chunk in a 200-stream bench level.
func appendDeltaJSON(dst []byte, c *agentv1.StreamChunk) ([]byte, bool) {
	if len(c.ProtoReflect().GetUnknown()) > 0 {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, '{')
	first := true
	field := func(name string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
	}
	ok := true
	str := func(name, s string) {
		if s == "" || !ok {
			return
		}
		if !utf8.ValidString(s) {
			ok = false
			return
		}
		field(name)
		dst = appendJSONString(dst, s)
	}
	if c.GetSeq() != 0 {
		field("seq")
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, c.GetSeq(), 10)
		dst = append(dst, '"')
	}
	str("runId", c.GetRunId())
	str("sessionId", c.GetSessionId())
	// open starts the chunk's one field, a message m; false when m is
	// missing or holds fields protojson would render and this does not.
	open := func(name string, m protoreflect.ProtoMessage, missing bool) bool {
		if missing || len(m.ProtoReflect().GetUnknown()) > 0 {
			return false
		}
		field(name)
		dst, first = append(dst, '{'), true
		return true
	}
	switch k := c.GetChunk().(type) {
	case *agentv1.StreamChunk_Thinking:
		if !open("thinking", k.Thinking, k.Thinking == nil) {
			return dst[:start], false
		}
		str("text", k.Thinking.GetText())
	case *agentv1.StreamChunk_Message:
		if !open("message", k.Message, k.Message == nil) {
			return dst[:start], false
		}
		str("text", k.Message.GetText())
	case *agentv1.StreamChunk_ToolInputDelta:
		d := k.ToolInputDelta
		if !open("toolInputDelta", d, d == nil) {
			return dst[:start], false
		}
		str("toolCallId", d.GetToolCallId())
		str("partialJson", d.GetPartialJson())
		if n := d.GetToolName(); n != 0 {
			name, known := agentv1.ToolName_name[int32(n)]
			if !known {
				return dst[:start], false
			}
			field("toolName")
			dst = appendJSONString(dst, name)
		}
	default:
		return dst[:start], false
	}
	if !ok {
		return dst[:start], false
	}
	return append(dst, '}', '}'), true
}

// appendJSONString appends s, valid UTF-8, as a JSON string: a quote, a
// backslash and the control characters escaped, everything else as it is.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	last := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= ' ' && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[last:i]...)
		last = i + 1
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
		}
	}
	dst = append(dst, s[last:]...)
	return append(dst, '"')
}
