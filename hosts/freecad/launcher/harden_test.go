package launcher_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/hosts/freecad/launcher/launchertest"
)

// ownRuntime starts a runtime of the test's own, for tests that kill,
// restart or stop it.
func ownRuntime(t *testing.T) *launcher.Runtime {
	t.Helper()
	rt, err := launcher.Start(context.Background(), launcher.Options{Addr: "127.0.0.1:0", AllowedOrigin: testOrigin,
		StartTimeout: 5 * time.Minute, HeaderTimeout: 2 * time.Second, BodyTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	return rt
}

func executeOn(t *testing.T, rt *launcher.Runtime, req *hostv1.ExecuteRequest) *hostv1.HostResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := rt.Client.Execute(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func dumpOn(t *testing.T, rt *launcher.Runtime) string {
	t.Helper()
	res := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: launchertest.DumpScript})
	if res.GetError() != nil {
		t.Fatalf("dump: %v", res.GetError())
	}
	return res.GetStdout()
}

func TestTimeoutInterruptsBlockingCall(t *testing.T) {
	freshDocument(t)
	started := time.Now()
	res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, TimeoutMs: 2000,
		Code: "import Arch, time\nArch.makeWall(None, length=1000, width=200, height=1000)\ntime.sleep(30)\n"})
	took := time.Since(started)
	t.Logf("time.sleep(30) with a 2000 ms timeout answered after %s", took.Round(time.Millisecond))
	if res.GetCommitted() || res.GetError().GetType() != "ScriptTimeout" || res.GetError().GetLine() != 3 {
		t.Fatalf("want a ScriptTimeout at line 3, got %v", res)
	}
	// The sleep was cut short: an answer after the full sleep would mean the
	// runtime was deaf for 30 s.
	if took >= 25*time.Second {
		t.Fatalf("the blocking call was not interrupted: answered after %s", took)
	}
	if n := len(dumpOnShared(t)); n != 2 {
		t.Fatalf("the timed-out wall was kept: %d bytes of dump", n)
	}
}

// dumpOnShared is the shared runtime's dump, "{}" for an empty document.
func dumpOnShared(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(dump(t))
}

func TestRestartAfterWedgeOrExit(t *testing.T) {
	rt := ownRuntime(t)
	if res := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: seedScript}); res.GetError() != nil || !res.GetCommitted() {
		t.Fatalf("seed: %v", res)
	}
	// A restarted runtime opens the last commit from its saved file, and
	// FreeCAD's Arch objects add properties when a file is opened; the
	// document as of the last commit is what opening its file gives.
	before := reloadedDump(t, rt)
	tests := []struct {
		name     string
		code     string
		timeout  int64
		contains string
	}{
		// The loop that catches is itself inside a try that catches. With
		// one level, an interruption that arrives while the handler runs is
		// raised at the outer loop's jump back, outside the try, and the
		// script stops at its timeout after all (seen once in CI).
		{name: "a loop that catches BaseException", timeout: 2000, contains: "did not stop at its timeout of 2000 ms",
			code: "import Arch, sys, signal\nArch.makeWall(None, length=1000, width=200, height=1000)\nsys.settrace(None)\n" +
				"while True:\n    try:\n        while True:\n            try:\n                while True:\n                    pass\n" +
				"            except BaseException:\n                pass\n    except BaseException:\n        pass\n"},
		{name: "os._exit(0)", contains: "os._exit",
			code: "import Arch, os\nArch.makeWall(None, length=1000, width=200, height=1000)\ndoc.recompute()\nos._exit(0)\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid := rt.PID()
			res := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: tt.code, TimeoutMs: tt.timeout})
			e := res.GetError()
			if res.GetCommitted() || e.GetType() != "RuntimeRestarted" || !strings.Contains(e.GetMessage(), tt.contains) ||
				!strings.Contains(e.GetMessage(), "document as of the last commit") {
				t.Fatalf("want a RuntimeRestarted error naming %q, got %v", tt.contains, res)
			}
			if rt.Restarts() != i+1 || rt.PID() == pid {
				t.Fatalf("want restart %d with a new process, got %d restarts, pid %d (was %d)", i+1, rt.Restarts(), rt.PID(), pid)
			}
			if after := dumpOn(t, rt); after != before {
				t.Fatalf("document is not as of the last commit: %s", firstDifference(before, after))
			}
		})
	}
	t.Run("the next call works and commits", func(t *testing.T) {
		res := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION,
			Code: "doc.getObjectsByLabel('Level 1')[0].Label = 'Ground floor'\n"})
		if res.GetError() != nil || !res.GetCommitted() {
			t.Fatalf("want a commit, got %v", res)
		}
		if d := dumpOn(t, rt); !strings.Contains(d, "Ground floor") {
			t.Fatalf("the commit is not in the document: %s", d)
		}
	})
}

