package modelrouter_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/modelrouter/replay"
	"nexus.local/services/modelrouter/routertest"
)

// ackLimit bounds how long the vendor waits for the reader to receive a
// delta before it types the next one anyway; only a router that holds a
// delta back makes it wait that long.
const ackLimit = 30 * time.Second

// TestLoneDeltaIsNotHeldBack: the vendor types each text delta only once
// the orchestrator's side has received the one before, so a router that
// held a delta back waiting for company would receive nothing to send with
// it. Counting, not timing: when each delta arrives, the vendor must not
// have produced the next one yet.
func TestLoneDeltaIsNotHeldBack(t *testing.T) {
	const pieces = 8
	var produced atomic.Int64
	received := make(chan struct{}, pieces)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = replay.WriteStream(r.Context(), w, replay.StreamTurn{MessageID: "msg_1", Model: "claude-sonnet-4-5", StopReason: "end_turn",
			Usage:  replay.Usage{InputTokens: 10, OutputTokens: 10},
			Blocks: []replay.StreamBlock{{Kind: "text", Text: strings.Repeat("word ", pieces), Pieces: pieces}},
			Stamp: func() string {
				if produced.Load() > 0 {
					select {
					case <-received:
					case <-time.After(ackLimit):
					case <-r.Context().Done():
					}
				}
				produced.Add(1)
				return ""
			}})
	}))
	t.Cleanup(srv.Close)
	r := start(t, map[string]string{"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "k"})
	stream, err := r.Client.StreamTurnBatches(testCtx(t), &modelv1.StreamTurnBatchesRequest{Turn: &modelv1.StreamTurnRequest{
		Model: "anthropic/claude-sonnet-4-5", MaxTokens: 1000, SessionId: "s", Messages: []*modelv1.Message{userText("Say eight words.")}}})
	if err != nil {
		t.Fatal(err)
	}
	var deltas int64
	var ended bool
	for !ended {
		b, err := stream.Recv()
		if err != nil {
			t.Fatalf("after %d deltas: %v", deltas, err)
		}
		for _, ev := range b.GetEvents() {
			switch {
			case ev.GetText() != nil:
				deltas++
				if p := produced.Load(); p != deltas {
					t.Errorf("delta %d arrived when the vendor had produced %d: it was held back for the next", deltas, p)
				}
				received <- struct{}{}
			case ev.GetEnd() != nil:
				ended = true
			}
		}
	}
	if deltas != pieces {
		t.Errorf("%d deltas arrived, want %d", deltas, pieces)
	}
}

// TestBurstArrivesWholeAndInOrder: a vendor that types a long turn at once
// reaches the orchestrator's side with every delta once and in order, in
// however many messages the router's sender made of them.
func TestBurstArrivesWholeAndInOrder(t *testing.T) {
	const pieces = 500
	var want strings.Builder
	for i := range pieces {
		fmt.Fprintf(&want, "<%04d>", i)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = replay.WriteStream(r.Context(), w, replay.StreamTurn{MessageID: "msg_1", Model: "claude-sonnet-4-5", StopReason: "end_turn",
			Usage:  replay.Usage{InputTokens: 10, OutputTokens: 10},
			Blocks: []replay.StreamBlock{{Kind: "text", Text: want.String(), Pieces: pieces}}})
	}))
	t.Cleanup(srv.Close)
	r := start(t, map[string]string{"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "k"})
	turn, err := routertest.Collect(testCtx(t), r.Client, &modelv1.StreamTurnRequest{
		Model: "anthropic/claude-sonnet-4-5", MaxTokens: 1000, SessionId: "s", Messages: []*modelv1.Message{userText("Count.")}})
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != want.String() || turn.End == nil {
		t.Fatalf("the turn read %d bytes of text (end %v), want the %d the vendor typed, in order", len(turn.Text), turn.End != nil, want.Len())
	}
	deltas := 0
	for _, ev := range turn.Events {
		if ev.GetText() != nil {
			deltas++
		}
	}
	if deltas != pieces || turn.Messages > len(turn.Events) || turn.Events[len(turn.Events)-1].GetEnd() == nil {
		t.Errorf("%d deltas in %d events over %d messages, the end last: want %d deltas, at most one message per event", deltas, len(turn.Events), turn.Messages, pieces)
	}
	t.Logf("%d events arrived in %d messages", len(turn.Events), turn.Messages)
}
