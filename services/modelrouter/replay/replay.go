// Package replay serves recorded model turns over the Anthropic Messages
// streaming wire format, so the demo model (replay/demo) and tests run the whole
// system without a vendor account. A cassette maps a conversation's state (its
// latest prompt and what the tool results after it say) to the turn to play.
package replay

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// demoCassette is the built-in demo: a FreeCAD room built with the Arch workbench.
//
//go:embed cassettes/demo.json
var demoCassette []byte

// Block is one recorded content block in the Messages API shape.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// Usage is a recorded turn's token accounting.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// Turn is one recorded assistant turn.
type Turn struct {
	// Step is where in the conversation the turn is played (see steps).
	Step string `json:"step"`
	// AfterError, on a fix turn, is text the failed script's result must
	// hold: the fix is recorded for that one mistake and would be a wrong
	// answer to any other.
	AfterError string  `json:"after_error,omitempty"`
	Content    []Block `json:"content"`
	StopReason string  `json:"stop_reason"`
	Usage      Usage   `json:"usage"`
}

// Script is the recorded conversation that follows one prompt.
type Script struct {
	Prompt  string   `json:"prompt"`
	Aliases []string `json:"aliases"`
	// Subject names what the script makes ("room"), for the turns the
	// replay writes itself when the conversation leaves the recording.
	Subject string `json:"subject"`
	// Conflicts are words that, in the name, type or label of an object the
	// inspection lists, mean the document already holds the subject.
	Conflicts []string `json:"conflicts"`
	Turns     []Turn   `json:"turns"`
}

// Cassette is a set of recorded conversations.
type Cassette struct {
	Description string   `json:"description"`
	Fallback    string   `json:"fallback"`
	Scripts     []Script `json:"scripts"`
}

// LoadCassette reads a cassette file, or the built-in demo when path is empty.
func LoadCassette(path string) (*Cassette, error) {
	raw := demoCassette
	if path != "" {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("read cassette: %w", err)
		}
	}
	return ParseCassette(raw)
}

// ParseCassette decodes and checks a cassette.
func ParseCassette(raw []byte) (*Cassette, error) {
	var c Cassette
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("parse cassette: %w", err)
	}
	for i, s := range c.Scripts {
		if normalize(s.Prompt) == "" {
			return nil, fmt.Errorf("cassette script %d: prompt is empty", i)
		}
		seen := map[string]bool{}
		for j, t := range s.Turns {
			if !isStep(t.Step) || seen[t.Step] {
				return nil, fmt.Errorf("cassette script %d turn %d: step %q is not one of %s, or is there twice", i, j, t.Step, stepNames)
			}
			seen[t.Step] = true
			for k, b := range t.Content {
				switch b.Type {
				case "text", "thinking":
				case "tool_use":
					if b.Name == "" || !json.Valid(b.Input) {
						return nil, fmt.Errorf("cassette script %d turn %d block %d: tool_use needs a name and a JSON input", i, j, k)
					}
				default:
					return nil, fmt.Errorf("cassette script %d turn %d block %d: type %q is not text, thinking or tool_use", i, j, k, b.Type)
				}
			}
		}
		if !seen[stepInspect] {
			return nil, fmt.Errorf("cassette script %d: no %s turn to start with", i, stepInspect)
		}
	}
	return &c, nil
}

// normalize makes prompt matching forgive case, spacing and end punctuation.
func normalize(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.TrimRight(s, ".!? ")
}

// fallbackTurn answers a conversation the cassette does not know.
func (c *Cassette) fallbackTurn() Turn {
	text := c.Fallback
	if text == "" {
		text = "This demo model only replays recorded turns. Set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY to use a real model."
	}
	return Turn{Content: []Block{{Type: "text", Text: text}}, StopReason: "end_turn", Usage: Usage{InputTokens: 100, OutputTokens: int64(len(text) / 4)}}
}

// Server serves a cassette on loopback.
type Server struct {
	cassette *Cassette
	expert   *Expert
	requests atomic.Int64
}

// NewServer returns a server for c; Start runs it.
func NewServer(c *Cassette) *Server { return &Server{cassette: c} }

// WithExpert also serves replay/expert from e.
func (s *Server) WithExpert(e *Expert) *Server {
	s.expert = e
	return s
}

// Requests counts the turns served so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Start listens on a loopback port and serves until ctx ends. It returns the
// base URL to use as the Anthropic base URL.
func (s *Server) Start(ctx context.Context) (string, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			// The listener is ours and loopback; a failure leaves requests
			// refused, which the router reports as the vendor being unreachable.
			_ = lis.Close()
		}
	}()
	return "http://" + lis.Addr().String(), nil
}

// ServeHTTP answers POST /v1/messages with the recorded turn as an SSE stream.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		writeError(w, http.StatusNotFound, "not_found_error", "the replay server answers POST /v1/messages only")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	var req request
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "decode request: "+err.Error())
		return
	}
	conv := read(req)
	s.requests.Add(1)
	if req.Model == ExpertModel {
		if s.expert == nil {
			writeError(w, http.StatusNotFound, "not_found_error", "this replay server has no expert model")
			return
		}
		t := s.expert.next(conv)
		n, size := imagesIn(req)
		t.Usage = estimateUsage(body, n, size, t)
		writeTurn(r.Context(), w, t, conv.calls)
		return
	}
	writeTurn(r.Context(), w, s.cassette.next(conv), conv.calls)
}

func writeError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": kind, "message": msg}})
}

// chunk splits s into pieces of about n bytes on rune boundaries, so the
// stream looks like a model typing.
func chunk(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut < len(s) && !utf8Start(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// writeTurn streams a recorded turn; each tool call gets a new id. Ids are
// unique across conversations too, as a vendor's are: a host runtime runs
// each tool call id once, so a second demo on the same document must not
// repeat the first one's ids.
func writeTurn(ctx context.Context, w http.ResponseWriter, t Turn, calls int) {
	nonce := make([]byte, 6)
	_, _ = rand.Read(nonce)
	st := StreamTurn{MessageID: fmt.Sprintf("msg_replay_%d", calls), Model: "demo", StopReason: t.StopReason, Usage: t.Usage}
	for _, b := range t.Content {
		sb := StreamBlock{Kind: b.Type, Text: b.Text}
		switch b.Type {
		case "thinking":
			sb.Text, sb.Signature = b.Thinking, b.Signature
		case "tool_use":
			calls++
			var compact bytes.Buffer
			if err := json.Compact(&compact, b.Input); err != nil {
				compact.Write(b.Input)
			}
			sb.Text, sb.ToolID, sb.ToolName = compact.String(), fmt.Sprintf("toolu_replay_%x_%02d", nonce, calls), b.Name
		}
		st.Blocks = append(st.Blocks, sb)
	}
	_ = WriteStream(ctx, w, st)
}
