package cli

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/platform/config"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

const testTimeout = 2 * time.Minute

const boxScript = "import FreeCAD\ndoc = FreeCAD.ActiveDocument\nbox = doc.addObject(\"Part::Box\", \"Box\")\nbox.Length = 20\n"

// startStack runs the real orchestrator, model router and capability
// service; the model is a loopback server speaking the Anthropic stream
// format that writes one script and then answers.
func startStack(t *testing.T) *ot.Stack {
	t.Helper()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.Thinking("One Part::Box will do."), ot.Text("Adding the box."),
			ot.ToolUse("toolu_01", "execute_task_automation", map[string]any{"description": "Add a 20 mm box", "code": boxScript})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("I added one box, 20 mm long.")}},
	)
	// The orchestrator admits the CLI by the API key it presents, with the
	// same check the gateway makes.
	return ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error", "NEXUS_API_KEYS": cliKey + ":ada"})
}

// startHost starts the real FreeCAD host runtime (headless) with a new
// empty document, paired with token.
func startHost(t *testing.T, token string) *launcher.Runtime {
	t.Helper()
	rt, err := launcher.Start(t.Context(), launcher.Options{Addr: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatalf("start the freecad runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	return rt
}

// boxes reads the document back through the runtime: the boxes it holds and
// their lengths, one per line.
func boxes(t *testing.T, rt *launcher.Runtime) string {
	t.Helper()
	res, err := rt.Client.Execute(t.Context(), &hostv1.ExecuteRequest{ToolCallId: "check", Mode: hostv1.Mode_MODE_READ_ONLY,
		Code: "for o in doc.Objects:\n    if o.TypeId == 'Part::Box':\n        print(o.Name, float(o.Length))\n"})
	if err != nil || res.GetError() != nil {
		t.Fatalf("read the document: %v %v", err, res.GetError())
	}
	return res.GetStdout()
}

// syncBuffer is a bytes.Buffer safe for the spinner goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunCommand runs a prompt end to end: a session for the host's
// application, the stream rendered, the tool call carried to the host and
// its result posted back, in plain and in terminal mode.
// cliKey is the API key the CLI presents to the test orchestrator.
const cliKey = "k-cli-ada"

func TestRunCommand(t *testing.T) {
	tests := []struct {
		name string
		tty  bool
		want []string
	}{
		{"plain", false, []string{
			"model anthropic/claude-sonnet-4-5 · host FreeCAD",
			"One Part::Box will do.",
			"── a script that changes the document ──\n" + boxScript,
			"→ Add a 20 mm box",
			"FreeCAD: running the script...",
			"✓ committed\nchanges:\n  === CHANGE REPORT ===\n",
			"Construction helpers: 1 added (1 box)",
			"I added one box, 20 mm long.",
		}},
		{"terminal", true, []string{
			ansiDim + "One Part",
			ansiCyan + "import FreeCAD\n",
			clearLine + "⠋ FreeCAD: running the script",
			"FreeCAD ran the script in ",
			ansiGreen + "✓ committed" + ansiReset,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			stack := startStack(t)
			host := startHost(t, "pair-1")
			views := t.TempDir()
			var stdout, stderr syncBuffer
			err := Run(ctx, RunOptions{Conn: Conn{Addr: stack.Addr}, HostURL: host.URL(), HostToken: "pair-1", ViewsDir: views,
				Prompt: "add a 20 mm box", Review: agentv1.ReviewPolicy_REVIEW_POLICY_NONE},
				IO{Stdout: &stdout, Stderr: &stderr, TTY: tt.tty, Env: config.Map(map[string]string{
					"NEXUS_API_KEY": cliKey, "NEXUS_DEV_STATE": filepath.Join(t.TempDir(), "none.json")})})
			if err != nil {
				t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			out := stdout.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if !tt.tty && strings.Contains(out, "\x1b[") {
				t.Errorf("plain output carries terminal escapes:\n%q", out)
			}
			if !regexp.MustCompile(`\d+ in / \d+ out tokens`).MatchString(out) {
				t.Errorf("no usage line:\n%s", out)
			}
			// The version is the installed FreeCAD's, as its runtime reports it.
			info, err := host.Client.Info(ctx)
			if err != nil || info.GetHostVersion() == "" {
				t.Fatalf("the runtime's info names no FreeCAD version: %v %v", info, err)
			}
			if want := "host FreeCAD " + info.GetHostVersion() + ", document "; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks the host info %q: %s", want, stderr.String())
			}
			// The view the host rendered is saved, and its path printed.
			saved := regexp.MustCompile(`saved to (\S+\.png)\]`).FindStringSubmatch(out)
			if saved == nil || !strings.HasPrefix(saved[1], views) {
				t.Fatalf("no saved view path under %s in the output:\n%s", views, out)
			}
			data, err := os.ReadFile(saved[1])
			if err != nil {
				t.Fatal(err)
			}
			if cfg, err := png.DecodeConfig(bytes.NewReader(data)); err != nil || cfg.Width == 0 {
				t.Fatalf("%s is not a PNG: %v", saved[1], err)
			}
			// The script ran once, in a transaction that committed on the real host.
			if got := boxes(t, host); got != "Box 20.0\n" {
				t.Fatalf("document holds boxes %q, want one Box of 20 mm", got)
			}
		})
	}
}

// TestClientCommands shows sessions and cancel against the real
// orchestrator, and the errors a person sees.
func TestClientCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	stack := startStack(t)
	host := startHost(t, "pair-1")
	env := config.Map(map[string]string{"NEXUS_API_KEY": cliKey, "NEXUS_DEV_STATE": filepath.Join(t.TempDir(), "none.json")})
	conn := Conn{Addr: stack.Addr}
	run := func(o RunOptions) RunOptions {
		o.Conn, o.HostURL, o.ViewsDir, o.Review = conn, host.URL(), t.TempDir(), agentv1.ReviewPolicy_REVIEW_POLICY_NONE
		if o.HostToken == "" {
			o.HostToken = "pair-1"
		}
		return o
	}
	var runOut, runErr syncBuffer
	if err := Run(ctx, run(RunOptions{Prompt: "add a box"}), IO{Stdout: &runOut, Stderr: &runErr, Env: env}); err != nil {
		t.Fatalf("run: %v\n%s", err, runErr.String())
	}
	session := strings.TrimSpace(strings.TrimPrefix(regexp.MustCompile(`session \S+`).FindString(runErr.String()), "session "))
	if session == "" {
		t.Fatalf("no session in %q", runErr.String())
	}

	tests := []struct {
		name    string
		cmd     func(context.Context, IO) error
		want    string
		wantErr string
	}{
		{"sessions", func(ctx context.Context, o IO) error { return Sessions(ctx, SessionsOptions{Conn: conn}, o) },
			session + "  add a box  freecad  anthropic/claude-sonnet-4-5", ""},
		{"cancel idle", func(ctx context.Context, o IO) error {
			return Cancel(ctx, CancelOptions{Conn: conn, SessionID: session}, o)
		},
			"session " + session + " has no active run", ""},
		{"cancel unknown", func(ctx context.Context, o IO) error {
			return Cancel(ctx, CancelOptions{Conn: conn, SessionID: "s_nope"}, o)
		}, "", "NotFound"},
		{"run unknown session", func(ctx context.Context, o IO) error {
			return Run(ctx, run(RunOptions{SessionID: "s_nope", Prompt: "hello"}), o)
		}, "", "NotFound"},
		{"run with a wrong pairing token", func(ctx context.Context, o IO) error {
			return Run(ctx, run(RunOptions{HostToken: "wrong", Prompt: "hello"}), o)
		}, "", "refused the pairing token"},
		{"audit", func(ctx context.Context, o IO) error {
			return Audit(ctx, AuditOptions{Conn: conn, SessionID: session}, o)
		},
			"1 run(s), 2 dispatch(es)", ""},
		{"audit with code", func(ctx context.Context, o IO) error {
			return Audit(ctx, AuditOptions{Conn: conn, SessionID: session, Code: true}, o)
		}, "box = doc.addObject", ""},
		{"audit unknown", func(ctx context.Context, o IO) error {
			return Audit(ctx, AuditOptions{Conn: conn, SessionID: "s_nope"}, o)
		}, "", "NotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			err := tt.cmd(ctx, IO{Stdout: &stdout, Stderr: &stderr, Env: env})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stdout.String(), tt.want) {
				t.Errorf("output %q lacks %q", stdout.String(), tt.want)
			}
		})
	}
}
