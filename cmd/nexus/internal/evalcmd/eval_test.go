package evalcmd

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"nexus.local/cmd/nexus/internal/cli"
	tasks "nexus.local/eval"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/config"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

const (
	evalKey      = "k-eval-ada"
	chromiumPath = "/usr/bin/chromium"
)

// TestExpertThroughTheMesh runs every task with replay/expert through the
// real orchestrator, model router and capability service, carrying its
// calls to real FreeCAD runtimes (Revit tasks to the add-in's runtime on the
// Revit double): every task must pass its checker, the
// report must be written, and its figures must be the run history's.
func TestExpertThroughTheMesh(t *testing.T) {
	all, err := tasks.Load(tasks.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	// No vendor turn is ever served: replay/expert is the replay vendor's, which the stack starts as nexus dev does.
	stack := ot.Start(t, ot.NewAnthropic(t).URL, map[string]string{"NEXUS_LOG_LEVEL": "error", "NEXUS_API_KEYS": evalKey + ":ada"})
	m, err := cli.ConnectMesh(ctx, cli.Conn{Addr: stack.Addr}, cli.IO{Env: config.Map(map[string]string{"NEXUS_API_KEY": evalKey})})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	hosts, err := StartHosts(ctx, 2, nil, all)
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close()

	var lines bytes.Buffer
	rep, err := Run(ctx, Options{Model: "replay/expert", Tasks: all, Repeat: 1, Progress: &lines}, m, hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress:\n%s", lines.String())
	if got := strings.Count(lines.String(), "\n"); got != len(all) {
		t.Errorf("%d progress lines, want one per task (%d)", got, len(all))
	}
	if !rep.AllPassed() {
		t.Errorf("replay/expert passed %d of %d tasks through the mesh:\n%s", rep.Total.Passed, rep.Total.Attempts, strings.Join(rep.Failures, "\n"))
	}
	for _, tr := range rep.Tasks {
		a := tr.Attempts[0]
		if a.Turns < 3 || a.Inspections < 1 || a.Tokens.Input == 0 || a.Tokens.Output == 0 {
			t.Errorf("%s: %d turns, %d inspections, %d/%d tokens: want an inspection, the reference and an answer, with tokens counted",
				tr.ID, a.Turns, a.Inspections, a.Tokens.Input, a.Tokens.Output)
		}
	}
	checkHistory(ctx, t, m, rep)
	checkFailures(ctx, t, m, hosts, all, rep)

	dir := artifacts(t)
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if back.Total != rep.Total || len(back.Tasks) != len(all) {
		t.Errorf("report.json reads back as %+v over %d tasks, want %+v over %d", back.Total, len(back.Tasks), rep.Total, len(all))
	}
	screenshot(ctx, t, dir, len(all))
}

// checkHistory holds the report to the run history of the same runs: the
// turns, tokens and cost of each attempt are what the history store
// recorded for its run, and the automations are its committed and
// rolled-back tool calls.
func checkHistory(ctx context.Context, t *testing.T, m cli.Mesh, rep *Report) {
	t.Helper()
	var total Tokens
	for _, tr := range rep.Tasks {
		for _, a := range tr.Attempts {
			runs, err := m.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: a.SessionID})
			if err != nil {
				t.Fatalf("%s: %v", a.Task, err)
			}
			if len(runs.GetRuns()) != 1 || runs.GetRuns()[0].GetRunId() != a.RunID {
				t.Errorf("%s: the history of session %s holds %d runs, want the one run %s", a.Task, a.SessionID, len(runs.GetRuns()), a.RunID)
				continue
			}
			r := runs.GetRuns()[0]
			u := r.GetUsage()
			h := Tokens{Input: u.GetInputTokens(), Output: u.GetOutputTokens(), CacheRead: u.GetCacheReadTokens(), CacheWrite: u.GetCacheWriteTokens(), CostUSD: u.GetCostUsd()}
			if r.GetTurns() != a.Turns || h != a.Tokens || r.GetOutcome() != a.Outcome {
				t.Errorf("%s: the report says %d turns, %+v, %s; the history %d turns, %+v, %s", a.Task, a.Turns, a.Tokens, a.Outcome, r.GetTurns(), h, r.GetOutcome())
			}
			if got := int(r.GetToolCalls()["committed"] + r.GetToolCalls()["rolled_back"]); got != a.Automations {
				t.Errorf("%s: the report counts %d automations, the history %d (%v)", a.Task, a.Automations, got, r.GetToolCalls())
			}
			total.add(h)
		}
	}
	if total != rep.Total.Tokens {
		t.Errorf("the report's total tokens %+v are not the history's %+v", rep.Total.Tokens, total)
	}
}

// checkFailures runs the demo model, which knows none of the tasks and
// changes nothing, on a creation and an inspection task: both must fail
// with their checkers' messages, and compare must show what broke.
func checkFailures(ctx context.Context, t *testing.T, m cli.Mesh, hosts *Hosts, all []tasks.Task, expert *Report) {
	t.Helper()
	some, err := tasks.Select(all, "01-room,21-*")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, Options{Model: "replay/demo", Tasks: some, Repeat: 1}, m, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.AllPassed() || rep.Total.Passed != 0 {
		t.Fatalf("a model that did nothing passed %d of %d tasks", rep.Total.Passed, rep.Total.Attempts)
	}
	want := map[string]string{"01-room": "Building Storey: 0, want 1", "21-count-doors-level-1": "the answer"}
	for _, tr := range rep.Tasks {
		if why := tr.Attempts[0].Why; !strings.Contains(why, want[tr.ID]) {
			t.Errorf("%s failed for %q, want the checker's message (%q)", tr.ID, why, want[tr.ID])
		}
	}
	var out bytes.Buffer
	if err := Compare(&out, expert, rep); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`01-room\s+1/1 → 0/1\s.*Building Storey: 0, want 1`, `02-room-door-window\s+only in A: 1/1`} {
		if !regexp.MustCompile(w).MatchString(out.String()) {
			t.Errorf("compare does not say %q:\n%s", w, out.String())
		}
	}
}

// artifacts is where the report and its screenshot are kept for people.
func artifacts(t *testing.T) string {
	dir, err := filepath.Abs("../../../../test-artifacts/eval")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot opens report.html in headless Chromium: the page it parsed
// must hold a row per task, and the screenshot must be a real picture.
func screenshot(ctx context.Context, t *testing.T, dir string, rows int) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("the report's browser check needs Chromium at %s (make deps installs it): %v", chromiumPath, err)
	}
	page := "file://" + filepath.Join(dir, "report.html")
	shot := filepath.Join(dir, "report.png")
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	dom, err := exec.CommandContext(ctx, chromiumPath, append(args, "--dump-dom", page)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if got := strings.Count(string(dom), "<tr><td><b>"); got != rows {
		t.Errorf("Chromium's DOM of report.html holds %d task rows, want %d", got, rows)
	}
	if out, err := exec.CommandContext(ctx, chromiumPath, append(args, "--window-size=1500,2600", "--screenshot="+shot, page)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	colours := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>12<<8|g>>12<<4|bl>>12] = true
		}
	}
	if b.Dx() != 1500 || len(colours) < 8 {
		t.Errorf("the screenshot is %dx%d with %d colours: want 1500 wide and a rendered page", b.Dx(), b.Dy(), len(colours))
	}
	t.Logf("report and screenshot in %s", dir)
}
