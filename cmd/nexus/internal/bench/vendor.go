package bench

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"nexus.local/services/modelrouter/replay"
)

// stampPrefix starts every stamped delta: "@t<unix nanos> ".
const stampPrefix = "@t"

// cacheLoopMarker in a prompt makes the vendor answer with a tool call on
// every turn until the loop has its turns, so the bench can watch prompt
// caching over a long transcript.
const cacheLoopMarker = "[bench cache loop]"

// quickMarker in a prompt makes the vendor answer at once, unpaced: for
// runs that only need to reach their tool call.
const quickMarker = "[bench quick]"

// minCacheTokens is the shortest prefix the vendor caches, as the vendor
// documents for its Sonnet models.
const minCacheTokens = 1024

// vendor is a loopback server speaking the Anthropic Messages streaming wire
// format. A first turn types thinking, prose and a tool call whose arguments
// arrive as many small deltas, at a set rate; a turn after a tool result
// answers briefly. Text and thinking deltas are stamped with their send
// time. It prices prompt caching as the vendor documents it: cache reads at
// the longest cached block boundary, writes up to the last breakpoint.
type vendor struct {
	srv      *http.Server
	url      string
	pace     time.Duration
	loopTurn int

	mu    sync.Mutex
	cache map[[32]byte]bool
	// arrivals records when a request carrying a tool result for a call id
	// arrived (the end of that call's rendezvous); asked, when the request
	// whose answer made that call arrived.
	arrivals map[string]time.Time
	asked    map[string]time.Time
	n        atomic.Int64
}

func startVendor(addr string, rate, loopTurns int) (*vendor, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the loopback vendor: %w", err)
	}
	v := &vendor{url: "http://" + lis.Addr().String(), pace: time.Second / time.Duration(max(rate, 1)), loopTurn: loopTurns,
		cache: map[[32]byte]bool{}, arrivals: map[string]time.Time{}, asked: map[string]time.Time{}}
	v.srv = &http.Server{Handler: http.HandlerFunc(v.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = v.srv.Serve(lis) }()
	return v, nil
}

func (v *vendor) close() { _ = v.srv.Close() }

func stamp() string { return stampPrefix + strconv.FormatInt(time.Now().UnixNano(), 10) + " " }

// stamps returns the send times in a chunk of text.
func stamps(text string) []int64 {
	var out []int64
	for {
		i := strings.Index(text, stampPrefix)
		if i < 0 {
			return out
		}
		text = text[i+len(stampPrefix):]
		j := strings.IndexByte(text, ' ')
		if j < 0 {
			return out
		}
		if n, err := strconv.ParseInt(text[:j], 10, 64); err == nil {
			out = append(out, n)
		}
		text = text[j:]
	}
}

// firstTurn is what a model says when it starts on a request: 10 thinking
// deltas, 20 prose deltas, then a tool call in 20 argument deltas.
func (v *vendor) firstTurn(id string, usage replay.Usage) replay.StreamTurn {
	return replay.StreamTurn{
		MessageID: "msg_" + id, Model: "claude-sonnet-4-5", StopReason: "tool_use", Usage: usage, Pace: v.pace, Stamp: stamp,
		Blocks: []replay.StreamBlock{
			{Kind: "thinking", Text: strings.Repeat("The person wants the bodies counted first. ", 10), Pieces: 10, Signature: "sig-bench"},
			{Kind: "text", Text: strings.Repeat("I will look at the document before changing it. ", 20), Pieces: 20},
			{Kind: "tool_use", ToolID: toolID(id), ToolName: "execute_data_collection", Pieces: 20,
				Text: `{"code":"import FreeCAD\ndoc = FreeCAD.ActiveDocument\nfor o in doc.Objects:\n    print(o.Name, o.TypeId, o.Label)\nprint(len(doc.Objects))","description":"List every object with its type and label"}`},
		},
	}
}

