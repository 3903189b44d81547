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
	"testing"
	"time"

	"nexus.local/hosts/freecad/mcphost"
)

// TestMCPHostStdioKeepsServingAfterBadLines starts `nexus host freecad --mcp`
// on the real FreeCAD runtime and writes it lines no JSON-RPC server should
// die of: one that is not JSON, one over the line limit (20 MB), JSON that is
// no JSON-RPC message, and a batch. Each is answered with a JSON-RPC error
// (-32700 for the parse error, id null; the long line's error names the
// limit), and after them the host still lists its tools and runs a script in
// FreeCAD; closing stdin ends it with exit status 0.
func TestMCPHostStdioKeepsServingAfterBadLines(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	cmd := exec.Command(bin, "host", "freecad", "--mcp")
	cmd.Env = append(os.Environ(), "NEXUS_HOST_ADDR=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	lines := make(chan stdioReply, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var l stdioReply
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				// Passed on as an answer no check accepts.
				l.Error = &stdioReplyError{Message: "the host wrote a line that is not JSON-RPC: " + sc.Text()}
			}
			lines <- l
		}
	}()
	// Wait closes stdout, so it runs once the reader above started.
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		t.Logf("host stderr:\n%s", stderr.String())
	})
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("write to the host: %v (stderr: %s)", err, stderr.String())
		}
	}
	// Starting FreeCAD takes a while on a loaded machine.
	next := func(what string) stdioReply {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the host closed its output waiting for %s", what)
			}
			return l
		case <-exited:
			t.Fatalf("the host exited (%v) waiting for %s", waitErr, what)
		case <-time.After(5 * time.Minute):
			t.Fatalf("no answer for %s", what)
		}
		return stdioReply{}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"go-test","version":"1"}}}`)
	if l := next("initialize"); string(l.ID) != "1" || l.Error != nil {
		t.Fatalf("initialize answered %+v", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	bad := []struct {
		name, line string
		code       int
		id         string
		mentions   string
	}{
		{"not JSON", `{not json`, -32700, "null", "not JSON"},
		{"over the line limit", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 20<<20) + `"}}`,
			-32600, "null", fmt.Sprintf("limit of %d bytes", mcphost.MaxLineBytes)},
		{"JSON but no message", `{"hello":"world"}`, -32600, "null", "JSON-RPC"},
		{"a JSON string", `"tools/list"`, -32600, "null", "JSON-RPC"},
		{"a wrong version with an id", `{"jsonrpc":"1.0","id":7,"method":"tools/list"}`, -32600, "7", "JSON-RPC 2.0"},
		{"a batch", `[{"jsonrpc":"2.0","id":8,"method":"tools/list"}]`, -32600, "null", "batch"},
	}
	for _, b := range bad {
		send(b.line)
		l := next(b.name)
		if l.Error == nil || l.Error.Code != b.code || string(l.ID) != b.id || !strings.Contains(l.Error.Message, b.mentions) {
			t.Errorf("%s: answered id %s %+v, want error %d with id %s naming %q", b.name, l.ID, l.Error, b.code, b.id, b.mentions)
		}
	}

	send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if l := next("tools/list"); string(l.ID) != "3" || l.Error != nil || !strings.Contains(string(l.Result), `"run_transaction"`) {
		t.Fatalf("tools/list after the bad lines answered id %s %+v %.200s", l.ID, l.Error, l.Result)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"inspect","arguments":{"code":"print('objects:', len(App.ActiveDocument.Objects))"}}}`)
	l := next("tools/call inspect")
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Stdout string `json:"stdout"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(l.Result, &res); err != nil || string(l.ID) != "4" || res.IsError || !strings.Contains(res.StructuredContent.Stdout, "objects: ") {
		t.Fatalf("inspect after the bad lines answered id %s %+v %s (%v)", l.ID, l.Error, l.Result, err)
	}

	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("closing stdin ended the host with %v, want exit status 0", waitErr)
		}
	case <-time.After(2 * time.Minute):
		t.Error("the host did not exit after its stdin closed")
	}
}
