package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	hostv1 "nexus.local/gen/nexus/host/v1"
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
	return ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
}

// hostRuntime is a loopback server speaking the host runtime contract: the
// pairing token, /v1/info, and /v1/execute answering with a commit.
type hostRuntime struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*hostv1.ExecuteRequest
}

func startHost(t *testing.T, token string) *hostRuntime {
	t.Helper()
	h := &hostRuntime{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"error":"pairing token required"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/info":
			_, _ = io.WriteString(w, `{"hostApp":"freecad","hostVersion":"0.20.2","runtimeVersion":"1","document":"Bracket.FCStd"}`)
		case "/v1/execute":
			b, _ := io.ReadAll(r.Body)
			var req hostv1.ExecuteRequest
			if err := protojson.Unmarshal(b, &req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			h.mu.Lock()
			h.requests = append(h.requests, &req)
			h.mu.Unlock()
			_, _ = io.WriteString(w, `{"committed":true,"stdout":"volume 8000.0\n","changes":{"added":["Box"]},"epilogue":{"stdout":"added 1: Box (Part::Box)"},"durationMs":"41"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hostRuntime) executed() []*hostv1.ExecuteRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*hostv1.ExecuteRequest(nil), h.requests...)
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
func TestRunCommand(t *testing.T) {
	tests := []struct {
		name string
		tty  bool
		want []string
	}{
		{"plain", false, []string{
			"model anthropic/claude-sonnet-4-5 · host freecad",
			"One Part::Box will do.",
			"── execute_task_automation ──\n" + boxScript,
			"→ execute_task_automation: Add a 20 mm box",
			"freecad is running execute_task_automation...",
			"✓ committed\n  volume 8000.0\nchanges:\n  added 1: Box (Part::Box)",
			"I added one box, 20 mm long.",
		}},
		{"terminal", true, []string{
			ansiDim + "One Part",
			ansiCyan + "import FreeCAD\n",
			clearLine + "⠋ freecad is running execute_task_automation",
			"host done:",
			ansiGreen + "✓ committed" + ansiReset,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			stack := startStack(t)
			host := startHost(t, "pair-1")
			var stdout, stderr syncBuffer
			err := Run(ctx, []string{"--addr", stack.Addr, "--host-url", host.URL, "--host-token", "pair-1", "add", "a", "20", "mm", "box"},
				IO{Stdout: &stdout, Stderr: &stderr, TTY: tt.tty, Env: config.Map(nil)})
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
			if !strings.Contains(stderr.String(), "host freecad 0.20.2 (Bracket.FCStd)") {
				t.Errorf("stderr lacks the host info: %s", stderr.String())
			}
			reqs := host.executed()
			if len(reqs) != 1 || reqs[0].GetCode() != boxScript || reqs[0].GetMode() != hostv1.Mode_MODE_TRANSACTION || reqs[0].GetEpilogue().GetCode() == "" {
				t.Fatalf("host received %v, want the box script in a transaction with its epilogue", reqs)
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
	env := config.Map(map[string]string{"NEXUS_ORCHESTRATOR_ADDR": stack.Addr, "NEXUS_HOST_URL": host.URL, "NEXUS_HOST_TOKEN": "pair-1"})
	var runOut, runErr syncBuffer
	if err := Run(ctx, []string{"add a box"}, IO{Stdout: &runOut, Stderr: &runErr, Env: env}); err != nil {
		t.Fatalf("run: %v\n%s", err, runErr.String())
	}
	session := strings.TrimSpace(strings.TrimPrefix(regexp.MustCompile(`session \S+`).FindString(runErr.String()), "session "))
	if session == "" {
		t.Fatalf("no session in %q", runErr.String())
	}

	tests := []struct {
		name    string
		cmd     func(context.Context, []string, IO) error
		args    []string
		want    string
		wantErr string
	}{
		{"sessions", Sessions, nil, session + "  freecad  anthropic/claude-sonnet-4-5", ""},
		{"cancel idle", Cancel, []string{session}, "session " + session + " has no active run", ""},
		{"cancel unknown", Cancel, []string{"s_nope"}, "", "NotFound"},
		{"cancel without id", Cancel, nil, "", "give exactly one session id"},
		{"run without prompt", Run, nil, "", "no prompt given"},
		{"run unknown session", Run, []string{"--session", "s_nope", "hello"}, "", "NotFound"},
		{"run with a wrong pairing token", Run, []string{"--host-token", "wrong", "hello"}, "", "refused the pairing token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			err := tt.cmd(ctx, tt.args, IO{Stdout: &stdout, Stderr: &stderr, Env: env})
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
