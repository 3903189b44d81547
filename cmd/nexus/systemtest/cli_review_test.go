package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/hosts/freecad/launcher"
)

// reviewTimeout bounds one demo run with its reviews on a loaded machine.
const reviewTimeout = 3 * time.Minute

// ptyRun runs nexus in a pseudo-terminal, as a person does, answering each
// script that awaits review with answer(n) for the n-th one (from 0).
func ptyRun(t *testing.T, bin string, env []string, answer func(n int) string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), reviewTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	f, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out lockedBuffer
	go func() { _, _ = io.Copy(&out, f) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	answered := 0
	for {
		select {
		case err := <-exited:
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // the last bytes of the pty
			return out.String(), cmd.ProcessState.ExitCode()
		case <-ctx.Done():
			t.Fatalf("nexus %s still running after %v; output:\n%s", strings.Join(args, " "), reviewTimeout, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		s := out.String()
		// One heading per call awaiting review; answer once its prompt shows.
		if strings.Count(s, "awaits your review") > answered && strings.HasSuffix(strings.TrimRight(s, " "), "[e]dit in $EDITOR?") {
			if _, err := f.WriteString(answer(answered) + "\n"); err != nil {
				t.Fatal(err)
			}
			answered++
		}
	}
}

// linesOf counts the lines of a terminal's output that read line once its
// styles are taken out.
func linesOf(out, line string) int {
	plain := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(strings.ReplaceAll(out, "\r", ""), "")
	n := 0
	for _, l := range strings.Split(plain, "\n") {
		if strings.TrimSpace(l) == line {
			n++
		}
	}
	return n
}

func sessionOf(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`session (s_[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no session in the output:\n%s", out)
	}
	return m[1]
}

// auditedScripts reads the session's audit log with its code, as nexus
// audit --code --output json prints it: each automation's bytes by call id.
func auditedScripts(t *testing.T, bin string, env []string, session string) map[string]string {
	t.Helper()
	ac := exec.Command(bin, "audit", "--code", "--output", "json", session)
	ac.Env = env
	out, err := ac.Output()
	if err != nil {
		t.Fatalf("nexus audit: %v\n%s", err, out)
	}
	var audit struct {
		Dispatches []struct {
			ToolCallID string `json:"toolCallId"`
			Kind       string `json:"kind"`
			Stamp      struct {
				Code string `json:"code"`
			} `json:"stamp"`
		} `json:"dispatches"`
	}
	if err := json.Unmarshal(out, &audit); err != nil {
		t.Fatalf("nexus audit --output json: %v\n%s", err, out)
	}
	scripts := map[string]string{}
	for _, d := range audit.Dispatches {
		if d.Kind == "SCRIPT_KIND_TASK_AUTOMATION" {
			scripts[d.ToolCallID] = d.Stamp.Code
		}
	}
	return scripts
}

// TestReviewInTheTerminal runs the demo (an inspection, a room script that
// fails on a typo, its fix) under nexus dev on the real FreeCAD runtime with
// the default review policy, the preview, in a pseudo-terminal: the failed
// script goes back to the model without asking; the fix's preview (report
// and view) waits; approving commits exactly the previewed bytes; declining
// leaves the document as it was; an edit made in $EDITOR is previewed and
// decided in turn before it commits, and the audit log keeps it.
func TestReviewInTheTerminal(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	editor := filepath.Join(t.TempDir(), "editor.sh")
	const edit = `import FreeCAD
FreeCAD.ActiveDocument.addObject("Part::Box", "EditedByReviewer")`
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nprintf '\\n%s\\n' '"+edit+"' >> \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const question = "[e]dit in $EDITOR?"

	t.Run("approve", func(t *testing.T) {
		env := startDev(t, bin)
		out, code := ptyRun(t, bin, env, func(int) string { return "a" }, "run", demoPrompt)
		t.Logf("output:\n%s", out)
		if code != 0 {
			t.Fatalf("exit %d, want 0", code)
		}
		// Said once, before anything waits.
		if n := strings.Count(out, "first runs as a preview"); n != 1 || strings.Index(out, "first runs as a preview") > strings.Index(out, "awaits your review") {
			t.Errorf("the output says what waits for the person %d times, or after the first wait; want once, first", n)
		}
		if n := strings.Count(out, "awaits your review"); n != 1 {
			t.Errorf("%d scripts awaited review, want 1: the script that failed goes back to the model unasked", n)
		}
		asked := strings.Index(out, question)
		if asked < 0 {
			t.Fatalf("nobody was asked")
		}
		if i := strings.Index(out, "NameError"); i < 0 || i > asked {
			t.Errorf("the failed preview (NameError) is not shown before the question")
		}
		for _, w := range []string{"── preview (ran on the document, then rolled back) ──", "Wall", "Door", "Window", "preview view "} {
			if !strings.Contains(out[:asked], w) {
				t.Errorf("before the question the output lacks %q", w)
			}
		}
		for _, w := range []string{"✓ approved: the previewed script commits now", "✓ committed"} {
			if !strings.Contains(out[asked:], w) {
				t.Errorf("output lacks %q after the approval", w)
			}
		}
		// What a person reads: each script once, the fix as a diff of the
		// script that failed, one approval line, no internal ids or names.
		for line, what := range map[string]string{
			`door.Hosts = [wals[0]]`: "the failed script",
			`print("Built %d walls on %s with a door and a window." % (len(walls), level.Label))`: "the room script's last line (the fix shows as a diff)",
			`print("Document %s: %d objects" % (doc.Label, len(doc.Objects)))`:                    "the inspection",
		} {
			if n := linesOf(out, line); n != 1 {
				t.Errorf("%s is on screen %d times, want once", what, n)
			}
		}
		for _, w := range []string{"── the fix: what changed from the script that failed ──", "- door.Hosts = [wals[0]]", "+ door.Hosts = [walls[0]]"} {
			if !strings.Contains(out, w) {
				t.Errorf("the fix is not shown as a diff: the output lacks %q", w)
			}
		}
		if n := strings.Count(out, "approved"); n != 1 {
			t.Errorf("the output says approved %d times, want once", n)
		}
		for _, w := range []string{"toolu_", "execute_", "by local", "host done", "decided elsewhere"} {
			if strings.Contains(out, w) {
				t.Errorf("the output shows %q", w)
			}
		}
		if objs := devObjects(t, env); len(objs) == 0 {
			t.Errorf("the approved room did not reach the document: it holds nothing")
		}
		scripts := auditedScripts(t, bin, env, sessionOf(t, out))
		committed, previewed := "", ""
		for id, code := range scripts {
			switch {
			case regexp.MustCompile(`\.preview\d+$`).MatchString(id):
			case scripts[id+".preview1"] != "" && !strings.Contains(code, "wals"):
				committed, previewed = code, scripts[id+".preview1"]
			}
		}
		if committed == "" || committed != previewed {
			t.Errorf("the committed bytes are not the previewed ones (%d and %d bytes): %v", len(committed), len(previewed), scripts)
		}
	})

	t.Run("decline", func(t *testing.T) {
		env := startDev(t, bin)
		before := devObjects(t, env)
		out, code := ptyRun(t, bin, env, func(int) string { return "d" }, "run", demoPrompt)
		t.Logf("exit %d, output:\n%s", code, out)
		if !strings.Contains(out, "✗ declined: the script does not run") {
			t.Errorf("output does not say the script was declined")
		}
		if strings.Contains(out, "✓ committed") {
			t.Errorf("a declined script committed")
		}
		if after := devObjects(t, env); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Errorf("declining changed the document: %v, then %v", before, after)
		}
	})

	t.Run("edit", func(t *testing.T) {
		env := append(startDev(t, bin), "EDITOR="+editor)
		out, code := ptyRun(t, bin, env, func(n int) string {
			if n == 0 {
				return "e"
			}
			return "a"
		}, "run", demoPrompt)
		t.Logf("output:\n%s", out)
		if code != 0 {
			t.Fatalf("exit %d, want 0", code)
		}
		if !strings.Contains(out, "── your edited script ──") {
			t.Errorf("output does not show the edited script")
		}
		// The edit is previewed and asked about before anything commits.
		first := strings.Index(out, question)
		second := strings.Index(out[first+1:], question) + first + 1
		if first < 0 || second <= first {
			t.Fatalf("the edited script was not put to the person again")
		}
		again := out[first:second]
		for _, w := range []string{"your edit runs as a preview first", "awaits your review", `addObject("Part::Box", "EditedByReviewer")`, "── preview (ran on the document, then rolled back) ──", "Part::Box"} {
			if !strings.Contains(again, w) {
				t.Errorf("between the edit and the second question the output lacks %q", w)
			}
		}
		if strings.Contains(out[:second], "✓ committed") {
			t.Errorf("something committed before the edit's own preview was decided")
		}
		if !strings.Contains(out[second:], "✓ committed") {
			t.Errorf("the approved edit did not commit")
		}
		objs := strings.Join(devObjects(t, env), " ")
		if !strings.Contains(objs, "EditedByReviewer") {
			t.Errorf("the edited script did not reach the host: the document holds %s", objs)
		}
		session := sessionOf(t, out)
		ac := exec.Command(bin, "audit", "--wide", "--code", session)
		ac.Env = env
		audit, err := ac.CombinedOutput()
		if err != nil {
			t.Fatalf("nexus audit: %v\n%s", err, audit)
		}
		if !strings.Contains(string(audit), `addObject("Part::Box", "EditedByReviewer")`) {
			t.Errorf("the audit log lacks the edited code:\n%s", audit)
		}
		if !regexp.MustCompile(`local at \S+ \S+ \(edited\)`).Match(audit) {
			t.Errorf("the audit log does not say who approved the edited script, when, and that it was edited:\n%s", audit)
		}
		scripts := auditedScripts(t, bin, env, session)
		found := false
		for id, code := range scripts {
			if strings.Contains(code, "EditedByReviewer") && !strings.Contains(id, ".preview") {
				found = true
				if scripts[id+".preview2"] != code {
					t.Errorf("the committed edit is not the bytes of its own preview %s.preview2: %v", id, scripts)
				}
			}
		}
		if !found {
			t.Errorf("the audit log has no committed edit: %v", scripts)
		}
	})
}

// TestPreviewAndHostFailureInTheTerminal runs the demo under the preview
// policy, where the person sees the change report and the saved view before
// deciding, and then a run whose host goes away while a script awaits
// review: the run ends with that error and a non-zero exit, never as if the
// script had run.
func TestPreviewAndHostFailureInTheTerminal(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)

	t.Run("preview", func(t *testing.T) {
		env := startDev(t, bin)
		views := t.TempDir()
		env = append(env, "NEXUS_VIEWS_DIR="+views)
		var shown string
		var out string
		var code int
		out, code = ptyRun(t, bin, env, func(int) string { return "a" }, "run", "--review", "preview", demoPrompt)
		t.Logf("output:\n%s", out)
		if code != 0 {
			t.Fatalf("exit %d, want 0", code)
		}
		// What was on screen when the person was first asked.
		if i := strings.Index(out, "[e]dit in $EDITOR?"); i >= 0 {
			shown = out[:i]
		}
		for _, w := range []string{"── preview (ran on the document, then rolled back) ──", "Construction helpers:", "Wall", "Door", "Window"} {
			if !strings.Contains(shown, w) {
				t.Errorf("before the question the output lacks %q", w)
			}
		}
		m := regexp.MustCompile(`preview view \S+ \d+x\d+ saved to (\S+)\]`).FindStringSubmatch(shown)
		if m == nil {
			t.Fatalf("no preview view was saved before the question")
		}
		if st, err := os.Stat(m[1]); err != nil || st.Size() == 0 {
			t.Errorf("the saved preview view %s: %v", m[1], err)
		}
		if !strings.Contains(out, "✓ committed") {
			t.Errorf("the approved preview did not commit")
		}
	})

	t.Run("host goes away", func(t *testing.T) {
		// No runtime of nexus dev's own is linked, so nexus run is the
		// courier of the runtime it names, as for any unlinked runtime.
		env := startDev(t, bin, "NEXUS_DEV_NO_HOST=true")
		const token = "pair-review-failure"
		rt, err := launcher.Start(t.Context(), launcher.Options{Addr: "127.0.0.1:0", Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Stop() })
		out, code := ptyRun(t, bin, env, func(int) string {
			// The person approves only after the runtime stopped.
			if err := rt.Stop(); err != nil {
				t.Errorf("stop the runtime: %v", err)
			}
			return "a"
		}, "run", "--review", "every", "--host-url", rt.URL(), "--host-token", token, demoPrompt)
		t.Logf("exit %d, output:\n%s", code, out)
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		if !strings.Contains(out, "host_unreachable") || !strings.Contains(out, "could not be reached") {
			t.Errorf("the output does not end the run with the unreachable host")
		}
		for _, w := range []string{"✓ ran", "rolled back", "✓ committed"} {
			if strings.Contains(out, w) {
				t.Errorf("the output says %q although nothing ran", w)
			}
		}
	})
}

// TestRunJSONOutput runs the demo unattended with --output json: stdout is
// one StreamChunk per line, in sequence, ending with the run complete; then
// sessions and audit answer JSON too. Without --yes and without a terminal,
// a run whose script waits for review fails and says what to pass.
func TestRunJSONOutput(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	env := startDev(t, bin)
	ctx, cancel := context.WithTimeout(t.Context(), reviewTimeout)
	defer cancel()

	// Unattended without --yes: the automation waits for review, no one
	// can be asked here, and nexus run says what to do.
	// It runs first, on the empty document, where the demo writes the room.
	waiting := exec.CommandContext(ctx, bin, "run", demoPrompt)
	waiting.Env = env
	out, _ := waiting.CombinedOutput()
	if code := waiting.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "pass --yes") {
		t.Errorf("exit %d, want 1 with advice to pass --yes:\n%s", code, out)
	}

	cmd := exec.CommandContext(ctx, bin, "run", demoPrompt, "--output", "json", "--yes")
	cmd.Env = env
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("nexus run: %v\n%s", err, stderr.String())
	}
	var kinds = map[string]int{}
	var last int64
	sc := bufio.NewScanner(strings.NewReader(string(stdout)))
	sc.Buffer(nil, 64<<20)
	lines := 0
	for sc.Scan() {
		lines++
		var c agentv1.StreamChunk
		if err := protojson.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("line %d is not a StreamChunk: %v\n%s", lines, err, sc.Text())
		}
		if c.GetSeq() <= last {
			t.Errorf("line %d: seq %d after %d", lines, c.GetSeq(), last)
		}
		last = c.GetSeq()
		kinds[string(c.ProtoReflect().WhichOneof(c.ProtoReflect().Descriptor().Oneofs().ByName("chunk")).Name())]++
	}
	t.Logf("%d lines: %v", lines, kinds)
	if kinds["tool_call"] < 2 || kinds["complete"] != 1 || kinds["error"] != 0 {
		t.Errorf("chunk kinds %v: want 2+ tool calls, one complete, no error", kinds)
	}

	for _, args := range [][]string{{"sessions", "-o", "json"}, {"audit", "--output", "json", sessionOf(t, stderr.String())}} {
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = env
		out, err := c.Output()
		if err != nil {
			t.Fatalf("nexus %v: %v", args, err)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("nexus %v: not JSON: %v\n%s", args, err, out)
		}
	}

}
