package systemtest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/hostclient"
)

// TestLedgerOutlivesTheLauncher kills the whole launcher (the nexus process,
// not only FreeCAD) of a runtime that saves every commit to its document:
// the launcher started again on the file answers a repeated call from the
// ledger kept with the file, refuses the id reused for other code, and a
// call whose save the kill interrupted (recorded, the file not replaced)
// runs again, once.
func TestLedgerOutlivesTheLauncher(t *testing.T) {
	t.Parallel()
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
