package replay

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestWriteStreamStopsWithItsContext shows a paced stream ends when its
// request's context does, instead of sleeping through the rest of the turn:
// with an hour between deltas, only the context can end it.
func TestWriteStreamStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	w := httptest.NewRecorder()
	err := WriteStream(ctx, w, StreamTurn{MessageID: "msg_1", Model: "demo", StopReason: "end_turn", Pace: time.Hour,
		Blocks: []StreamBlock{{Kind: "text", Text: "one two three", Pieces: 3}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteStream = %v, want context.Canceled", err)
	}
	if body := w.Body.String(); !strings.Contains(body, "content_block_start") || strings.Contains(body, "message_stop") {
		t.Fatalf("a stopped stream wrote:\n%s", body)
	}
	if err := WriteStream(t.Context(), httptest.NewRecorder(), StreamTurn{StopReason: "end_turn", Blocks: []StreamBlock{{Kind: "text", Text: "hi"}}}); err != nil {
		t.Fatalf("an unpaced stream: %v", err)
	}
}
