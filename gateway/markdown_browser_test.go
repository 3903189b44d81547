package gateway

import (
	"net/http"
	"testing"

	ot "nexus.local/services/orchestrator/orchestratortest"
)

// markdownAnswer is a model's answer with what a person's prose needs (a
// table, a nested list) and what must never run (an image's onerror, a
// javascript: link, raw script).
const markdownAnswer = "Rooms on the ground floor:\n\n" +
	"| Room | Area |\n| :--- | ---: |\n| Kitchen | 12.5 m² |\n| Hall | 6 m² |\n\n" +
	"- Level 1\n  - Wall A\n  - Wall B\n- Level 2\n\n" +
	"<img src=x onerror=\"window.__pwned=1\"> [click](javascript:window.__pwned=2) " +
	"<a href=\"javascript:window.__pwned=3\">click too</a> <script>window.__pwned=4</script> [docs](https://example.org/)\n"

// TestBrowserMarkdown opens a finished run whose answer is markdownAnswer
// in the web UI in Chromium: the table and the nested list render as such,
// the image, the script and the javascript: links are inert
// (web/e2e/markdown.e2e.mjs).
func TestBrowserMarkdown(t *testing.T) {
	t.Parallel()
	webDir, artifacts := browserSetup(t, "markdown")
	vendor := ot.NewAnthropic(t, ot.Turn{Blocks: []ot.Block{ot.Text(markdownAnswer)}})
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	base := startGateway(t, realGatewayEnv(stack))
	resp := request(t, http.MethodPost, base+"/v1/sessions", aliceKey, `{"hostApp":"freecad"}`)
	session, _ := decodeJSON(t, resp)["sessionId"].(string)
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("create a session: %d", resp.StatusCode)
	}
	run := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"list the rooms"}`)
	rd := newSSEReader(run.Body)
	for {
		f, err := rd.next()
		if err != nil {
			break
		}
		if f.event == "error" {
			t.Fatalf("the run failed: %s", f.data)
		}
	}
	runE2E(t, webDir, "e2e/markdown.e2e.mjs", base, "unused", artifacts, 3*testTimeout,
		"NEXUS_API_KEY="+aliceKey, "NEXUS_SESSION_ID="+session)
}
