package systemtest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/hostclient"
	"nexus.local/platform/proctest"
)

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

// TestLedgerOutlivesTheLauncher kills the whole launcher (the nexus process,
// not only FreeCAD) of a runtime that saves every commit to its document:
// the launcher started again on the file answers a repeated call from the
// ledger kept with the file, refuses the id reused for other code, and a
// call whose save the kill interrupted (recorded, the file not replaced)
// runs again, once.
func TestLedgerOutlivesTheLauncher(t *testing.T) {
	bin := buildNexus(t)
	addr := freeAddr(t)
	file := filepath.Join(t.TempDir(), "house.FCStd")
	const halt = "NEXUS_HOST_TEST_HALT_SAVE_OF_CALL=call-halt"
	boxX := &hostv1.ExecuteRequest{ToolCallId: "call-x", Mode: hostv1.Mode_MODE_TRANSACTION,
		Code: "doc.addObject('Part::Box', 'X')\nimport time\nprint('x at', time.time_ns())\n"}

	first := startOnDocument(t, bin, addr, file, halt)
	answer := first.execute(t, boxX)
	if !answer.GetCommitted() || answer.GetSave().GetOutcome() != hostv1.SaveOutcome_SAVE_OUTCOME_SAVED {
		t.Fatalf("want call-x committed and saved to %s, got %v", file, answer)
	}
	first.kill(t)

	second := startOnDocument(t, bin, addr, file, halt)
	t.Run("a repeat after the launcher restarted is answered from the ledger", func(t *testing.T) {
		if again := second.execute(t, boxX); !proto.Equal(again, answer) {
			t.Fatalf("want the first answer again\nfirst  %v\nsecond %v", answer, again)
		}
		if got := second.boxes(t); got != "['X']" {
			t.Fatalf("the document holds boxes %s, want ['X']", got)
		}
	})
	t.Run("the id reused for other code is refused and changes nothing", func(t *testing.T) {
		saved, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		res, err := second.client.Execute(context.Background(), &hostv1.ExecuteRequest{ToolCallId: "call-x",
			Mode: hostv1.Mode_MODE_TRANSACTION, Code: "doc.addObject('Part::Box', 'Other')\n"})
		var se *hostclient.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusConflict || res.GetError().GetType() != "CallIdReused" {
			t.Fatalf("want 409 CallIdReused, got %v, %v", res, err)
		}
		if got := second.boxes(t); got != "['X']" {
			t.Fatalf("the document holds boxes %s, want ['X']", got)
		}
		if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, saved) {
			t.Fatalf("a refused call changed %s (%v)", file, err)
		}
	})

	// The test hook stops the runtime once the save of call-halt is in the
	// ledger, before the file is replaced; the kill lands exactly there.
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	boxH := &hostv1.ExecuteRequest{ToolCallId: "call-halt", Mode: hostv1.Mode_MODE_TRANSACTION,
		Code: "doc.addObject('Part::Box', 'H')\n"}
	go func() { _, _ = second.client.Execute(context.Background(), boxH) }()
	waitFor(t, "the runtime to halt before saving call-halt", 5*time.Minute, func() bool {
		return strings.Contains(second.p.Output(), "halted before saving "+file)
	})
	second.kill(t)
	if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, saved) {
		t.Fatalf("the interrupted save changed %s (%v)", file, err)
	}

	third := startOnDocument(t, bin, addr, file)
	t.Run("a call recorded but not saved to the file runs again once", func(t *testing.T) {
		ran := third.execute(t, boxH)
		if !ran.GetCommitted() || ran.GetSave().GetOutcome() != hostv1.SaveOutcome_SAVE_OUTCOME_SAVED {
			t.Fatalf("want call-halt run again, committed and saved, got %v", ran)
		}
		if again := third.execute(t, boxH); !proto.Equal(again, ran) {
			t.Fatalf("want the second run's answer again\nran   %v\nagain %v", ran, again)
		}
		if again := third.execute(t, boxX); !proto.Equal(again, answer) {
			t.Fatalf("call-x: want the first answer again\nfirst  %v\nagain  %v", answer, again)
		}
		if got := third.boxes(t); got != "['H', 'X']" {
			t.Fatalf("the document holds boxes %s, want ['H', 'X']", got)
		}
	})
	if _, err := third.p.Interrupt(time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := boxesInFile(t, file); got != "['H', 'X']" {
		t.Fatalf("%s holds boxes %s, want ['H', 'X']", file, got)
	}
}

// boxesInFile answers the Part::Box names a FreeCAD of its own finds in file.
func boxesInFile(t *testing.T, file string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "boxes.py")
	code := "import FreeCAD\ndoc = FreeCAD.openDocument(" + pyString(file) + ")\n" +
		"print('BOXES ' + str(sorted(o.Name for o in doc.Objects if o.TypeId == 'Part::Box')))\n"
	if err := os.WriteFile(script, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("freecadcmd", script).CombinedOutput()
	if err != nil {
		t.Fatalf("freecadcmd: %v\n%s", err, out)
	}
	_, rest, ok := strings.Cut(string(out), "BOXES ")
	if !ok {
		t.Fatalf("freecadcmd printed no boxes:\n%s", out)
	}
	line, _, _ := strings.Cut(rest, "\n")
	return strings.TrimSpace(line)
}
