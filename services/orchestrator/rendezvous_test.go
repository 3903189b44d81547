package orchestrator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
	"nexus.local/services/orchestrator/state/statetest"
)

// maxRendezvousRoundTrips is how many round trips to Redis the tool-result
// rendezvous may wait for (docs/bench.md lists them).
const maxRendezvousRoundTrips = 5

// TestRendezvousRoundTrips counts the round trips to Redis between a
// courier's result post and the model request that carries the result,
// through a proxy that sees each client write (one command, or one
// pipeline: one round trip). Work off the run's path is not counted: the
// outbox's writes to the audit log and history, the sweeper's scans, the
// answered call's removal from the host's delivery log (by the courier's
// request after it woke the run, and by the worker beside the next turn),
// and a new connection's handshake.
func TestRendezvousRoundTrips(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv, redisURL, rec := countedRedis(t)

	// Two calls: the first rendezvous loads Redis's script cache, the
	// second is counted.
	asked := make(chan int, 1)
	vendor := ot.NewAnthropicFunc(t, func(req ot.Request) ot.Turn {
		results := 0
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_result" {
					results++
				}
			}
		}
		if results < 2 {
			return ot.Turn{Blocks: []ot.Block{ot.ToolUse(fmt.Sprintf("toolu_rv%d", results), "execute_data_collection", map[string]any{"code": "print(1)", "description": "Look"})}}
		}
		select {
		case asked <- rec.len():
		default:
		}
		return ot.Turn{Blocks: []ot.Block{ot.Text("Seen.")}}
	})
	stack := ot.Start(t, vendor.URL, countedEnv(redisURL))
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	sessionID, runID := startRun(ctx, t, stack.Client)
	// suspended waits until the run gave its lease up and then looked into
	// its mailbox once more, the last thing its worker does.
	suspended := func() {
		for {
			if owner, err := leaseOwner(ctx, rdb, runID); err == nil && owner == "" && rec.lastIs(runID, "hmget", "mb:{"+sessionID+"}") {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatal("the run never suspended")
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	first := nextToolCall(ctx, t, stack.Client, runID, 0)
	suspended()
	if err := submit(ctx, stack.Client, sessionID, first.GetToolCall(), &hostv1.HostResult{Stdout: "seen"}); err != nil {
		t.Fatalf("post the first result: %v", err)
	}
	second := nextToolCall(ctx, t, stack.Client, runID, first.GetSeq())
	suspended()

	from := rec.len()
	if err := submit(ctx, stack.Client, sessionID, second.GetToolCall(), &hostv1.HostResult{Stdout: "seen again"}); err != nil {
		t.Fatalf("post the second result: %v", err)
	}
	var to int
	select {
	case to = <-asked:
	case <-ctx.Done():
		t.Fatal("the model was never asked again")
	}
	n := 0
	for i, w := range rec.between(from, to) {
		why := offPath(w, runID)
		if why == "" {
			n++
		}
		t.Logf("%2d %-70s %s", i+1, w.String(), why)
	}
	t.Logf("%d round trips on the rendezvous's path", n)
	if n > maxRendezvousRoundTrips {
		t.Errorf("the rendezvous waited for %d round trips to Redis, want at most %d", n, maxRendezvousRoundTrips)
	}
}

// TestResultsOutliveATurnLimit: a turn's tool results are saved with the
// next turn's start; a run that stops before that turn (here at its turn
// limit) saves them on its way out, so the next run's model is told the
// result, not that the call went unanswered.
func TestResultsOutliveATurnLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_lim", "execute_data_collection", map[string]any{"code": "print(1)", "description": "Look"})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("Seen.")}},
	)
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_MAX_TURNS": "1"}))
	sess := newSession(ctx, t, stack.Client)
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Look"},
		func(*agentv1.ToolCall) *hostv1.HostResult { return &hostv1.HostResult{Stdout: "kept-result"} })
	if err != nil {
		t.Fatal(err)
	}
	if code := chunks[len(chunks)-1].GetError().GetCode(); code != agentv1.ErrorCode_ERROR_CODE_TURN_LIMIT {
		t.Fatalf("the first run ended with %v, want its turn limit", chunks[len(chunks)-1])
	}
	if _, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Again"}, nil); err != nil {
		t.Fatal(err)
	}
	reqs := vendor.Requests()
	got := ""
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" && b.ToolUseID == "toolu_lim" {
				got, _ = b.ToolResultText()
			}
		}
	}
	if !strings.Contains(got, "kept-result") {
		t.Fatalf("the next run told the model %q of the first run's call, want its result", got)
	}
}

// countedRedis starts a Redis server of the test's own behind a proxy that
// records every client write (a rule that never fires sees them all), and
// answers the server, the proxy's URL and the record.
func countedRedis(t *testing.T) (*statetest.RedisServer, string, *writeLog) {
	t.Helper()
	srv := statetest.StartRedis(t, "everysec")
	proxy := statetest.StartFaultProxy(t, srv.Addr())
	rec := &writeLog{}
	proxy.Add(&statetest.FaultRule{Match: rec.match})
	return srv, proxy.URL(), rec
}

