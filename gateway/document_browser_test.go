package gateway

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestBrowserDocumentHandOver links the real FreeCAD runtime to the gateway
// (it carries its own calls, saves every commit to its file and hands the
// file over for download) with the gateway taking documents of at most
// 150 KB (NEXUS_MAX_DOCUMENT_BYTES). Two runs commit three times; the third
// commit adds a property of random text that puts the file over the limit.
// Each result says how its hand-over went (the third: failed, with the
// gateway's 413 naming the setting), and in Chromium each card says what
// Nexus holds of its file: the third that Nexus did not receive it, the
// second offers the download, which is the file as the second commit saved
// it, and the first that a later change replaced it (web/e2e/document.e2e.mjs).
func TestBrowserDocumentHandOver(t *testing.T) {
	t.Parallel()
	webDir, artifacts := browserSetup(t, "document")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	const head = "import FreeCAD\ndoc = FreeCAD.ActiveDocument\n"
	box := func(id, name string) ot.Turn {
		return ot.Turn{Blocks: []ot.Block{ot.ToolUse(id, "execute_task_automation", map[string]any{
			"description": "Add " + name, "code": head + "doc.addObject(\"Part::Box\", \"" + name + "\")\n"})}}
	}
	// Random bytes do not compress: the saved file is over 150 KB.
	ballast := head + "import base64, os\nb = doc.addObject(\"Part::Box\", \"Ballast\")\n" +
		"b.addProperty(\"App::PropertyString\", \"Blob\", \"Nexus\", \"test ballast\")\nb.Blob = base64.b64encode(os.urandom(300000)).decode()\n"
	stack := ot.Start(t, ot.NewAnthropic(t,
		box("toolu_a", "BoxA"), box("toolu_b", "BoxB"), ot.Turn{Blocks: []ot.Block{ot.Text("Two boxes added.")}},
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_ballast", "execute_task_automation", map[string]any{"description": "Add the ballast", "code": ballast})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("The ballast is added.")}},
	).URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	gwLis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	gwAddr := gwLis.Addr().String()
	gwLis.Close()
	env := realGatewayEnv(stack, "NEXUS_HTTP_ADDR", gwAddr, "NEXUS_DEV_MODE", "true", "NEXUS_CORS_ORIGINS", "http://"+gwAddr,
		"NEXUS_MAX_DOCUMENT_BYTES", "150000", "NEXUS_RATE_LIMIT_RPS", "0")
	delete(env, "NEXUS_API_KEYS")
	base := startGatewayAt(t, env, gwAddr)

	token, _ := pairHost(t, base, "")
	file := filepath.Join(t.TempDir(), "room.FCStd")
	rt, err := launcher.Start(t.Context(), launcher.Options{Addr: "127.0.0.1:0", Document: file, AllowedOrigin: "http://" + gwAddr,
		Connect: base, LinkToken: token})
	if err != nil {
		t.Fatalf("start the freecad runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Stop() })

	runE2E(t, webDir, "e2e/document.e2e.mjs", base, e2ePairingSecret, artifacts, 3*testTimeout)

	session, err := os.ReadFile(filepath.Join(artifacts, "session.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// What each result says of its hand-over, in the order they ran.
	var s agentv1.Session
	decodeProto(t, request(t, http.MethodGet, base+"/v1/sessions/"+string(session), "", ""), http.StatusOK, &s)
	var saves []*hostv1.DocumentSave
	for _, run := range s.GetRunIds() {
		for _, r := range runResults(t, base, run) {
			if r.GetCommitted() {
				saves = append(saves, r.GetSave())
			}
		}
	}
	if len(saves) != 3 {
		t.Fatalf("the session's runs %v committed %d times, want 3", s.GetRunIds(), len(saves))
	}
	for i, sv := range saves[:2] {
		if sv.GetOutcome() != hostv1.SaveOutcome_SAVE_OUTCOME_SAVED || sv.GetHandOver() != hostv1.DocumentHandOver_DOCUMENT_HAND_OVER_RECEIVED || sv.GetHandOverError() != "" {
			t.Errorf("commit %d: save %v, want saved and received", i+1, sv)
		}
	}
	if sv := saves[2]; sv.GetOutcome() != hostv1.SaveOutcome_SAVE_OUTCOME_SAVED || sv.GetHandOver() != hostv1.DocumentHandOver_DOCUMENT_HAND_OVER_FAILED ||
		!strings.Contains(sv.GetHandOverError(), "HTTP 413") || !strings.Contains(sv.GetHandOverError(), "NEXUS_MAX_DOCUMENT_BYTES") {
		t.Errorf("the ballast's commit: save %v, want saved, its hand-over failed with the gateway's 413 naming NEXUS_MAX_DOCUMENT_BYTES", sv)
	}

	// The file holds the third commit; its backup (FreeCAD keeps one) the
	// second, which is what Nexus holds and the second card downloaded.
	now, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(file + "1")
	if err != nil {
		t.Fatalf("the backup of the second commit's file: %v", err)
	}
	downloaded, err := os.ReadFile(filepath.Join(artifacts, "downloaded.FCStd"))
	if err != nil {
		t.Fatal(err)
	}
	if len(now) <= 150000 {
		t.Errorf("the file after the ballast is %d bytes, not over the 150000 the gateway takes", len(now))
	}
	if !bytes.Equal(downloaded, second) {
		t.Errorf("the second card downloaded %d bytes, not the %d of the file as the second commit saved it", len(downloaded), len(second))
	}
}

// runResults reads a finished run's event log and answers the host results
// it carried, in order.
func runResults(t *testing.T, base, runID string) []*hostv1.HostResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+runID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []*hostv1.HostResult
	events := newSSEReader(resp.Body)
	for {
		f, err := events.next()
		if err != nil {
			return out
		}
		var c agentv1.StreamChunk
		if f.data == "" || (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(f.data), &c) != nil {
			continue
		}
		if r := c.GetMetadata().GetToolResult().GetResult(); r != nil {
			out = append(out, r)
		}
	}
}
