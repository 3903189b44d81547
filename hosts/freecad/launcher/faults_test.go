package launcher_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
)

// rawExecute posts req to the runtime and answers the status, the
// Content-Length it announced and the body as received.
func rawExecute(t *testing.T, rt *launcher.Runtime, req *hostv1.ExecuteRequest) (int, int64, []byte) {
	t.Helper()
	body, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, rt.URL()+"/v1/execute", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+rt.Token())
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	announced, _ := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	return resp.StatusCode, announced, raw
}

// surrogateEscape is a JSON escape of a UTF-16 surrogate (one not itself
// escaped as text).
var surrogateEscape = regexp.MustCompile(`(^|[^\\])\\u[dD][89a-fA-F]`)

// decodeResult decodes an answer as strictly as the gateway does.
func decodeResult(t *testing.T, raw []byte) *hostv1.HostResult {
	t.Helper()
	res := &hostv1.HostResult{}
	if err := protojson.Unmarshal(raw, res); err != nil {
		t.Fatalf("the answer does not decode as a HostResult: %v (%d bytes, starting %.200q)", err, len(raw), raw)
	}
	return res
}

// TestLoneSurrogateInStdout: a script printing characters that UTF-8 cannot
// hold (as a non-UTF-8 file name from os.listdir gives) gets an answer of
// valid UTF-8 that says what was replaced.
func TestLoneSurrogateInStdout(t *testing.T) {
	status, _, raw := rawExecute(t, shared, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY,
		Code: "print(\"bad \\udcff\\ud800 end\")\nraise ValueError('\\udcff')\n"})
	if status != http.StatusOK {
		t.Fatalf("want 200, got %d: %s", status, raw)
	}
	if !utf8.Valid(raw) || surrogateEscape.Match(raw) {
		t.Fatalf("the answer is not valid UTF-8 free of surrogate escapes: %q", raw)
	}
	res := decodeResult(t, raw)
	if !strings.Contains(res.GetStdout(), "bad \ufffd\ufffd end") {
		t.Errorf("want the surrogates replaced by U+FFFD, stdout %q", res.GetStdout())
	}
	if !strings.Contains(res.GetStdout(), "character(s) that are not valid Unicode") {
		t.Errorf("the result does not say what was replaced: %q", res.GetStdout())
	}
	if res.GetError().GetType() != "ValueError" || !utf8.ValidString(res.GetError().GetMessage()) {
		t.Errorf("want the ValueError with a valid message, got %v", res.GetError())
	}
}

// TestHugeStdoutIsCapped: 100 MB of output comes back as a complete answer
// holding the output up to the runtime's stated limit and a note.
func TestHugeStdoutIsCapped(t *testing.T) {
	status, announced, raw := rawExecute(t, shared, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY,
		Code: "import sys\nfor i in range(100):\n    sys.stdout.write(('%02d' % i) * 500000)\nprint('THE END')\n"})
	if status != http.StatusOK || announced != int64(len(raw)) {
		t.Fatalf("want a whole 200 answer, got %d with %d of %d announced bytes", status, len(raw), announced)
	}
	res := decodeResult(t, raw)
	out := res.GetStdout()
	t.Logf("100,000,008 characters printed; %d characters answered in %d bytes", len(out), len(raw))
	if len(raw) > 2<<20 {
		t.Errorf("the answer is %d bytes; want the output capped near its limit", len(raw))
	}
	for _, want := range []string{"0000", "THE END", "the script printed 100000008 characters", "limit of 1000000 characters"} {
		if !strings.Contains(out, want) {
			t.Errorf("capped stdout lacks %q (head %.120q, tail %.300q)", want, out, out[max(0, len(out)-300):])
		}
	}
}

// TestScriptKeepsItsDocument: a script cannot close the document the runtime
// serves nor switch the runtime to another one.
func TestScriptKeepsItsDocument(t *testing.T) {
	rt := ownRuntime(t)
	ctx := context.Background()
	if res := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION,
		Code: "doc.addObject('Part::Box', 'Keep')\n"}); !res.GetCommitted() {
		t.Fatalf("seed: %v", res)
	}
	info, err := rt.Client.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := dumpOn(t, rt)
	tests := []struct{ name, code, errType string }{
		{"closing it", "App.closeDocument(doc.Name)\n", "DocumentClosed"},
		{"closing it and opening another of its name", "name = doc.Name\nApp.closeDocument(name)\nApp.newDocument(name)\n", "DocumentClosed"},
		{"switching to another", "App.newDocument('Evil')\nApp.setActiveDocument('Evil')\n", "DocumentSwitched"},
	}
	for _, tt := range tests {
		for _, mode := range []hostv1.Mode{hostv1.Mode_MODE_TRANSACTION, hostv1.Mode_MODE_READ_ONLY} {
			t.Run(tt.name+" "+mode.String(), func(t *testing.T) {
				res := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: mode, Code: tt.code})
				if res.GetCommitted() || res.GetError().GetType() != tt.errType || !strings.Contains(res.GetError().GetMessage(), "refused") {
					t.Fatalf("want a refusal of type %s, got %v", tt.errType, res)
				}
				now, err := rt.Client.Info(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if now.GetDocument() != info.GetDocument() {
					t.Fatalf("the runtime serves %q, want %q", now.GetDocument(), info.GetDocument())
				}
				check := executeOn(t, rt, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY,
					Code: "print(App.ActiveDocument.Name, doc.Name, sorted(App.listDocuments()))\n"})
				if got, want := strings.TrimSpace(check.GetStdout()), "Nexus Nexus ['Nexus']"; got != want {
					t.Fatalf("later scripts see %q, want %q", got, want)
				}
				if after := dumpOn(t, rt); after != before {
					t.Fatalf("the document is not as before: %s", firstDifference(before, after))
				}
			})
		}
	}
}

// TestScriptThreadsEndWithIt: a thread a committed script started is stopped
// when the script ends, and what it did before is in the commit's report.
func TestScriptThreadsEndWithIt(t *testing.T) {
	freshDocument(t)
	res := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: `import threading, time
def add():
    while True:
        doc.addObject('Part::Box', 'T')
        time.sleep(0.5)
threading.Thread(target=add, name='adder', daemon=True).start()
time.sleep(1.2)
`})
	if !res.GetCommitted() || res.GetError() != nil {
		t.Fatalf("want a commit, got %v", res)
	}
	if !strings.Contains(res.GetStdout(), "stopped 1 thread(s) the script started (adder)") {
		t.Errorf("the result does not report the stopped thread: %q", res.GetStdout())
	}
	check := execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: "import threading\n" +
		"print([t.name for t in threading.enumerate() if t.name == 'adder'], len([o for o in doc.Objects if o.TypeId == 'Part::Box']))\n"})
	want := "[] " + strconv.Itoa(len(res.GetChanges().GetAdded()))
	if got := strings.TrimSpace(check.GetStdout()); got != want || len(res.GetChanges().GetAdded()) == 0 {
		t.Fatalf("want the thread gone and the %d reported boxes only (%q), got %q", len(res.GetChanges().GetAdded()), want, got)
	}
}
