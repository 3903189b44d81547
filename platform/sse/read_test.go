package sse_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"nexus.local/platform/sse"
)

// readAll reads every event of stream, byte by byte too (so that each line
// ending is split across reads), and checks that both readings agree.
func readAll(t *testing.T, stream string) ([]sse.Event, *sse.Reader, error) {
	t.Helper()
	read := func(r io.Reader) ([]sse.Event, *sse.Reader, error) {
		rd := sse.NewReader(r, 1<<10)
		var out []sse.Event
		for {
			ev, err := rd.Next()
			if err != nil {
				if len(ev.Data) > 0 || ev.Type != "" {
					out = append(out, sse.Event{Type: "cut " + ev.Type, Data: []byte(string(ev.Data))})
				}
				return out, rd, err
			}
			ev.Data = []byte(string(ev.Data))
			out = append(out, ev)
		}
	}
	whole, rd, werr := read(strings.NewReader(stream))
	bytewise, _, berr := read(iotest.OneByteReader(strings.NewReader(stream)))
	if !sameEvents(whole, bytewise) || !errors.Is(berr, werr) {
		t.Fatalf("%q: read whole %v (%v), byte by byte %v (%v)", stream, whole, werr, bytewise, berr)
	}
	return whole, rd, werr
}

func sameEvents(a, b []sse.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].ID != b[i].ID || string(a[i].Data) != string(b[i].Data) {
			return false
		}
	}
	return true
}

func ev(typ, id, data string) sse.Event { return sse.Event{Type: typ, ID: id, Data: []byte(data)} }

// TestReaderFollowsTheStandard reads the cases of the standard's "event
// stream interpretation" one by one.
func TestReaderFollowsTheStandard(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []sse.Event
		err          error
	}{
		{"data joined by LF, the last LF dropped", "data: a\ndata: b\n\n", []sse.Event{ev("message", "", "a\nb")}, io.EOF},
		{"one leading space dropped, not two", "data:  two\ndata:none\n\n", []sse.Event{ev("message", "", " two\nnone")}, io.EOF},
		{"a field name alone has an empty value", "data\ndata\n\n", []sse.Event{ev("message", "", "\n")}, io.EOF},
		{"an empty data field still dispatches", "data:\n\n", []sse.Event{ev("message", "", "")}, io.EOF},
		{"no data: nothing dispatched, the type reset", "event: a\n\ndata: x\n\n", []sse.Event{ev("message", "", "x")}, io.EOF},
		{"comments and unknown fields skipped", ": hello\nfoo: bar\ndata : not data\ndata: x\n\n", []sse.Event{ev("message", "", "x")}, io.EOF},
		{"the value keeps later colons", "data: a: b\n\n", []sse.Event{ev("message", "", "a: b")}, io.EOF},
		{"event type", "event: open\ndata: x\n\ndata: y\n\n", []sse.Event{ev("open", "", "x"), ev("message", "", "y")}, io.EOF},
		{"CRLF, LF and CR line endings", "data: a\r\ndata: b\rdata: c\n\r\n\r\r\n", []sse.Event{ev("message", "", "a\nb\nc")}, io.EOF},
		{"CR CR ends an event", "data: a\r\rdata: b\r\r", []sse.Event{ev("message", "", "a"), ev("message", "", "b")}, io.EOF},
		{"a byte-order mark starts the stream", "\xEF\xBB\xBFdata: a\n\n", []sse.Event{ev("message", "", "a")}, io.EOF},
		{"only the first byte-order mark is dropped", "\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n", []sse.Event{ev("message", "", "b")}, io.EOF},
		{"ids last until replaced", "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", []sse.Event{ev("message", "1", "a"), ev("message", "1", "b"), ev("message", "", "c")}, io.EOF},
		{"an id with NUL is ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", []sse.Event{ev("message", "1", "a"), ev("message", "1", "b")}, io.EOF},
		{"an id without data still counts", "id: 7\n\ndata: a\n\n", []sse.Event{ev("message", "7", "a")}, io.EOF},
		{"the end inside an event cuts it", "data: a\n\nevent: x\ndata: b\n", []sse.Event{ev("message", "", "a"), ev("cut x", "", "b")}, sse.ErrCut},
		{"a last line without its ending is not read", "data: a\n\ndata: b\ndata: c", []sse.Event{ev("message", "", "a"), ev("cut message", "", "b")}, sse.ErrCut},
		{"a cut event without data", "data: a\n\nid: 3\n", []sse.Event{ev("message", "", "a")}, sse.ErrCut},
		{"a last comment without its ending is no event", "data: a\n\n: keepalive", []sse.Event{ev("message", "", "a")}, io.EOF},
		{"empty", "", nil, io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := readAll(t, tc.stream)
			if !sameEvents(got, tc.want) || !errors.Is(err, tc.err) {
				t.Fatalf("%q: got %q (%v), want %q (%v)", tc.stream, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestReaderRetry takes a reconnection time of ASCII digits only.
func TestReaderRetry(t *testing.T) {
	for stream, want := range map[string]time.Duration{
		"retry: 1500\n\n":                  1500 * time.Millisecond,
		"retry: 1500\nretry: 1.5\n\n":      1500 * time.Millisecond,
		"retry: 200\nretry: -1\n\n":        200 * time.Millisecond,
		"retry: 10\nretry\n\n":             10 * time.Millisecond,
		"retry: one thousand\ndata: x\n\n": 0,
	} {
		_, rd, _ := readAll(t, stream)
		got, ok := rd.Retry()
		if got != want || ok != (want > 0) {
			t.Errorf("%q: retry %v, %v; want %v", stream, got, ok, want)
		}
	}
}

// TestReaderLineLimit ends a stream whose line is over the limit with an
// error naming it, not a truncated event.
func TestReaderLineLimit(t *testing.T) {
	rd := sse.NewReader(strings.NewReader("data: "+strings.Repeat("x", 2000)+"\n\n"), 1000)
	if _, err := rd.Next(); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("a 2,000-byte line under a 1,000-byte limit: %v", err)
	}
}

// TestReaderLastEventID is what a client resumes from: the last id seen,
// even on a frame that dispatched nothing.
func TestReaderLastEventID(t *testing.T) {
	_, rd, _ := readAll(t, "id: 3\ndata: x\n\nid: 4\n\n")
	if rd.LastEventID() != "4" {
		t.Fatalf("last event id %q, want 4", rd.LastEventID())
	}
}

// BenchmarkReader reads a stream of small events, as a vendor's deltas are.
func BenchmarkReader(b *testing.B) {
	var s strings.Builder
	for i := range 200 {
		s.WriteString("event: content_block_delta\n")
		if i%50 == 0 {
			s.WriteString(": keepalive\n")
		}
		s.WriteString(`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"the walls on level 2 "}}` + "\n\n")
	}
	stream := s.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		rd := sse.NewReader(strings.NewReader(stream), 1<<20)
		for {
			if _, err := rd.Next(); err != nil {
				break
			}
		}
	}
}
