package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/hostclient"
	"nexus.local/platform/proctest"
)

// stdioReply is one JSON-RPC message the host wrote on its stdout.
type stdioReply struct {
	ID     json.RawMessage  `json:"id"`
	Result json.RawMessage  `json:"result"`
	Error  *stdioReplyError `json:"error"`
}

type stdioReplyError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

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

// ledgerToken is the pairing token of the runtimes TestLedgerOutlivesTheLauncher starts.
const ledgerToken = "pair-ledger"

// documentLauncher is one `nexus host freecad --document FILE` process.
type documentLauncher struct {
	p      *proctest.Process
	client *hostclient.Client
}

// startOnDocument runs `nexus host freecad --document file` and waits until
// its runtime answers.
func startOnDocument(t *testing.T, bin, addr, file string, env ...string) *documentLauncher {
	t.Helper()
	p := proctest.Start(t, bin, "nexus host freecad", append([]string{"NEXUS_HOST_TOKEN=" + ledgerToken}, env...),
		"host", "freecad", "--addr", addr, "--document", file)
	waitFor(t, "the runtime on "+file, 5*time.Minute, func() bool {
		if !p.Running() {
			t.Fatalf("the launcher ended:\n%s", p.Output())
		}
		return strings.Contains(p.Output(), "FreeCAD host runtime at http://"+addr)
	})
	return &documentLauncher{p: p, client: &hostclient.Client{URL: "http://" + addr, Token: ledgerToken, HTTP: &http.Client{}}}
}

// kill ends the launcher with SIGKILL, as a crash does, and waits until the
// FreeCAD runtime it started is gone too (it outlives its launcher by a
// second), so no two runtimes ever serve the file.
func (l *documentLauncher) kill(t *testing.T) {
	t.Helper()
	pid := l.p.PID()
	l.p.Kill()
	waitFor(t, "the FreeCAD runtime of the killed launcher to end", time.Minute, func() bool {
		return len(childrenOf(pid)) == 0
	})
}

// childrenOf answers the processes started with NEXUS_HOST_PARENT_PID=pid.
func childrenOf(pid int) []int {
	want := []byte("NEXUS_HOST_PARENT_PID=" + strconv.Itoa(pid) + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			out = append(out, n)
		}
	}
	return out
}

func (l *documentLauncher) execute(t *testing.T, req *hostv1.ExecuteRequest) *hostv1.HostResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := l.client.Execute(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", req.GetToolCallId(), err)
	}
	return res
}

// boxes answers the names of the document's Part::Box objects.
func (l *documentLauncher) boxes(t *testing.T) string {
	t.Helper()
	res := l.execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY,
		Code: "print(sorted(o.Name for o in doc.Objects if o.TypeId == 'Part::Box'))\n"})
	if res.GetError() != nil {
		t.Fatalf("list boxes: %v", res.GetError())
	}
	return strings.TrimSpace(res.GetStdout())
}
