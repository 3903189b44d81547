package replay

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"nexus.local/platform/sse"
)

// StreamBlock is one content block of a turn streamed in the Messages API
// format.
type StreamBlock struct {
	// Kind is "thinking", "text" or "tool_use".
	Kind string
	// Text is the prose, the reasoning, or a tool call's input as JSON.
	Text string
	// Signature closes a thinking block.
	Signature string
	// ToolID and ToolName name a tool call.
	ToolID, ToolName string
	// Pieces is how many deltas carry Text; 0 sends one per PieceBytes.
	Pieces int
	// Cut sends only the first half of the pieces, as a turn that ran out
	// of output budget does.
	Cut bool
}

// StreamTurn is one assistant turn.
type StreamTurn struct {
	MessageID, Model string
	Blocks           []StreamBlock
	// StopReason is "end_turn", "tool_use" or "max_tokens".
	StopReason string
	Usage      Usage
	// Pace pauses before each delta, as a model that types at a set rate
	// does; zero streams at once.
	Pace time.Duration
	// Stamp, when set, is called as each text or thinking delta is sent and
	// its result starts the delta, so a reader can tell how long the delta
	// took to reach it (nexus bench stamps the send time).
	Stamp func() string
}

// PieceBytes is the size of a delta when a block does not set Pieces, so a
// stream looks like a model typing.
const PieceBytes = 40

// WriteStream writes t as the Messages API streams a turn: message_start,
// ping, each block's start, deltas and stop, message_delta with the stop
// reason and usage, message_stop; each event flushed. The replay vendor and
// the loopback vendors of the test suites all speak through it. A paced
// stream stops when ctx ends (the request's: its reader went away), and
// WriteStream returns why.
func WriteStream(ctx context.Context, w http.ResponseWriter, t StreamTurn) error {
	out := sse.NewStream(w)
	out.Start()
	var frame []byte
	send := func(name string, v any) {
		raw, _ := json.Marshal(v)
		frame, _ = sse.AppendEvent(frame[:0], sse.Event{Type: name, Data: raw})
		// A reader that went away ends a paced stream through ctx.
		_ = out.Write(frame)
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": t.MessageID, "type": "message", "role": "assistant", "model": t.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": t.Usage.InputTokens, "output_tokens": 1,
			"cache_read_input_tokens": t.Usage.CacheReadInputTokens, "cache_creation_input_tokens": t.Usage.CacheCreationInputTokens},
	}})
	send("ping", map[string]any{"type": "ping"})
	for i, b := range t.Blocks {
		var start map[string]any
		var deltaType, field string
		switch b.Kind {
		case "thinking":
			start = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
			deltaType, field = "thinking_delta", "thinking"
		case "tool_use":
			start = map[string]any{"type": "tool_use", "id": b.ToolID, "name": b.ToolName, "input": map[string]any{}}
			deltaType, field = "input_json_delta", "partial_json"
		default:
			start = map[string]any{"type": "text", "text": ""}
			deltaType, field = "text_delta", "text"
		}
		delta := func(d map[string]any) {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start})
		pieces := pieces(b.Text, b.Pieces)
		if b.Cut {
			pieces = pieces[:len(pieces)/2]
		}
		for _, p := range pieces {
			if t.Pace > 0 {
				if err := pause(ctx, t.Pace); err != nil {
					return err
				}
			}
			if t.Stamp != nil && b.Kind != "tool_use" {
				p = t.Stamp() + p
			}
			delta(map[string]any{"type": deltaType, field: p})
		}
		if b.Kind == "thinking" {
			delta(map[string]any{"type": "signature_delta", "signature": b.Signature})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": t.StopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": t.Usage.OutputTokens}})
	send("message_stop", map[string]any{"type": "message_stop"})
	return nil
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// pieces cuts s into n pieces, or into pieces of PieceBytes when n is 0,
// always on rune boundaries.
func pieces(s string, n int) []string {
	if n <= 0 {
		return chunk(s, PieceBytes)
	}
	r := []rune(s)
	if len(r) < n {
		return []string{s}
	}
	var out []string
	size := (len(r) + n - 1) / n
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(i+size, len(r))]))
	}
	return out
}
