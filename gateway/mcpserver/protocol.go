package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// serverRequests are the JSON-RPC requests an MCP server answers (the MCP
// specification's client-to-server requests).
func serverRequests() []string {
	return []string{
		"initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get",
		"resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
		"resources/unsubscribe", "logging/setLevel", "completion/complete", "server/discover",
		"subscriptions/listen",
	}
}

// serverNotifications are the client-to-server notifications.
func serverNotifications() []string {
	return []string{"notifications/initialized", "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed"}
}

// codeMethodNotFound is JSON-RPC's error code for a method the server lacks.
const codeMethodNotFound = -32601

// callHeader carries, from the protocol layer to the tool handler, the token
// of a tools/call request's own cancellation (see calls). A client's value is
// always replaced.
const callHeader = "Nexus-Mcp-Call"

// calls holds the cancellation of every tools/call this server is serving.
// The transport underneath serves each POST statelessly and does not cancel
// a handler when its client goes away, so this layer does: a call ends when
// its connection closes or when the same caller sends notifications/cancelled
// for its request id.
type calls struct {
	mu      sync.Mutex
	byToken map[string]context.Context
	byID    map[string]context.CancelCauseFunc // caller NUL JSON-RPC id
}

func newCalls() *calls {
	return &calls{byToken: map[string]context.Context{}, byID: map[string]context.CancelCauseFunc{}}
}

// context answers the cancellation of the call token names, or nil.
func (c *calls) context(token string) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byToken[token]
}

// rpcMessage is the part of a JSON-RPC message the protocol layer reads.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	} `json:"params"`
}

// idKey names a request id of a caller; ids compare as compact JSON.
func idKey(user string, id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return ""
	}
	return user + "\x00" + b.String()
}

// protocol is the layer in front of the MCP transport. It answers a
// JSON-RPC request for a method no MCP server has with JSON-RPC's own error
// object (-32601, method not found) for its id, and a notification of one
// with 202 Accepted (a notification gets no answer), where the transport
// would answer 400 in plain text; it gives each tools/call a cancellation
// that follows its connection and notifications/cancelled. Every other
// message goes to next unchanged.
func (s *service) protocol(stateless, stateful http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(callHeader)
		user := s.cfg.User(r)
		sid := r.Header.Get(sessionHeader)
		next := stateless
		if sid != "" {
			// A session answers only the caller it was made for.
			if owner, ok := s.owners.of(sid); ok && owner != user {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			if r.Method == http.MethodDelete {
				s.owners.remove(sid)
			}
			next = stateful
		}
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			// The body limit already answered; an aborted read has no one to answer.
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg rpcMessage
		// Batches, responses and bodies that are not JSON are the
		// transport's to judge.
		if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
			next.ServeHTTP(w, r)
			return
		}
		notification := len(msg.ID) == 0 || string(msg.ID) == "null"
		if msg.Method == "initialize" && sid == "" && elicitationOffered(body) {
			next = stateful
		}
		if !notification {
			// The reply carries the request's id byte for byte.
			transport := next
			next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { exactIDs(w, r, body, msg.ID, transport) })
		}
		switch {
		case msg.Method == "tools/call" && !notification:
			s.serveCall(w, r, next, idKey(user+"\x00"+sid, msg.ID))
		case msg.Method == "notifications/cancelled":
			s.calls.mu.Lock()
			cancel := s.calls.byID[idKey(user+"\x00"+sid, msg.Params.RequestID)]
			s.calls.mu.Unlock()
			if cancel != nil {
				reason := msg.Params.Reason
				if reason == "" {
					reason = "no reason given"
				}
				cancel(fmt.Errorf("the MCP client cancelled the call (%s)", reason))
			}
			if sid != "" {
				// The session's own handler cancels the call it serves too.
				next.ServeHTTP(w, r)
				return
			}
			// A call this replica does not serve (or that already ended)
			// has nothing left to cancel here.
			w.WriteHeader(http.StatusAccepted)
		case slices.Contains(serverRequests(), msg.Method) || slices.Contains(serverNotifications(), msg.Method):
			next.ServeHTTP(w, r)
		case notification:
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{
				"jsonrpc": "2.0",
				"id":      msg.ID,
				"error": map[string]any{
					"code":    codeMethodNotFound,
					"message": fmt.Sprintf("method not found: %q (this MCP server answers %v)", msg.Method, serverRequests()),
				},
			})
		}
	})
}

// serveCall serves one tools/call with its own cancellation: the call's
// connection closing, or notifications/cancelled for key.
func (s *service) serveCall(w http.ResponseWriter, r *http.Request, next http.Handler, key string) {
	token := rand.Text()
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	stop := context.AfterFunc(r.Context(), func() { cancel(errors.New("the MCP client closed the connection of the call")) })
	s.calls.mu.Lock()
	s.calls.byToken[token] = ctx
	if key != "" {
		s.calls.byID[key] = cancel
	}
	s.calls.mu.Unlock()
	defer func() {
		stop()
		s.calls.mu.Lock()
		delete(s.calls.byToken, token)
		if key != "" {
			delete(s.calls.byID, key)
		}
		s.calls.mu.Unlock()
		cancel(nil)
	}()
	r.Header.Set(callHeader, token)
	next.ServeHTTP(w, r)
}

// callContext is ctx of a tool handler, also ended when its call is
// cancelled (see calls). It answers the function that releases it.
func (s *service) callContext(ctx context.Context, header http.Header) (context.Context, func()) {
	call := s.calls.context(header.Get(callHeader))
	if call == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(call, func() { cancel(context.Cause(call)) })
	return ctx, func() { stop(); cancel(nil) }
}

// sessionHeader names a stateful MCP session.
const sessionHeader = "Mcp-Session-Id"

// elicitationOffered reports whether an initialize request declares the
// elicitation capability.
func elicitationOffered(body []byte) bool {
	var init struct {
		Params struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &init) != nil {
		return false
	}
	v, ok := init.Params.Capabilities["elicitation"]
	return ok && string(v) != "null"
}

// owners binds each stateful MCP session to the caller it was made for. An
// entry not used for twice the sessions' idle limit (the session is gone)
// is dropped when the next session is made.
type owners struct {
	mu   sync.Mutex
	byID map[string]owner
}

type owner struct {
	user string
	seen time.Time
}

// add names a new session of user.
func (o *owners) add(user string) string {
	id := rand.Text()
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, v := range o.byID {
		if now.Sub(v.seen) > 2*sessionIdle {
			delete(o.byID, k)
		}
	}
	o.byID[id] = owner{user: user, seen: now}
	return id
}

func (o *owners) of(id string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.byID[id]
	if ok {
		v.seen = time.Now()
		o.byID[id] = v
	}
	return v.user, ok
}

func (o *owners) remove(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.byID, id)
}
