package sse

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file renders events. The Append functions write onto a caller's
// buffer so a hot path can reuse one; the fields of a frame go in the order
// retry, event, id, data, and a frame ends with a blank line.

// AppendRetry appends a `retry` field: the reconnection delay EventSource
// waits (3 s unless told).
func AppendRetry(dst []byte, d time.Duration) []byte {
	dst = append(dst, "retry: "...)
	dst = strconv.AppendInt(dst, d.Milliseconds(), 10)
	return append(dst, '\n')
}

// AppendType appends an `event` field. A type is one line: one with a line
// break is refused.
func AppendType(dst []byte, typ string) ([]byte, error) {
	if breaksLine(typ) {
		return dst, fmt.Errorf("event type %q: a type is one line", typ)
	}
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	return append(dst, '\n'), nil
}

// breaksLine says whether s holds a line break. Two byte searches cost less than
// one search for either on the short strings of a hot path.
func breaksLine(s string) bool {
	return strings.IndexByte(s, '\n') >= 0 || strings.IndexByte(s, '\r') >= 0
}

// AppendSeqID appends an `id` field of a sequence number.
func AppendSeqID(dst []byte, seq int64) []byte {
	dst = append(dst, "id: "...)
	dst = strconv.AppendInt(dst, seq, 10)
	return append(dst, '\n')
}

// AppendID appends an `id` field. An id is one line without NUL (a reader
// ignores an id with one): others are refused.
func AppendID(dst []byte, id string) ([]byte, error) {
	if breaksLine(id) || strings.IndexByte(id, 0) >= 0 {
		return dst, fmt.Errorf("event id %q: an id is one line without NUL", id)
	}
	dst = append(dst, "id: "...)
	dst = append(dst, id...)
	return append(dst, '\n'), nil
}

// StartData begins an event's data: it appends the field's name and
// returns where the data will start, for EndData. The caller appends the
// data itself between the two (a JSON encoder writing straight into the
// frame, say).
func StartData(dst []byte) ([]byte, int) {
	dst = append(dst, "data: "...)
	return dst, len(dst)
}

// EndData ends the data begun at start and the frame: data with line
// breaks goes as one `data` field a line (a reader joins them with LF;
// a CRLF or a CR alone becomes LF), then the blank line.
func EndData(dst []byte, start int) []byte {
	if bytes.IndexByte(dst[start:], '\n') < 0 && bytes.IndexByte(dst[start:], '\r') < 0 {
		return append(dst, '\n', '\n')
	}
	data := string(dst[start:])
	dst = appendLines(dst[:start-len("data: ")], "data: ", data)
	return append(dst, '\n')
}

// appendLines appends one field a line of s: the field's prefix, the line,
// an LF. Lines end at CRLF, LF or CR, as a reader splits them.
func appendLines(dst []byte, prefix, s string) []byte {
	for {
		dst = append(dst, prefix...)
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			dst = append(dst, s...)
			return append(dst, '\n')
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, '\n')
		if strings.HasPrefix(s[i:], "\r\n") {
			i++
		}
		s = s[i+1:]
	}
}

// AppendData appends an event's data and ends the frame.
func AppendData(dst, data []byte) []byte {
	dst, start := StartData(dst)
	return EndData(append(dst, data...), start)
}

// AppendEnd ends a frame of fields without data (a retry alone, say),
// which a reader takes in without dispatching an event.
func AppendEnd(dst []byte) []byte { return append(dst, '\n') }

// AppendEvent appends one whole frame: the type unless it is empty, the id
// unless it is empty, the data.
func AppendEvent(dst []byte, ev Event) ([]byte, error) {
	start := len(dst)
	var err error
	if ev.Type != "" {
		if dst, err = AppendType(dst, ev.Type); err != nil {
			return dst[:start], err
		}
	}
	if ev.ID != "" {
		if dst, err = AppendID(dst, ev.ID); err != nil {
			return dst[:start], err
		}
	}
	return AppendData(dst, ev.Data), nil
}

// AppendComment appends a comment frame, one `:` line a line of text,
// which a reader skips: a keepalive that proxies and browsers see as
// traffic.
func AppendComment(dst []byte, text string) []byte {
	return append(appendLines(dst, ": ", text), '\n')
}