// reloadedDump is the dump of the active document as FreeCAD opens it from
// a saved copy, taken without changing the document.
func reloadedDump(t *testing.T, rt *launcher.Runtime) string {
	t.Helper()
	code := "import os, tempfile\ncur = doc\npath = os.path.join(tempfile.mkdtemp(), doc.Name + '.FCStd')\n" +
		"doc.saveCopy(path)\ndoc = App.openDocument(path)\n" + launchertest.DumpScript + "App.closeDocument(doc.Name)\nApp.setActiveDocument(cur.Name)\n"
	res := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: code})
	if res.GetError() != nil {
		t.Fatalf("reloaded dump: %v", res.GetError())
	}
	return res.GetStdout()
}

// firstDifference shows where two dumps part, briefly.
func firstDifference(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-120)
	return "before ..." + a[lo:min(len(a), i+120)] + "\nafter  ..." + b[lo:min(len(b), i+120)]
}

// processGone answers whether pid no longer runs (gone or a zombie).
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	return len(fields) > 0 && fields[0] == "Z"
}

func TestChildrenEndWithRuntime(t *testing.T) {
	rt := ownRuntime(t)
	res := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: `import subprocess
detached = subprocess.Popen(["sleep", "600"], start_new_session=True)
daemon = subprocess.run(["sh", "-c", "setsid sleep 601 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True)
print(detached.pid, daemon.stdout.strip())
`})
	if res.GetError() != nil {
		t.Fatal(res.GetError())
	}
	var pids []int
	for _, f := range strings.Fields(res.GetStdout()) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("script printed %q", res.GetStdout())
		}
		pids = append(pids, pid)
	}
	if len(pids) != 2 {
		t.Fatalf("want two pids, got %q", res.GetStdout())
	}
	for _, pid := range pids {
		if processGone(pid) {
			t.Fatalf("child %d is not running before the stop", pid)
		}
	}
	if err := rt.Stop(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for !processGone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("child %d outlived the runtime", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// rawRequest writes head (and then body) on a new connection and answers
// the status line the server sent, or "" when it closed without one.
func rawRequest(t *testing.T, base, head string, body io.Reader) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		// The server may refuse and close before the body is in; a failed
		// write is then expected.
		go func() { _, _ = io.Copy(conn, body) }()
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line)
}

