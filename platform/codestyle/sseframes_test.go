package codestyle

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoHandWrittenSSEFrames holds the repository to reading and writing
// server-sent events through platform/sse.
func TestNoHandWrittenSSEFrames(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	findings, err := CheckSSEFrames(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("%s", f)
	}
}

// TestSSEFramesFoundInAPlantedFile copies a real writer and a real reader
// of events into a scratch tree, shows they pass, then plants the hand-made
// frames they once held and shows each is found; a data URL is not one.
func TestSSEFramesFoundInAPlantedFile(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	copyFile(t, repo, scratch, "go.mod")
	writer := copyFile(t, repo, scratch, "gateway/hostlink.go")
	copyFile(t, repo, scratch, "cmd/nexus/internal/cli/backend.go")
	copyFile(t, repo, scratch, "services/modelrouter/openai.go")
	// platform/sse itself spells them, and is not looked at.
	copyFile(t, repo, scratch, "platform/sse/write.go")
	if got, err := CheckSSEFrames(scratch); err != nil || len(got) != 0 {
		t.Fatalf("the copies as they are: findings %v, err %v", got, err)
	}
	planted := `
func plantedFrame(name, data string) string {
	return "event: " + name + "\ndata: " + data + "\n\n"
}

func plantedData(line string) (string, bool) { return strings.CutPrefix(line, "data:") }

func plantedKeepalive() string { return ": keepalive\n\n" }

func plantedID(w io.Writer, seq int64) { fmt.Fprintf(w, "id: %d\n", seq) }

func plantedDataURL(mime, b64 string) string { return "data:" + mime + ";base64," + b64 + "data:image/png;base64," }
`
	src, err := os.ReadFile(writer)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(writer, append(src, planted...), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := CheckSSEFrames(scratch)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range got {
		found = append(found, strings.SplitN(f.Rule, " spelled", 2)[0])
	}
	want := []string{`"event: "`, `"\ndata: "`, `"data:"`, `": keepalive\n\n"`, `"id: %d\n"`}
	if strings.Join(found, ",") != "server-sent event field "+strings.Join(want, ",server-sent event field ") {
		t.Fatalf("findings %v, want one for each of %v and none for the data URL", got, want)
	}
}

// TestSSEFrameRule reads the rule on small files: what it finds and what it
// leaves.
func TestSSEFrameRule(t *testing.T) {
	for src, want := range map[string]int{
		`package p; const a = "retry: 1000\n\n"`:                                 1,
		"package p; const a = `event: x\ndata: y`":                               1,
		`package p; const a = "data: %s\r\n\r\n"`:                                1,
		`package p; const a = "  data: " + "folder"`:                             0,
		`package p; const a = "metadata: x"`:                                     0,
		`package p; const a = "the id: field"`:                                   0,
		`package p; const a = "data:image/png;base64,"`:                          0,
		`package p; func f(m string) string { return "data:" + m + ";base64," }`: 0,
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := sseFrames(fset, f); len(got) != want {
			t.Errorf("%s: findings %v, want %d", src, got, want)
		}
	}
}
