package mcpserver

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// A JSON-RPC client matches each reply to its request by the id it sent, so
// the reply must carry that id byte for byte. The transport underneath reads
// a numeric id as a 64-bit integer through a double: 9007199254740993 came
// back as 9007199254740992, 1.2e59 as -9223372036854775808, 1.5 as 1. An id
// it would not echo exactly is therefore handed to it as a string of our
// own, and that string is turned back into the client's bytes on the way out.

// maxExactID is the largest integer a double holds exactly (2^53).
const maxExactID = 1 << 53

// echoedExactly reports whether the transport answers id with the same bytes:
// a canonical integer a double holds exactly, or a string with nothing an
// encoder could spell another way.
func echoedExactly(id json.RawMessage) bool {
	if n, err := strconv.ParseInt(string(id), 10, 64); err == nil {
		return strconv.FormatInt(n, 10) == string(id) && n <= maxExactID && n >= -maxExactID
	}
	if len(id) < 2 || id[0] != '"' || id[len(id)-1] != '"' {
		return false
	}
	for _, c := range id[1 : len(id)-1] {
		if c < 0x20 || c >= 0x7f || c == '\\' || c == '"' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// stand-in ids are this prefix and a random text: no client's reply holds one.
const standInPrefix = "nexus-rpc-id-"

// withStandInID answers body with its top-level id replaced by a stand-in
// string, and the stand-in; ok is false when the id cannot be found again
// in the bytes (the message is then passed on as it came).
func withStandInID(body []byte, id json.RawMessage) (out []byte, standIn string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "", false
	}
	standIn = standInPrefix + rand.Text()
	quoted := []byte(strconv.Quote(standIn))
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, "", false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, "", false
		}
		if key != "id" {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(value)
		if start < 0 || !bytes.Equal(body[start:end], id) {
			return nil, "", false
		}
		out = append(append(append([]byte{}, body[:start]...), quoted...), body[end:]...)
		return out, standIn, true
	}
	return nil, "", false
}

// idWriter writes the response with every stand-in turned back into the
// client's id. It holds back only a tail that could begin a stand-in split
// across two writes, so a stream's events still leave as they are written.
type idWriter struct {
	http.ResponseWriter
	standIn []byte // quoted
	id      []byte
	held    []byte
}

func newIDWriter(w http.ResponseWriter, standIn string, id json.RawMessage) *idWriter {
	return &idWriter{ResponseWriter: w, standIn: []byte(strconv.Quote(standIn)), id: id}
}

func (w *idWriter) WriteHeader(code int) {
	// The body changes length.
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(code)
}

func (w *idWriter) Write(p []byte) (int, error) {
	buf := bytes.ReplaceAll(append(w.held, p...), w.standIn, w.id)
	keep := 0
	for n := min(len(w.standIn)-1, len(buf)); n > 0; n-- {
		if bytes.HasSuffix(buf, w.standIn[:n]) {
			keep = n
			break
		}
	}
	w.held = append([]byte(nil), buf[len(buf)-keep:]...)
	if _, err := w.ResponseWriter.Write(buf[:len(buf)-keep]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held too: a flush means the writer has finished a
// piece, and a stand-in never spans two pieces.
func (w *idWriter) Flush() {
	w.finish()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// finish writes what is held.
func (w *idWriter) finish() {
	if len(w.held) > 0 {
		_, _ = w.ResponseWriter.Write(w.held)
		w.held = nil
	}
}

func (w *idWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// exactIDs hands next a stand-in for an id the transport would not echo
// exactly, and turns it back in the answer. body is r's body, already read.
func exactIDs(w http.ResponseWriter, r *http.Request, body []byte, id json.RawMessage, next http.Handler) {
	if echoedExactly(id) {
		next.ServeHTTP(w, r)
		return
	}
	out, standIn, ok := withStandInID(body, id)
	if !ok {
		next.ServeHTTP(w, r)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.ContentLength = int64(len(out))
	iw := newIDWriter(w, standIn, id)
	defer iw.finish()
	next.ServeHTTP(iw, r)
}
