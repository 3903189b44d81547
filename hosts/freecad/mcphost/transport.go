package mcphost

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one line of the stdio transport, that is one JSON-RPC
// message; the largest script (1 MiB) fits with room for its JSON escapes.
const MaxLineBytes = 16 << 20

// LineTransport is the stdio transport: newline-delimited JSON-RPC, read by
// this package rather than by the SDK's own transport, which ends the session
// on the first line it cannot decode. A line that is not JSON is answered
// with a parse error (-32700), one that is not a JSON-RPC message or is over
// MaxLineBytes with an invalid request error (-32600) naming the limit, and
// the server keeps serving. Batches (a JSON array), which MCP no longer has,
// are refused the same way.
type LineTransport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxLineBytes bounds one line; 0 means MaxLineBytes.
	MaxLineBytes int
	Log          *slog.Logger
}

// Connect starts reading lines; it is called once, by Server.Run.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{r: t.Reader, w: t.Writer, max: t.MaxLineBytes, log: t.Log,
		incoming: make(chan readResult), closed: make(chan struct{})}
	if c.max <= 0 {
		c.max = MaxLineBytes
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	go c.readLines()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	r        io.ReadCloser
	w        io.WriteCloser
	max      int
	log      *slog.Logger
	writeMu  sync.Mutex
	incoming chan readResult
	closed   chan struct{}
	once     sync.Once
}

// readLines hands each JSON-RPC message to Read and answers every line that
// is none itself; the end of input (or a failed read) ends the connection.
func (c *lineConn) readLines() {
	br := bufio.NewReaderSize(c.r, 64<<10)
	for {
		line, size, over, err := readLine(br, c.max)
		if over {
			c.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf(
				"the line of %d bytes is over the limit of %d bytes for one JSON-RPC message (one message per line); it was not read", size, c.max))
		} else if msg := c.message(line); msg != nil {
			select {
			case c.incoming <- readResult{msg: msg}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine reads up to and without the next newline. A line over max is
// discarded as it arrives: over is set and size says how long it was.
func readLine(br *bufio.Reader, max int) (line []byte, size int, over bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if !over && len(line)+len(chunk) > max+len("\r\n") {
			over, line = true, nil
		}
		if !over {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			size-- // the newline
		}
		return bytes.TrimRight(line, "\r\n"), size, over, err
	}
}

// message decodes one line, or answers why it is not a message and returns
// nil. A blank line is nothing.
func (c *lineConn) message(line []byte) jsonrpc.Message {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			c.refuse(nil, jsonrpc.CodeParseError, fmt.Sprintf("parse error: the line is not JSON (%v at byte %d)", se, se.Offset))
		case errors.As(err, &te) && line[0] == '[':
			c.refuse(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line")
		default:
			c.refuse(nil, jsonrpc.CodeInvalidRequest, "the line is JSON but not a JSON-RPC message object")
		}
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.refuse(probe.ID, jsonrpc.CodeInvalidRequest, "the line is not a JSON-RPC 2.0 message: "+err.Error())
		return nil
	}
	return msg
}

// refuse answers a line that is no message with a JSON-RPC error; id is the
// line's own when it had one that can be read, else null.
func (c *lineConn) refuse(id json.RawMessage, code int64, message string) {
	c.log.Warn("mcp line refused", "code", code, "reason", message)
	if len(id) == 0 || !validID(id) {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	if err == nil {
		err = c.writeLine(b)
	}
	if err != nil {
		c.log.Warn("answer a refused mcp line", "err", err)
	}
}

// validID says whether raw is a JSON-RPC id: a string, a number or null.
func validID(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	_, err := jsonrpc.MakeID(v)
	return err == nil
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.incoming:
		return r.msg, r.err
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(b)
}

func (c *lineConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}

// Close ends the connection; reading stops at the next line, since a read of
// stdin cannot be interrupted portably.
func (c *lineConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		err = errors.Join(c.r.Close(), c.w.Close())
	})
	return err
}

func (c *lineConn) SessionID() string { return "" }
