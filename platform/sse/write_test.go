package sse_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"nexus.local/platform/sse"
)

// TestWrittenFramesReadBack writes frames of every kind and reads them
// back as a reader following the standard does.
func TestWrittenFramesReadBack(t *testing.T) {
	var buf []byte
	buf = sse.AppendRetry(buf, 1500*time.Millisecond)
	buf = sse.AppendEnd(buf)
	buf = sse.AppendComment(buf, "keepalive\nstill here")
	var err error
	if buf, err = sse.AppendType(buf, "message"); err != nil {
		t.Fatal(err)
	}
	buf = sse.AppendSeqID(buf, 7)
	buf, start := sse.StartData(buf)
	buf = append(buf, `{"text":"hi"}`...)
	buf = sse.EndData(buf, start)
	for _, e := range []sse.Event{
		{Type: "call", ID: "c-1", Data: []byte("line one\nline two\r\nline three\rline four\n")},
		{Data: []byte("")},
		{Data: []byte("x")},
	} {
		if buf, err = sse.AppendEvent(buf, e); err != nil {
			t.Fatal(err)
		}
	}
	got, rd, rerr := readAll(t, string(buf))
	want := []sse.Event{
		ev("message", "7", `{"text":"hi"}`),
		ev("call", "c-1", "line one\nline two\nline three\nline four\n"),
		ev("message", "c-1", ""),
		ev("message", "c-1", "x"),
	}
	if !sameEvents(got, want) || !errors.Is(rerr, io.EOF) {
		t.Fatalf("frames %q read back as %q (%v), want %q", buf, got, rerr, want)
	}
	if d, ok := rd.Retry(); d != 1500*time.Millisecond || !ok {
		t.Fatalf("retry read back as %v, %v", d, ok)
	}
}

// TestWriterRefusesWhatCannotBeOneLine refuses an event type or id that a
// reader would read differently, and leaves the buffer as it was.
func TestWriterRefusesWhatCannotBeOneLine(t *testing.T) {
	for _, e := range []sse.Event{
		{Type: "a\nb", Data: []byte("x")},
		{Type: "a\rb", Data: []byte("x")},
		{ID: "1\n2", Data: []byte("x")},
		{ID: "1\x002", Data: []byte("x")},
	} {
		out, err := sse.AppendEvent([]byte("before"), e)
		if err == nil || string(out) != "before" {
			t.Errorf("event %q: got %q, %v; want a refusal and the buffer unchanged", e, out, err)
		}
	}
}

// TestStreamHeaders sends the stream's headers at the first write, once.
func TestStreamHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	s := sse.NewStream(rec)
	if s.Started() {
		t.Fatal("started before a write")
	}
	if err := s.Write(sse.AppendComment(nil, "keepalive")); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(sse.AppendData(nil, []byte("x"))); err != nil {
		t.Fatal(err)
	}
	h := rec.Result().Header
	if rec.Code != http.StatusOK || h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache" ||
		h.Get("X-Accel-Buffering") != "no" || !rec.Flushed || rec.Body.String() != ": keepalive\n\ndata: x\n\n" {
		t.Fatalf("status %d, headers %v, flushed %v, body %q", rec.Code, h, rec.Flushed, rec.Body.String())
	}
}

// BenchmarkFrame is one delta's frame as the gateway renders it, into a
// reused buffer: it allocates nothing.
func BenchmarkFrame(b *testing.B) {
	const data = `{"seq":"1234","message":{"text":"the walls on level 2 "}}`
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf, _ = sse.AppendType(buf[:0], "message")
		buf = sse.AppendSeqID(buf, 1234)
		var start int
		buf, start = sse.StartData(buf)
		buf = sse.EndData(append(buf, strings.TrimSpace(data)...), start)
	}
}