func TestHTTPRefusals(t *testing.T) {
	rt := ownRuntime(t)
	servers := []struct{ name, url string }{{"launcher", rt.URL()}, {"freecad process", rt.BackendURL()}}
	const code = `{"mode":"MODE_TRANSACTION","code":"doc.addObject('Part::Box', 'Smuggled')"}`
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Run("a negative Content-Length with a large body is not executed", func(t *testing.T) {
				head := "POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + rt.Token() +
					"\r\nContent-Type: application/json\r\nContent-Length: -1\r\n\r\n"
				status := rawRequest(t, srv.url, head, io.MultiReader(strings.NewReader(code), io.LimitReader(zeros{}, 40<<20)))
				if !strings.Contains(status, " 400 ") {
					t.Fatalf("want 400, got %q", status)
				}
			})
			t.Run("the token comes first", func(t *testing.T) {
				head := "POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 99999999\r\n\r\n"
				if status := rawRequest(t, srv.url, head, nil); !strings.Contains(status, " 401 ") {
					t.Fatalf("want 401 before the size is looked at, got %q", status)
				}
			})
			t.Run("slow headers are cut off", func(t *testing.T) {
				u, _ := url.Parse(srv.url)
				conn, err := net.Dial("tcp", u.Host)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = conn.Close() }()
				closed := make(chan string, 1)
				go func() {
					b, _ := io.ReadAll(conn)
					closed <- string(b)
				}()
				_, _ = io.WriteString(conn, "GET /v1/info HTTP/1.1\r\nHost: x\r\n")
				// One header byte every 200 ms for up to 60 s: far longer than
				// the 2 s the server allows for headers.
				tick := time.NewTicker(200 * time.Millisecond)
				defer tick.Stop()
				for i := 0; ; i++ {
					select {
					case answer := <-closed:
						if answer != "" && !strings.HasPrefix(answer, "HTTP/1.1 408") && !strings.HasPrefix(answer, "HTTP/1.1 400") {
							t.Fatalf("want a refusal (408, 400) or a closed connection, got %q", answer)
						}
						t.Logf("closed after %d header bytes, answer %q", i, strings.SplitN(answer, "\r\n", 2)[0])
						return
					case <-tick.C:
						if i > 300 {
							t.Fatal("the server still waits for headers after 60 s")
						}
						_, _ = io.WriteString(conn, "X")
					}
				}
			})
		})
	}
	res := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: "print(doc.getObject('Smuggled'))\n"})
	if strings.TrimSpace(res.GetStdout()) != "None" {
		t.Fatalf("a refused request was executed: %v", res)
	}
	resp, err := http.Get(rt.URL() + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("want 401 without a token, got %d", resp.StatusCode)
	}
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestRollbackReloadsWhatUndoCannot covers a script that changes the
// document with undo switched off: FreeCAD keeps no record of that change,
// so the runtime reloads the document it saved before the run.
func TestRollbackReloadsWhatUndoCannot(t *testing.T) {
	freshDocument(t)
	if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: seedScript}); res.GetError() != nil {
		t.Fatalf("seed: %v", res.GetError())
	}
	before := reloadedDump(t, shared)
	res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION,
		Code: "doc.abortTransaction()\ndoc.UndoMode = 0\ndoc.getObject('Wall').Label = 'unrecorded'\ndoc.getObject('Wall').Height = 9000\n" +
			"doc.recompute()\ndoc.UndoMode = 1\nraise RuntimeError('and fail')\n"})
	if res.GetCommitted() || res.GetError().GetType() != "RuntimeError" || strings.Contains(res.GetError().GetMessage(), "not exact") {
		t.Fatalf("want a clean RuntimeError rollback, got %v", res)
	}
	if res.GetRollback() != hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT || len(res.GetRollbackDifferences()) > 0 {
		t.Fatalf("want the rollback field to say exact, got %v %q", res.GetRollback(), res.GetRollbackDifferences())
	}
	if after := dump(t); after != before {
		t.Fatalf("document not restored: %s", firstDifference(before, after))
	}
	t.Run("a commit of the script's own into a full undo history", func(t *testing.T) {
		// FreeCAD keeps 20 undo steps; at that bound a commit pushes out the
		// oldest and the undo count does not move.
		for i := range 25 {
			if res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION,
				Code: fmt.Sprintf("doc.getObject('Wall').Label = 'step %d'\n", i)}); res.GetError() != nil {
				t.Fatalf("step %d: %v", i, res.GetError())
			}
		}
		before := reloadedDump(t, shared)
		res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY,
			Code: "doc.getObject('Wall').Label = 'kept?'\ndoc.commitTransaction()\n"})
		if res.GetError().GetType() != "ReadOnlyViolation" {
			t.Fatalf("want a ReadOnlyViolation, got %v", res)
		}
		if after := dump(t); after != before {
			t.Fatalf("the change the script committed itself was kept: %s", firstDifference(before, after))
		}
	})
}
