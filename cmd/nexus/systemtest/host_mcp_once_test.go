package systemtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// mcpStdio is `nexus host freecad --mcp` driven over its stdin and stdout.
type mcpStdio struct {
	t      *testing.T
	stdin  io.WriteCloser
	mu     sync.Mutex
	byID   map[string]chan stdioReply
	stderr bytes.Buffer
	exited chan struct{}
}

// startMCPStdio starts the MCP host on the real FreeCAD runtime and
// initializes the session.
func startMCPStdio(t *testing.T, bin string) *mcpStdio {
	t.Helper()
	m := &mcpStdio{t: t, byID: map[string]chan stdioReply{}, exited: make(chan struct{})}
	cmd := exec.Command(bin, "host", "freecad", "--mcp")
	cmd.Env = append(os.Environ(), "NEXUS_HOST_ADDR=")
	cmd.Stderr = &m.stderr
	var err error
	if m.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var l stdioReply
			if json.Unmarshal(sc.Bytes(), &l) != nil || len(l.ID) == 0 {
				continue
			}
			m.reply(string(l.ID)) <- l
		}
	}()
	go func() { _ = cmd.Wait(); close(m.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-m.exited
		t.Logf("host stderr:\n%s", m.stderr.String())
	})
	m.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"go-test","version":"1"}}}`)
	if l := m.wait("1"); l.Error != nil {
		t.Fatalf("initialize answered %+v", l.Error)
	}
	m.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return m
}

func (m *mcpStdio) reply(id string) chan stdioReply {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID[id] == nil {
		m.byID[id] = make(chan stdioReply, 1)
	}
	return m.byID[id]
}

func (m *mcpStdio) send(line string) {
	m.t.Helper()
	if _, err := io.WriteString(m.stdin, line+"\n"); err != nil {
		m.t.Fatalf("write to the host: %v (stderr: %s)", err, m.stderr.String())
	}
}

// wait answers the reply to request id; starting FreeCAD takes a while on
// a loaded machine.
func (m *mcpStdio) wait(id string) stdioReply {
	m.t.Helper()
	select {
	case l := <-m.reply(id):
		return l
	case <-m.exited:
		m.t.Fatalf("the host exited waiting for request %s", id)
	case <-time.After(5 * time.Minute):
		m.t.Fatalf("no answer for request %s", id)
	}
	return stdioReply{}
}

// callTool sends tools/call as request id without waiting for its answer.
func (m *mcpStdio) callTool(id int, tool string, args map[string]any) {
	m.t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		m.t.Fatal(err)
	}
	m.send(string(b))
}

// toolAnswer is what the tests read of a tools/call answer.
type toolAnswer struct {
	IsError           bool `json:"isError"`
	StructuredContent struct {
		Committed  bool   `json:"committed"`
		Stdout     string `json:"stdout"`
		DurationMs int64  `json:"durationMs"`
		Error      *struct {
			Type string `json:"type"`
		} `json:"error"`
	} `json:"structuredContent"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
}

func (m *mcpStdio) answer(id int) toolAnswer {
	m.t.Helper()
	l := m.wait(fmt.Sprint(id))
	var a toolAnswer
	if l.Error != nil || json.Unmarshal(l.Result, &a) != nil {
		m.t.Fatalf("tools/call %d answered %+v %s", id, l.Error, l.Result)
	}
	return a
}

// TestMCPHostRunsACallIDOnce retries a run_transaction over `nexus host
// freecad --mcp` on real FreeCAD under the client's own callId: a repeat
// that races the first run and one sent after it both get the first run's
// answer, the box is in the document once, and the same callId with other
// code is refused with CallIdReused and changes nothing.
func TestMCPHostRunsACallIDOnce(t *testing.T) {
	t.Parallel()
	m := startMCPStdio(t, buildNexus(t))
	box := map[string]any{"code": "import time\ndoc.addObject('Part::Box', 'Once')\ntime.sleep(1)\n", "description": "A box", "callId": "box-1"}
	// The first and a racing repeat, before either is answered.
	m.callTool(10, "run_transaction", box)
	m.callTool(11, "run_transaction", box)
	first, racing := m.answer(10), m.answer(11)
	m.callTool(12, "run_transaction", box)
	later := m.answer(12)
	for name, a := range map[string]toolAnswer{"first": first, "racing repeat": racing, "later repeat": later} {
		if a.IsError || !a.StructuredContent.Committed {
			t.Errorf("%s: %+v, want committed", name, a)
		}
		if a.StructuredContent.DurationMs != first.StructuredContent.DurationMs {
			t.Errorf("%s ran %d ms, the first %d ms: a repeat must get the first run's answer", name, a.StructuredContent.DurationMs, first.StructuredContent.DurationMs)
		}
	}
	count := func(id int) string {
		m.callTool(id, "inspect", map[string]any{"code": "print(len([o for o in doc.Objects if o.Name.startswith('Once')]))"})
		a := m.answer(id)
		if a.IsError {
			t.Fatalf("count: %+v", a)
		}
		return strings.TrimSpace(a.StructuredContent.Stdout)
	}
	if n := count(13); n != "1" {
		t.Fatalf("the document holds %s boxes after three deliveries of one call, want 1", n)
	}
	m.callTool(14, "run_transaction", map[string]any{"code": "doc.addObject('Part::Box', 'Once')\n", "description": "Another box", "callId": "box-1"})
	reused := m.answer(14)
	if !reused.IsError || reused.StructuredContent.Error == nil || reused.StructuredContent.Error.Type != "CallIdReused" {
		t.Errorf("the same callId with other code answered %+v, want CallIdReused", reused)
	}
	if n := count(15); n != "1" {
		t.Fatalf("the refused call changed the document: %s boxes", n)
	}
	// Without a callId every call is a new one.
	m.callTool(16, "run_transaction", map[string]any{"code": "doc.addObject('Part::Box', 'Once')\n", "description": "A fresh box"})
	if a := m.answer(16); a.IsError || !a.StructuredContent.Committed {
		t.Fatalf("a call without callId: %+v, want committed", a)
	}
	if n := count(17); n != "2" {
		t.Errorf("after a fresh call the document holds %s boxes, want 2", n)
	}
}