func (v *vendor) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"unexpected request"}}`, http.StatusBadRequest)
		return
	}
	id := fmt.Sprintf("%08d", v.n.Add(1))
	if r.Header.Get("X-Bench-Direct") != "" {
		// The baseline: the same turn, read straight from the vendor.
		_ = replay.WriteStream(r.Context(), w, v.firstTurn(id, replay.Usage{InputTokens: 1000, OutputTokens: 300}))
		return
	}
	var req map[string]json.RawMessage
	var msgs []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(req["messages"], &msgs) != nil || len(msgs) == 0 {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"no messages"}}`, http.StatusBadRequest)
		return
	}
	answered, assistants := false, 0
	for _, m := range msgs {
		if m.Role == "assistant" {
			assistants++
		}
	}
	for _, raw := range msgs[len(msgs)-1].Content {
		var b struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
		}
		if json.Unmarshal(raw, &b) == nil && b.Type == "tool_result" {
			answered = true
			v.mu.Lock()
			if _, ok := v.arrivals[b.ToolUseID]; !ok {
				v.arrivals[b.ToolUseID] = now
			}
			v.mu.Unlock()
		}
	}
	usage := v.price(req)
	first := string(msgs[0].Content[0])
	loop := strings.Contains(first, cacheLoopMarker)
	switch {
	case strings.Contains(first, quickMarker) && !answered:
		_ = replay.WriteStream(r.Context(), w, replay.StreamTurn{MessageID: "msg_" + id, Model: "claude-sonnet-4-5", StopReason: "tool_use", Usage: usage,
			Blocks: []replay.StreamBlock{{Kind: "tool_use", ToolID: toolID(id), ToolName: "execute_data_collection", Pieces: 2,
				Text: `{"code":"print(1)","description":"Look"}`}}})
	case loop && assistants < v.loopTurn-1:
		// Cache loop turns are quick: one small tool call each.
		_ = replay.WriteStream(r.Context(), w, replay.StreamTurn{MessageID: "msg_" + id, Model: "claude-sonnet-4-5", StopReason: "tool_use", Usage: usage,
			Blocks: []replay.StreamBlock{{Kind: "tool_use", ToolID: toolID(id), ToolName: "execute_data_collection", Pieces: 2,
				Text: fmt.Sprintf(`{"code":"print(%d)","description":"Look once more"}`, assistants)}}})
	case answered || loop:
		_ = replay.WriteStream(r.Context(), w, replay.StreamTurn{MessageID: "msg_" + id, Model: "claude-sonnet-4-5", StopReason: "end_turn", Usage: usage, Pace: v.pace, Stamp: stamp,
			Blocks: []replay.StreamBlock{{Kind: "text", Text: strings.Repeat("The document has twelve objects. ", 10), Pieces: 10}}})
	default:
		v.mu.Lock()
		v.asked[toolID(id)] = now
		v.mu.Unlock()
		_ = replay.WriteStream(r.Context(), w, v.firstTurn(id, usage))
	}
}

// toolID is the id of the tool call the vendor's answer to request id makes.
func toolID(id string) string { return "toolu_" + id }

// requested returns when the request whose answer made call id arrived.
func (v *vendor) requested(id string) (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.asked[id]
	return t, ok
}

// arrival returns when the result of call id reached the vendor.
func (v *vendor) arrival(id string) (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.arrivals[id]
	return t, ok
}

// price counts the request's input tokens (four bytes a token) the way the
// vendor bills prompt caching: blocks in the order tools, system, messages;
// a cache read at the longest block boundary a earlier request cached, a
// write from there to the last breakpoint, the rest as plain input.
func (v *vendor) price(req map[string]json.RawMessage) replay.Usage {
	type block struct {
		raw        []byte
		breakpoint bool
	}
	var blocks []block
	add := func(raw json.RawMessage) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			blocks = append(blocks, block{raw: raw})
			return
		}
		_, bp := m["cache_control"]
		delete(m, "cache_control")
		b, _ := json.Marshal(m)
		blocks = append(blocks, block{raw: b, breakpoint: bp})
	}
	var list []json.RawMessage
	_ = json.Unmarshal(req["tools"], &list)
	for _, t := range list {
		add(t)
	}
	list = nil
	_ = json.Unmarshal(req["system"], &list)
	for _, s := range list {
		add(s)
	}
	var msgs []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(req["messages"], &msgs)
	for _, m := range msgs {
		blocks = append(blocks, block{raw: []byte(m.Role)})
		for _, c := range m.Content {
			add(c)
		}
	}

	hashes := make([][32]byte, len(blocks))
	sizes := make([]int, len(blocks))
	var h [32]byte
	total, lastBP := 0, -1
	for i, b := range blocks {
		h = sha256.Sum256(append(h[:], b.raw...))
		total += len(b.raw)
		hashes[i], sizes[i] = h, total
		if b.breakpoint {
			lastBP = i
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	hit := -1
	for i := lastBP; i >= 0; i-- {
		if v.cache[hashes[i]] {
			hit = i
			break
		}
	}
	for i, b := range blocks {
		if b.breakpoint && sizes[i]/4 >= minCacheTokens {
			v.cache[hashes[i]] = true
		}
	}
	u := replay.Usage{OutputTokens: 300}
	read := 0
	if hit >= 0 {
		read = sizes[hit]
	}
	written := 0
	if lastBP > hit && sizes[lastBP]/4 >= minCacheTokens {
		written = sizes[lastBP] - read
	}
	u.CacheReadInputTokens = int64(read / 4)
	u.CacheCreationInputTokens = int64(written / 4)
	u.InputTokens = int64((total - read - written) / 4)
	return u
}
