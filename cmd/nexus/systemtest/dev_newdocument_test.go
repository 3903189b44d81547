package systemtest

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// demoRoom builds the demo room in a new session (newDocument as given),
// with nobody following the run, and answers the session's id once the run
// completed.
func demoRoom(t *testing.T, base string, newDocument bool) string {
	t.Helper()
	var sess struct {
		SessionID   string `json:"sessionId"`
		NewDocument bool   `json:"newDocument"`
	}
	apiJSON(t, http.MethodPost, base+"/v1/sessions", "", map[string]any{"hostApp": "freecad", "reviewPolicy": "REVIEW_POLICY_NONE", "newDocument": newDocument}, http.StatusOK, &sess)
	if sess.NewDocument != newDocument {
		t.Fatalf("the session says newDocument %v, want %v", sess.NewDocument, newDocument)
	}
	var started struct {
		RunID string `json:"runId"`
	}
	apiJSON(t, http.MethodPost, base+"/v1/sessions/"+sess.SessionID+"/runs:start", "", map[string]any{"prompt": demoPrompt}, http.StatusOK, &started)
	waitFor(t, "the demo run to end", linkPatience, func() bool {
		var s struct {
			ActiveRunID string `json:"activeRunId"`
		}
		apiJSON(t, http.MethodGet, base+"/v1/sessions/"+sess.SessionID, "", nil, http.StatusOK, &s)
		return s.ActiveRunID == ""
	})
	if events := readRunEvents(t, base, started.RunID); !strings.Contains(events, "event: complete") {
		t.Fatalf("the demo run of session %s did not complete:\n%s", sess.SessionID, events)
	}
	return sess.SessionID
}

// download fetches a session's document, answering its status, file name
// and bytes.
func download(t *testing.T, base, sessionID string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/sessions/"+sessionID+"/document", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	return resp.StatusCode, params["filename"], b
}

// TestNewDocumentSessionBuildsTheRoomAgain runs the demo on nexus dev and
// its real FreeCAD runtime, then again in a session created with
// newDocument, without restarting anything: the second room is built in a
// new, empty document saved beside the first, which stays as it was; each
// session's document downloads as its host saved it.
func TestNewDocumentSessionBuildsTheRoomAgain(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	base, env := startDemoDev(t, bin)
	var hosts linkedHosts
	waitFor(t, "nexus dev's runtime to link", linkPatience, func() bool {
		apiJSON(t, http.MethodGet, base+"/v1/hosts", "", nil, http.StatusOK, &hosts)
		return len(hosts.LinkedHosts) == 1 && hosts.LinkedHosts[0].Online
	})
	want := map[string]int{"wall": 4, "door": 1, "window": 1, "level": 1}
	checkRoom := func(when string) {
		got := countRoom(t, env)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: the document has %d %s(s), want %d (all: %v)", when, got[k], k, v, got)
			}
		}
	}
	folder := filepath.Join(dataDir(env), "freecad")

	first := demoRoom(t, base, false)
	checkRoom("after the first demo")
	saved, err := os.ReadFile(filepath.Join(folder, devDocumentName))
	if err != nil {
		t.Fatalf("nexus dev's document after the first demo: %v", err)
	}
	status, name, got := download(t, base, first)
	if status != http.StatusOK || name != devDocumentName || !bytes.Equal(got, saved) {
		t.Fatalf("download of the first session: HTTP %d, file %q, %d bytes; want 200, %q and the %d bytes of the saved file",
			status, name, len(got), devDocumentName, len(saved))
	}
	if !bytes.HasPrefix(got, []byte("PK")) {
		t.Errorf("the downloaded document is not an FCStd (a zip file): starts %q", got[:min(8, len(got))])
	}

	second := demoRoom(t, base, true)
	// The same demo in the old document would stand two rooms in it.
	checkRoom("after the demo in a new document")
	after, err := os.ReadFile(filepath.Join(folder, devDocumentName))
	if err != nil || !bytes.Equal(after, saved) {
		t.Errorf("the first document changed when the second session built its room (%v)", err)
	}
	newName := strings.TrimSuffix(devDocumentName, ".FCStd") + "-2.FCStd"
	newFile, err := os.ReadFile(filepath.Join(folder, newName))
	if err != nil {
		t.Fatalf("the new document was not saved beside the first: %v", err)
	}
	status, name, got = download(t, base, second)
	if status != http.StatusOK || name != newName || !bytes.Equal(got, newFile) {
		t.Errorf("download of the second session: HTTP %d, file %q, %d bytes; want 200, %q and the %d bytes of %s",
			status, name, len(got), newName, len(newFile), newName)
	}

	// A session whose host saved nothing for it says so.
	var idle struct {
		SessionID string `json:"sessionId"`
	}
	apiJSON(t, http.MethodPost, base+"/v1/sessions", "", map[string]any{"hostApp": "freecad"}, http.StatusOK, &idle)
	status, _, got = download(t, base, idle.SessionID)
	if status != http.StatusNotFound || !strings.Contains(string(got), "no saved document yet") {
		t.Errorf("download of a session without a saved document: HTTP %d %s; want 404 saying it has none yet", status, got)
	}
}
