package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/sse"
)

// sample is what one stream measured.
type sample struct {
	// chunkLatency is, for every stamped delta, arrival minus send time.
	chunkLatency []time.Duration
	// firstChunk is from sending the request to the first content delta.
	firstChunk time.Duration
	chunks     int
	// rendezvous is from posting a tool result to the vendor's next request.
	rendezvous []time.Duration
	usage      []*agentv1.Usage
	err        error
}

// client speaks the public HTTP API, as a browser does.
type client struct {
	base   string
	apiKey string
	http   *http.Client
	vendor *vendor
}

func (c *client) do(ctx context.Context, method, path, body string) (*http.Response, error) {
	return c.traced(ctx, method, path, body, "")
}

// traced is do with a W3C traceparent, when one is given.
func (c *client) traced(ctx context.Context, method, path, body, traceparent string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("Traceparent", traceparent)
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	return c.http.Do(req)
}

func (c *client) createSession(ctx context.Context) (string, error) {
	resp, err := c.do(ctx, http.MethodPost, "/v1/sessions", `{"hostApp":"freecad","model":"anthropic/claude-sonnet-4-5","reviewPolicy":"REVIEW_POLICY_NONE"}`)
	if err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var s agentv1.Session
	if resp.StatusCode != http.StatusOK || protojson.Unmarshal(b, &s) != nil {
		return "", fmt.Errorf("create session: %s: %s", resp.Status, b)
	}
	return s.GetSessionId(), nil
}

// maxEventLine bounds one line of an event stream the bench reads.
const maxEventLine = 16 << 20

// run starts a run and reads it to its end, carrying each tool call (a
// canned result, as a courier that ran it on the host would post). A traced
// run (tr not nil) sends a sampled traceparent on its start POST and its
// result POSTs and notes when the client did what.
func (c *client) run(ctx context.Context, sessionID, prompt string, tr *tracedRun) sample {
	var s sample
	parent := func() string {
		if tr == nil {
			return ""
		}
		return tr.traceparent()
	}
	start := time.Now()
	tr.stamp(func(r *tracedRun) { r.start = start })
	resp, err := c.traced(ctx, http.MethodPost, "/v1/sessions/"+sessionID+"/runs", fmt.Sprintf(`{"prompt":%q}`, prompt), parent())
	if err != nil {
		s.err = err
		return s
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		s.err = fmt.Errorf("start run: %s: %s", resp.Status, b)
		return s
	}
	events := sse.NewReader(resp.Body, maxEventLine)
	ended := false
	posts := map[string]time.Time{}
	var readErr error
	for !ended {
		ev, err := events.Next()
		if err != nil {
			readErr = err
			break
		}
		now := time.Now()
		var ch agentv1.StreamChunk
		if err := protojson.Unmarshal(ev.Data, &ch); err != nil {
			s.err = fmt.Errorf("decode event: %w", err)
			return s
		}
		s.chunks++
		text := ch.GetMessage().GetText() + ch.GetThinking().GetText()
		for _, sent := range stamps(text) {
			if s.firstChunk == 0 {
				s.firstChunk = now.Sub(start)
				tr.stamp(func(r *tracedRun) { r.firstSent, r.firstRead = time.Unix(0, sent), now })
			}
			s.chunkLatency = append(s.chunkLatency, time.Duration(now.UnixNano()-sent))
		}
		switch {
		case ch.GetToolCall() != nil:
			tc := ch.GetToolCall()
			posted := time.Now()
			tr.stamp(func(r *tracedRun) {
				if r.posted.IsZero() {
					r.posted, r.call = posted, tc.GetToolCallId()
				}
			})
			if err := c.post(ctx, sessionID, tc, parent()); err != nil {
				s.err = err
				return s
			}
			posts[tc.GetToolCallId()] = posted
		case ch.GetUsage() != nil && !ch.GetUsage().GetFinal():
			s.usage = append(s.usage, ch.GetUsage())
		case ch.GetComplete() != nil:
			ended = true
		case ch.GetError() != nil:
			s.err = fmt.Errorf("run ended with %s: %s", ch.GetError().GetCode(), ch.GetError().GetMessage())
			return s
		}
	}
	if !ended && s.err == nil {
		s.err = fmt.Errorf("the stream ended without complete: %v", readErr)
	}
	// The vendor noted when each result reached it in the next request.
	for id, posted := range posts {
		if at, ok := c.vendor.arrival(id); ok {
			s.rendezvous = append(s.rendezvous, at.Sub(posted))
		}
	}
	return s
}

func (c *client) post(ctx context.Context, sessionID string, tc *agentv1.ToolCall, traceparent string) error {
	body := fmt.Sprintf(`{"toolCallId":%q,"resultToken":%q,"result":{"committed":false,"stdout":"Body001 Part::Box Box\nBody002 Part::Cylinder Cylinder\n12"}}`,
		tc.GetToolCallId(), tc.GetResultToken())
	resp, err := c.traced(ctx, http.MethodPost, "/v1/sessions/"+sessionID+"/tool-results", body, traceparent)
	if err != nil {
		return fmt.Errorf("post tool result: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("post tool result: %s: %s", resp.Status, b)
	}
	return nil
}

// direct reads the vendor's stream itself: the baseline the mesh adds to.
// directRequest is a turn asked of the vendor at base (or of a reference in
// front of it) as the direct reading asks it: the vendor answers the same
// turn the mesh's first turn streams.
func directRequest(ctx context.Context, base string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Bench-Direct", "1")
	return req, nil
}

func direct(ctx context.Context, hc *http.Client, v *vendor) sample {
	var s sample
	start := time.Now()
	req, err := directRequest(ctx, v.url, strings.NewReader(`{"messages":[]}`))
	if err != nil {
		s.err = err
		return s
	}
	resp, err := hc.Do(req)
	if err != nil {
		s.err = err
		return s
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		s.err = fmt.Errorf("HTTP %s: %s", resp.Status, strings.TrimSpace(string(b)))
		return s
	}
	events := sse.NewReader(resp.Body, maxEventLine)
	for {
		ev, err := events.Next()
		if err != nil {
			break
		}
		now := time.Now()
		s.chunks++
		for _, sent := range stamps(string(ev.Data)) {
			if s.firstChunk == 0 {
				s.firstChunk = now.Sub(start)
			}
			s.chunkLatency = append(s.chunkLatency, time.Duration(now.UnixNano()-sent))
		}
	}
	return s
}
