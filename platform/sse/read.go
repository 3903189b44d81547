package sse

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"time"
)

// Event is one dispatched event.
type Event struct {
	// Type is the event's `event` field, or "message" when it had none.
	Type string
	// ID is the stream's last event ID when the event was dispatched: an
	// `id` field holds until another replaces it, as EventSource keeps it.
	ID string
	// Data is the event's `data` lines joined by line feeds. It is valid
	// until the next call of Next.
	Data []byte
}

// DefaultType is the type of an event that names none.
const DefaultType = "message"

// firstBuffer is a stream's first line buffer; it doubles for a longer
// line. Most events are well under 1 KiB, and a buffer of 64 KiB a stream
// was the model-router's largest allocation.
const firstBuffer = 4 << 10

// maxKeptTypes is how many distinct event types a reader keeps as strings,
// so that the types a stream repeats cost no allocation.
const maxKeptTypes = 8

// ErrCut is the error of a stream that ended inside an event: fields were
// read, or a line began, but the blank line that dispatches them never
// came, so the event is discarded as the standard says.
const ErrCut = Error("the event stream ended inside an event")

// Error is an error of this package that callers can compare with ==.
type Error string

func (e Error) Error() string { return string(e) }

// Reader reads events from a stream.
type Reader struct {
	sc *bufio.Scanner
	// data, typ and pending are the event being read.
	data    []byte
	typ     string
	pending bool
	lastID  string
	retry   time.Duration
	retried bool
	types   []string
	// The line splitter's state: whether the stream has begun (a
	// byte-order mark may start it), whether an LF is to be skipped (the
	// line before ended in a CR that was the last byte then read), and
	// whether it ended with part of a line.
	begun, skipLF, partLine bool
}

// NewReader reads events from r; a line longer than maxLine bytes ends the
// stream with bufio.ErrTooLong.
func NewReader(r io.Reader, maxLine int) *Reader {
	rd := &Reader{sc: bufio.NewScanner(r)}
	rd.sc.Buffer(make([]byte, min(firstBuffer, maxLine)), maxLine)
	rd.sc.Split(rd.splitLine)
	return rd
}

// bom is U+FEFF in UTF-8, which a stream may start with.
const bom = "\xEF\xBB\xBF"

// splitLine splits a stream into lines ended by CRLF, LF or CR, and drops
// a byte-order mark that starts it. A CR at the end of what has arrived
// ends its line at once (an event ended by CR CR is dispatched without
// waiting for more), and an LF that then follows is skipped.
func (r *Reader) splitLine(data []byte, atEOF bool) (int, []byte, error) {
	if !r.begun {
		if len(data) < len(bom) && !atEOF && string(data) == bom[:len(data)] {
			return 0, nil, nil
		}
		r.begun = true
		if len(data) >= len(bom) && string(data[:len(bom)]) == bom {
			return len(bom), nil, nil
		}
	}
	if r.skipLF && len(data) > 0 {
		r.skipLF = false
		if data[0] == '\n' {
			return 1, nil, nil
		}
	}
	lf := bytes.IndexByte(data, '\n')
	search := data
	if lf >= 0 {
		search = data[:lf]
	}
	if cr := bytes.IndexByte(search, '\r'); cr >= 0 {
		switch {
		case cr+1 == lf:
			return lf + 1, data[:cr], nil
		case cr+1 == len(data) && !atEOF:
			r.skipLF = true
		}
		return cr + 1, data[:cr], nil
	}
	if lf >= 0 {
		return lf + 1, data[:lf], nil
	}
	// A last line without its line ending is not a line: the event it
	// belonged to is incomplete.
	r.partLine = atEOF && len(data) > 0 && data[0] != ':'
	return 0, nil, nil
}

// Next returns the next event. At the end of the stream it returns io.EOF,
// or ErrCut when the stream ended inside an event; with ErrCut comes what
// the event's whole lines held (no data when none had any), which a reader
// following the standard discards.
func (r *Reader) Next() (Event, error) {
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if ev, ok := r.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		r.pending = true
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			r.typ = r.typeString(value)
		case "data":
			r.data = append(r.data, value...)
			r.data = append(r.data, '\n')
		case "id":
			if bytes.IndexByte(value, 0) < 0 && string(value) != r.lastID {
				r.lastID = string(value)
			}
		case "retry":
			if ms, ok := digits(value); ok {
				r.retry, r.retried = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		return Event{}, err
	}
	if r.pending || r.partLine {
		// The standard discards the event; a caller that knows its
		// writer's events are one line each may take its whole lines.
		ev, _ := r.dispatch()
		return ev, ErrCut
	}
	return Event{}, io.EOF
}

// dispatch ends the event at a blank line: it is dispatched when it has
// data; its type and data are reset either way.
func (r *Reader) dispatch() (Event, bool) {
	data, typ := r.data, r.typ
	r.data, r.typ, r.pending = r.data[:0], "", false
	if len(data) == 0 {
		return Event{}, false
	}
	if typ == "" {
		typ = DefaultType
	}
	return Event{Type: typ, ID: r.lastID, Data: data[:len(data)-1]}, true
}

// typeString is value as a string, the same string each time a stream
// repeats a type.
func (r *Reader) typeString(value []byte) string {
	for _, t := range r.types {
		if t == string(value) {
			return t
		}
	}
	s := string(value)
	if len(r.types) < maxKeptTypes {
		r.types = append(r.types, s)
	}
	return s
}

// digits reads a retry value: ASCII digits only, else it is ignored.
func digits(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, false
	}
	return n, true
}

// LastEventID is the stream's last event ID: what a client sends as
// Last-Event-ID when it reconnects.
func (r *Reader) LastEventID() string { return r.lastID }

// Retry is the reconnection time the stream asked for, if it asked.
func (r *Reader) Retry() (time.Duration, bool) { return r.retry, r.retried }
