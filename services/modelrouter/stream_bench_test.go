package modelrouter

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// bodyTransport answers every request with one recorded vendor stream, so
// a benchmark measures the router's reading of it and not a network.
type bodyTransport []byte

func (b bodyTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(b))}, nil
}

// BenchmarkReadVendorStreams is the router's reading of a recorded turn of
// each vendor: the server-sent events parsed, decoded and emitted.
func BenchmarkReadVendorStreams(b *testing.B) {
	for _, tc := range []struct {
		file string
		ad   func(c *caller) adapter
	}{
		{"anthropic_thinking_tool.sse", func(c *caller) adapter {
			return &anthropicAdapter{vendor: VendorAnthropic, baseURL: "http://vendor", http: c}
		}},
		{"openai_reasoning_tool.sse", func(c *caller) adapter { return &openaiAdapter{baseURL: "http://vendor", http: c} }},
		{"gemini_thought_tool.sse", func(c *caller) adapter { return &geminiAdapter{baseURL: "http://vendor", http: c} }},
		{"compat_reasoning_tool.sse", func(c *caller) adapter { return &compatAdapter{baseURL: "http://vendor", http: c} }},
	} {
		raw, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			b.Fatal(err)
		}
		c := &caller{client: &http.Client{Transport: bodyTransport(raw)}, idle: time.Minute}
		ad := tc.ad(c)
		t := &turn{entry: &ModelEntry{Name: "m"}, maxTokens: 1024}
		out := &emitter{send: func(*modelv1.StreamTurnResponse) error { return nil }}
		b.Run(tc.file, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := ad.stream(b.Context(), t, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