// countedEnv is the stack's settings for a count of round trips through
// redisURL: lease renewals and the sweeper's scans wait far beyond the test.
func countedEnv(redisURL string) map[string]string {
	return withEnv(map[string]string{"NEXUS_REDIS_URL": redisURL, "NEXUS_LOG_LEVEL": "error",
		"NEXUS_TOOL_RESULT_TIMEOUT": "30m", "NEXUS_RUN_LEASE": "10m"})
}

// nextToolCall follows the run from after seq to its next tool call, and
// stops following.
func nextToolCall(ctx context.Context, t *testing.T, c agentv1.OrchestratorServiceClient, runID string, after int64) *agentv1.StreamChunk {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.StreamRunEvents(ctx, &agentv1.StreamRunEventsRequest{RunId: runID, AfterSeq: after})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ch, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			t.Fatal("the run ended without a tool call")
		}
		if err != nil {
			t.Fatalf("follow the run: %v", err)
		}
		if ch.GetToolCall() != nil {
			return ch
		}
	}
}

// offPath says why a write is not on the rendezvous's path, or "" when it is.
func offPath(w write, runID string) string {
	all := func(pred func(c command) bool) bool {
		for _, c := range w {
			if !pred(c) {
				return false
			}
		}
		return len(w) > 0
	}
	switch {
	case all(func(c command) bool {
		return c.is("ping", "hello", "client", "auth", "select", "subscribe", "psubscribe", "unsubscribe", "punsubscribe", "multi", "exec")
	}):
		return "(connection)"
	case all(func(c command) bool {
		return c.touchesOnly(":ob:{", ":obl:{", ":obr:{", "{outbox}") || c.is("multi", "exec")
	}):
		return "(outbox)"
	case all(func(c command) bool { return c.touchesOnly(":hl:{") || c.is("multi", "exec") }):
		return "(delivery-log clean-up)"
	case all(func(c command) bool { return c.touchesOnly("{leases}") && !c.names(runID) }):
		return "(sweeper)"
	}
	return ""
}

// writeLog records every client write a proxy saw, as commands.
type writeLog struct {
	mu     sync.Mutex
	writes []write
}

// match records b and never fires.
func (l *writeLog) match(b []byte) bool {
	w := parseWrite(b)
	l.mu.Lock()
	l.writes = append(l.writes, w)
	l.mu.Unlock()
	return false
}

func (l *writeLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.writes)
}

func (l *writeLog) between(from, to int) []write {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]write(nil), l.writes[from:to]...)
}

// lastIs says whether the last write about the run (offPath) was command
// name alone, on key.
func (l *writeLog) lastIs(runID, name, key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.writes) - 1; i >= 0; i-- {
		if w := l.writes[i]; offPath(w, runID) == "" {
			return len(w) == 1 && w[0].is(name) && len(w[0]) > 1 && strings.Contains(w[0][1], key)
		}
	}
	return false
}

// write is what one client write carried: a command, or a pipeline's.
type write []command

// command is a command's name and arguments.
type command []string

func (c command) is(names ...string) bool {
	for _, n := range names {
		if len(c) > 0 && strings.EqualFold(c[0], n) {
			return true
		}
	}
	return false
}

// keys are the command's keys: a script's declared keys, or the first
// argument of any other command.
func (c command) keys() []string {
	if c.is("evalsha", "eval") && len(c) > 2 {
		n, _ := strconv.Atoi(c[2])
		return c[3:min(3+n, len(c))]
	}
	if len(c) > 1 {
		return c[1:2]
	}
	return nil
}

// touchesOnly says whether every key of the command holds one of parts.
func (c command) touchesOnly(parts ...string) bool {
	keys := c.keys()
	for _, k := range keys {
		found := false
		for _, p := range parts {
			found = found || strings.Contains(k, p)
		}
		if !found {
			return false
		}
	}
	return len(keys) > 0
}

// names says whether an argument of the command holds s.
func (c command) names(s string) bool {
	for _, a := range c[1:] {
		if strings.Contains(a, s) {
			return true
		}
	}
	return false
}

func (w write) String() string {
	var parts []string
	for _, c := range w {
		if c.is("multi", "exec") {
			continue
		}
		p := strings.ToLower(c[0])
		if k := c.keys(); len(k) > 0 {
			p += " " + strings.TrimPrefix(k[0], "nexus:")
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " | ")
}

// parseWrite reads the RESP arrays of one client write; a write cut short
// keeps what was whole.
func parseWrite(b []byte) write {
	var w write
	for len(b) > 0 && b[0] == '*' {
		n, rest, ok := respInt(b[1:])
		if !ok {
			break
		}
		b = rest
		c := make(command, 0, n)
		for range n {
			if len(b) == 0 || b[0] != '$' {
				return append(w, c)
			}
			l, rest, ok := respInt(b[1:])
			if !ok || len(rest) < l+2 {
				return append(w, c)
			}
			c = append(c, string(rest[:l]))
			b = rest[l+2:]
		}
		w = append(w, c)
	}
	return w
}

func respInt(b []byte) (int, []byte, bool) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return 0, nil, false
	}
	n, err := strconv.Atoi(string(b[:i]))
	return n, b[i+2:], err == nil
}
