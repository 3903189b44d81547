package gateway

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"

	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestSessionDocumentRoutes hands a document over as a linked host and
// downloads it as its owner, byte for byte, on the real orchestrator; and
// shows who may do which, the size limit and a bad file name refused with
// errors that name them.
func TestSessionDocumentRoutes(t *testing.T) {
	vendor := ot.NewAnthropicFunc(t, func(ot.Request) ot.Turn { return ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}} })
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_RATE_LIMIT_RPS", "0", "NEXUS_MAX_DOCUMENT_BYTES", "4096"))
	token, _ := pairHost(t, base, aliceKey)
	session := createSession(t, base, aliceKey)
	path := base + "/v1/sessions/" + session + "/document"
	body := func(r *http.Response) string {
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}

	if r := request(t, http.MethodGet, path, aliceKey, ""); r.StatusCode != http.StatusNotFound || !strings.Contains(body(r), "no saved document yet") {
		t.Fatalf("download before the host saved anything: HTTP %d, want 404 saying there is none yet", r.StatusCode)
	}
	// Binary bytes, NULs and invalid UTF-8 included: the body is the file.
	file := string(bytes.Repeat([]byte{'P', 'K', 0, 0xff, 0xfe}, 400))
	if r := request(t, http.MethodPut, path+"?fileName=room.FCStd", token, file); r.StatusCode != http.StatusOK {
		t.Fatalf("hand over as the host: HTTP %d %s", r.StatusCode, body(r))
	}
	r := request(t, http.MethodGet, path, aliceKey, "")
	got := body(r)
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Disposition"))
	if r.StatusCode != http.StatusOK || got != file || params["filename"] != "room.FCStd" || r.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("download: HTTP %d, %d bytes, %q, %q; want 200, the %d bytes handed over, room.FCStd, application/octet-stream",
			r.StatusCode, len(got), r.Header.Get("Content-Disposition"), r.Header.Get("Content-Type"), len(file))
	}

	for _, c := range []struct {
		name, method, url, key, body string
		want                         int
		says                         string
	}{
		{"another user's download", http.MethodGet, path, bobKey, "", http.StatusNotFound, "not found"},
		{"a download with the host token", http.MethodGet, path, token, "", http.StatusForbidden, "PUT .../document) and nothing else"},
		{"a hand-over by the user", http.MethodPut, path + "?fileName=room.FCStd", aliceKey, file, http.StatusForbidden, "only a linked host"},
		{"a document over the limit", http.MethodPut, path + "?fileName=room.FCStd", token, strings.Repeat("x", 4097), http.StatusRequestEntityTooLarge, "NEXUS_MAX_DOCUMENT_BYTES"},
		{"a file name with a folder", http.MethodPut, path + "?fileName=../room.FCStd", token, file, http.StatusBadRequest, "without a folder"},
		{"a session not bound to the host", http.MethodPut, base + "/v1/sessions/" + createSession(t, base, bobKey) + "/document?fileName=a.FCStd", token, file, http.StatusNotFound, "not bound to host"},
	} {
		r := request(t, c.method, c.url, c.key, c.body)
		if got := body(r); r.StatusCode != c.want || !strings.Contains(got, c.says) {
			t.Errorf("%s: HTTP %d %s; want %d saying %q", c.name, r.StatusCode, got, c.want, c.says)
		}
	}
	// What was refused replaced nothing.
	if got := body(request(t, http.MethodGet, path, aliceKey, "")); got != file {
		t.Errorf("after the refusals the download has %d bytes, want the %d handed over", len(got), len(file))
	}
	// A deleted session takes its document along.
	if r := request(t, http.MethodDelete, base+"/v1/sessions/"+session, aliceKey, ""); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete the session: HTTP %d %s", r.StatusCode, body(r))
	}
	if r := request(t, http.MethodGet, path, aliceKey, ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("download of a deleted session: HTTP %d, want 404", r.StatusCode)
	}
}
