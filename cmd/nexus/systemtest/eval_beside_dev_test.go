package systemtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

// TestEvalBesideDev runs nexus eval, every task with replay/expert, beside a
// nexus dev whose FreeCAD (linked to the person, as make run links it) holds
// a document with the person's work: eval passes every task on runtimes of
// its own, the person's document file and the live document are as they
// were, and nexus sessions lists none of eval's sessions unless asked.
// Before eval's sessions were its own, the linked FreeCAD raced eval's
// runtimes for the same calls and the person's document took their walls.
func TestEvalBesideDev(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	env := startDev(t, bin)
	doc := filepath.Join(dataDir(env), "freecad", devDocumentName)

	// The person's work: a box, committed and so saved to their file.
	res, failure := devHost(t, env).Carry(t.Context(), "", &agentv1.ToolCall{ToolCallId: "person", HostRequest: &agentv1.ToolCall_Execute{
		Execute: &hostv1.ExecuteRequest{ToolCallId: "person", Mode: hostv1.Mode_MODE_TRANSACTION, TransactionName: "the person's box",
			Code: "b = doc.addObject('Part::Box', 'PersonsBox')\nb.Length = 1234\n"}}})
	if failure != nil || !res.GetCommitted() {
		t.Fatalf("the person's commit: %v %v", failure, res.GetError())
	}
	before := fileDigest(t, doc)
	objects := devObjects(t, env)
	if !slices.Contains(objects, "PersonsBox") {
		t.Fatalf("the person's document holds %v, want their box", objects)
	}

	// Eval finds nexus dev through its state file alone.
	evalEnv := append(env, "NEXUS_ORCHESTRATOR_ADDR=")
	report := t.TempDir()
	code, stdout, stderr := runNexus(t, bin, evalEnv, "eval", "--model", "replay/expert", "--concurrency", "2", "--report", report)
	t.Logf("nexus eval:\n%s%s", stdout, stderr)
	if code != 0 {
		t.Errorf("nexus eval beside nexus dev exited %d, want 0 (every task passed)", code)
	}
	var rep struct {
		Total struct{ Attempts, Passed int } `json:"total"`
		Tasks []struct {
			Attempts []struct {
				SessionID string `json:"sessionId"`
			} `json:"attempts"`
		} `json:"tasks"`
	}
	b, err := os.ReadFile(filepath.Join(report, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Total.Attempts < 34 || rep.Total.Passed != rep.Total.Attempts {
		t.Errorf("eval passed %d of %d tasks, want all of at least 34", rep.Total.Passed, rep.Total.Attempts)
	}

	if after := fileDigest(t, doc); after != before {
		t.Errorf("the person's document %s changed while eval ran (sha256 %s, was %s)", doc, after, before)
	}
	if got := devObjects(t, env); !slices.Equal(got, objects) {
		t.Errorf("the person's live document holds %v after eval, want %v as before", got, objects)
	}

	listed := func(args ...string) []string {
		code, stdout, stderr := runNexus(t, bin, evalEnv, append([]string{"sessions", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("nexus sessions %v exited %d: %s", args, code, stderr)
		}
		var all agentv1.ListSessionsResponse
		if err := protojson.Unmarshal([]byte(stdout), &all); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range all.GetSessions() {
			ids = append(ids, s.GetSessionId())
		}
		return ids
	}
	mine, everything := listed(), listed("--eval")
	for _, tr := range rep.Tasks {
		for _, a := range tr.Attempts {
			if slices.Contains(mine, a.SessionID) {
				t.Errorf("nexus sessions lists eval's session %s", a.SessionID)
			}
			if !slices.Contains(everything, a.SessionID) {
				t.Errorf("nexus sessions --eval does not list eval's session %s", a.SessionID)
			}
		}
	}
	if strings.Contains(stderr, "already decided") {
		t.Errorf("a call of eval was decided twice:\n%s", stderr)
	}
}

// fileDigest is the sha256 of a file's bytes.
func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
