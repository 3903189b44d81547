package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/platform/hostclient"
)

// boxCount is how many Part::Box objects the served document holds.
func boxCount(t *testing.T, rt *launcher.Runtime) string {
	t.Helper()
	res := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY,
		Code: "print(len([o for o in doc.Objects if o.TypeId == 'Part::Box']))\n"})
	if res.GetError() != nil {
		t.Fatalf("count boxes: %v", res.GetError())
	}
	return strings.TrimSpace(res.GetStdout())
}

// sameAnswer fails unless b is a's answer again, field for field.
func sameAnswer(t *testing.T, what string, a, b *hostv1.HostResult) {
	t.Helper()
	if !proto.Equal(a, b) {
		t.Fatalf("%s: want the first answer again\nfirst  %v\nsecond %v", what, a, b)
	}
}

// TestCallLedger: the runtime runs each tool call id once. A repeat is
// answered from its ledger (also while the first still runs, and after the
// FreeCAD process was killed and restarted on its checkpoint); an id reused
// for other bytes or another mode is refused with CallIdReused and 409.
func TestCallLedger(t *testing.T) {
	rt := ownRuntime(t)
	ctx := context.Background()
	boxCall := &hostv1.ExecuteRequest{ToolCallId: "call-1", Mode: hostv1.Mode_MODE_TRANSACTION,
		Code: "doc.addObject('Part::Box', 'B')\nprint('boxes:', len(doc.Objects))\n"}
	first := executeOn(t, rt, boxCall)
	if !first.GetCommitted() || first.GetError() != nil {
		t.Fatalf("want a commit, got %v", first)
	}

	t.Run("the same call id delivered twice commits once", func(t *testing.T) {
		sameAnswer(t, "repeat", first, executeOn(t, rt, boxCall))
		if n := boxCount(t, rt); n != "1" {
			t.Fatalf("want 1 box, the document has %s", n)
		}
	})

	t.Run("a reused id with other bytes or another mode is refused and changes nothing", func(t *testing.T) {
		before := dumpOn(t, rt)
		for _, req := range []*hostv1.ExecuteRequest{
			{ToolCallId: "call-1", Mode: hostv1.Mode_MODE_TRANSACTION, Code: "doc.addObject('Part::Box', 'Other')\n"},
			{ToolCallId: "call-1", Mode: hostv1.Mode_MODE_READ_ONLY, Code: boxCall.GetCode()},
		} {
			res, err := rt.Client.Execute(ctx, req)
			var se *hostclient.StatusError
			if !errors.As(err, &se) || se.Code != http.StatusConflict {
				t.Fatalf("%s: want HTTP 409, got %v", req.GetMode(), err)
			}
			if res.GetCommitted() || res.GetError().GetType() != "CallIdReused" || !strings.Contains(res.GetError().GetMessage(), "call-1") {
				t.Fatalf("%s: want a CallIdReused error naming the id, got %v", req.GetMode(), res)
			}
		}
		if after := dumpOn(t, rt); after != before {
			t.Fatalf("a refused call changed the document: %s", firstDifference(before, after))
		}
	})

	t.Run("a repeat racing the first run gets the first one's answer", func(t *testing.T) {
		dir := t.TempDir()
		started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
		slow := &hostv1.ExecuteRequest{ToolCallId: "call-slow", Mode: hostv1.Mode_MODE_TRANSACTION, Code: "import os, time\n" +
			"open(" + pyString(started) + ", 'w').close()\n" +
			"while not os.path.exists(" + pyString(release) + "):\n    time.sleep(0.05)\n" +
			"doc.addObject('Part::Box', 'Slow')\nprint('slow done at', time.time())\n"}
		type answer struct {
			res *hostv1.HostResult
			err error
		}
		call := func(ctx context.Context, out chan<- answer) {
			res, err := rt.Client.Execute(ctx, slow)
			out <- answer{res, err}
		}
		firstDone, repeatDone := make(chan answer, 1), make(chan answer, 1)
		go call(ctx, firstDone)
		waitFor(t, "the slow script to start", func() bool { _, err := os.Stat(started); return err == nil })
		wrote := make(chan struct{})
		traced := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) }})
		go call(traced, repeatDone)
		<-wrote
		if err := os.WriteFile(release, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		a, b := <-firstDone, <-repeatDone
		if a.err != nil || b.err != nil {
			t.Fatalf("first %v, repeat %v", a.err, b.err)
		}
		if !a.res.GetCommitted() {
			t.Fatalf("want a commit, got %v", a.res)
		}
		sameAnswer(t, "racing repeat", a.res, b.res)
		if n := boxCount(t, rt); n != "2" {
			t.Fatalf("want 2 boxes (B and Slow), the document has %s", n)
		}
	})

	t.Run("the ledger keeps at least the last 256 calls", func(t *testing.T) {
		const calls = 260
		clock := "import time\nprint(time.time_ns())\n"
		var oldest *hostv1.HostResult
		for i := range calls {
			res := executeOn(t, rt, &hostv1.ExecuteRequest{ToolCallId: fmt.Sprint("call-many-", i), Mode: hostv1.Mode_MODE_READ_ONLY, Code: clock})
			if i == 5 {
				oldest = res
			}
		}
		sameAnswer(t, fmt.Sprintf("repeat of the %dth newest call", calls-5), oldest,
			executeOn(t, rt, &hostv1.ExecuteRequest{ToolCallId: "call-many-5", Mode: hostv1.Mode_MODE_READ_ONLY, Code: clock}))
	})

	t.Run("the ledger survives a kill -9 of the FreeCAD process", func(t *testing.T) {
		pid, restarts := rt.PID(), rt.Restarts()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the runtime to restart", func() bool { return rt.Restarts() > restarts })
		sameAnswer(t, "repeat after the restart", first, executeOn(t, rt, boxCall))
		if n := boxCount(t, rt); n != "2" {
			t.Fatalf("want 2 boxes after the restart and the repeat, the document has %s", n)
		}
		res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{ToolCallId: "call-1", Mode: hostv1.Mode_MODE_TRANSACTION, Code: "pass\n"})
		if res.GetError().GetType() != "CallIdReused" || err == nil {
			t.Fatalf("want CallIdReused after the restart, got %v, %v", res, err)
		}
	})
}

// pyString quotes s as a Python string literal.
func pyString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// waitFor polls cond until it holds, for up to five minutes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
