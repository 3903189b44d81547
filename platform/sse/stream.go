package sse

import (
	"net/http"
	"time"
)

// ContentType is the media type of an event stream.
const ContentType = "text/event-stream"

// Stream is an HTTP response that carries events: it sends its headers at
// the first write (so a handler can still answer an error as a plain
// response until then), and flushes every write.
type Stream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

// NewStream answers w with events.
func NewStream(w http.ResponseWriter) *Stream {
	return &Stream{w: w, rc: http.NewResponseController(w)}
}

// Started says whether the headers went out.
func (s *Stream) Started() bool { return s.started }

// Start sends the headers, once: the event stream's type, no caching, no
// buffering by a proxy in front (nginx reads X-Accel-Buffering). A stream
// outlives the server's write timeout by design, so it is lifted.
func (s *Stream) Start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	// A writer that cannot lift it (a test's recorder) has none to lift.
	_ = s.rc.SetWriteDeadline(time.Time{})
}

// Write sends frames, starting the stream first if need be, and flushes
// them with whatever came before.
func (s *Stream) Write(frames []byte) error {
	s.Start()
	if _, err := s.w.Write(frames); err != nil {
		return err
	}
	return s.rc.Flush()
}
