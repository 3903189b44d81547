package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/modelrouter/replay"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// startTypingStack runs the whole mesh (gateway, orchestrator, model router,
// capability service) before a vendor that types turn, answering every
// request with it.
func startTypingStack(t *testing.T, turn func(r *http.Request) replay.StreamTurn) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = replay.WriteStream(r.Context(), w, turn(r))
	}))
	t.Cleanup(srv.Close)
	stack := ot.Start(t, srv.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	return startGateway(t, realGatewayEnv(stack))
}

// readRun reads a run's events until its stream ends, checking that each
// carries the next sequence number as its id, and hands each chunk to fn.
func readRun(t *testing.T, resp *http.Response, first int, fn func(*agentv1.StreamChunk)) []*agentv1.StreamChunk {
	t.Helper()
	var chunks []*agentv1.StreamChunk
	newSSEReader(resp.Body).each(t, func(f sseFrame) {
		if f.comment != "" || f.data == "" {
			// Keepalives, and the frame that only sets the reconnect delay.
			return
		}
		c := &agentv1.StreamChunk{}
		if err := protojson.Unmarshal([]byte(f.data), c); err != nil {
			t.Fatalf("data %q: %v", f.data, err)
		}
		want := first + len(chunks)
		if f.id != strconv.Itoa(want) || c.GetSeq() != int64(want) {
			t.Fatalf("event %d of the stream has id %q and seq %d, want %d: every chunk once, in order", len(chunks)+1, f.id, c.GetSeq(), want)
		}
		chunks = append(chunks, c)
		if fn != nil {
			fn(c)
		}
	})
	return chunks
}

// TestBurstCrossesTheMeshWhole: a vendor types 400 deltas at once, faster
// than the hops forward them one by one, so chunks that arrive together may
// travel together. Whatever the batching, the client reads every chunk once,
// in order, each under its own sequence number, the text exactly as typed;
// and a rejoin after any Last-Event-ID replays exactly the rest.
func TestBurstCrossesTheMeshWhole(t *testing.T) {
	const thinkingPieces, textPieces = 100, 300
	var thinking, text strings.Builder
	for i := range thinkingPieces {
		fmt.Fprintf(&thinking, "[t%03d]", i)
	}
	for i := range textPieces {
		fmt.Fprintf(&text, "<%04d>", i)
	}
	base := startTypingStack(t, func(*http.Request) replay.StreamTurn {
		return replay.StreamTurn{MessageID: "msg_1", Model: "claude-sonnet-4-5", StopReason: "end_turn", Usage: replay.Usage{InputTokens: 100, OutputTokens: 400},
			Blocks: []replay.StreamBlock{{Kind: "thinking", Text: thinking.String(), Pieces: thinkingPieces, Signature: "sig"},
				{Kind: "text", Text: text.String(), Pieces: textPieces}}}
	})
	session := createSession(t, base, aliceKey)
	resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"count to three hundred"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run: %d", resp.StatusCode)
	}
	chunks := readRun(t, resp, 1, nil)
	var gotThinking, gotText strings.Builder
	var deltas int
	for _, c := range chunks {
		if c.GetThinking() != nil || c.GetMessage() != nil {
			deltas++
		}
		gotThinking.WriteString(c.GetThinking().GetText())
		gotText.WriteString(c.GetMessage().GetText())
	}
	if deltas != thinkingPieces+textPieces || gotThinking.String() != thinking.String() || gotText.String() != text.String() {
		t.Errorf("%d deltas, %d bytes of thinking and %d of text; want %d deltas, the %d and %d bytes typed, in order",
			deltas, gotThinking.Len(), gotText.Len(), thinkingPieces+textPieces, thinking.Len(), text.Len())
	}
	if len(chunks) == 0 || chunks[len(chunks)-1].GetComplete() == nil && chunks[len(chunks)-1].GetUsage() == nil {
		t.Fatalf("the run's stream ended without its end: %d chunks", len(chunks))
	}
	run := chunks[0].GetRunId()
	for _, after := range []int{0, 1, 57, len(chunks) - 1} {
		resp := request(t, http.MethodGet, base+"/v1/runs/"+run+"/events", aliceKey, "", "Last-Event-ID", strconv.Itoa(after))
		again := readRun(t, resp, after+1, nil)
		if len(again) != len(chunks)-after {
			t.Errorf("rejoined after %d: %d chunks, want the %d after it", after, len(again), len(chunks)-after)
		}
	}
}

// ackLimit bounds how long the vendor waits for the client to read a delta
// before it types the next one anyway; only a mesh that holds a chunk back
// makes it wait that long.
const ackLimit = 30 * time.Second

// TestLoneChunkIsNotHeldBack: the vendor types each delta only once the
// client has read the one before over the gateway's event stream, so a hop
// that held a chunk back waiting for company would get none. Counting, not
// timing: when the client reads each delta, the vendor has not produced the
// next one yet.
func TestLoneChunkIsNotHeldBack(t *testing.T) {
	const pieces = 6
	var produced atomic.Int64
	read := make(chan struct{}, pieces)
	base := startTypingStack(t, func(r *http.Request) replay.StreamTurn {
		return replay.StreamTurn{MessageID: "msg_1", Model: "claude-sonnet-4-5", StopReason: "end_turn", Usage: replay.Usage{InputTokens: 100, OutputTokens: 10},
			Blocks: []replay.StreamBlock{{Kind: "text", Text: strings.Repeat("word ", pieces), Pieces: pieces}},
			Stamp: func() string {
				if produced.Load() > 0 {
					select {
					case <-read:
					case <-time.After(ackLimit):
					case <-r.Context().Done():
					}
				}
				produced.Add(1)
				return ""
			}}
	})
	session := createSession(t, base, aliceKey)
	resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"say six words"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run: %d", resp.StatusCode)
	}
	var deltas int64
	readRun(t, resp, 1, func(c *agentv1.StreamChunk) {
		if c.GetMessage() == nil {
			return
		}
		deltas++
		if p := produced.Load(); p != deltas {
			t.Errorf("delta %d reached the client when the vendor had produced %d: a hop held it back for the next", deltas, p)
		}
		read <- struct{}{}
	})
	if deltas != pieces {
		t.Errorf("the client read %d deltas, want %d", deltas, pieces)
	}
}
