package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// TestReviewCodeThatCannotRunIsRefused approves a script awaiting review with
// edited code no host can run, through the gateway to the real orchestrator:
// a lone UTF-16 surrogate escape, invalid UTF-8 or a NUL is refused with 400
// naming the problem and where it is (and so is a decline whose reason
// holds a NUL), the call still awaits review, and a
// decision in proper text is then taken.
func TestReviewCodeThatCannotRunIsRefused(t *testing.T) {
	stack := startRealStack(t)
	base := startGateway(t, realGatewayEnv(stack))
	session, rd, awaiting := startRunToToolCall(t, base, "REVIEW_POLICY_AUTOMATIONS")
	if awaiting.GetReview() != agentv1.ReviewState_REVIEW_STATE_AWAITING {
		t.Fatalf("the call is %v, want it awaiting review", awaiting.GetReview())
	}
	review := base + "/v1/sessions/" + session + "/tool-calls/" + awaiting.GetToolCallId() + ":review"
	const approve = `{"verdict":"REVIEW_VERDICT_APPROVE","code":"`
	tests := []struct {
		name, code string
		// mentions are what the message must say.
		mentions []string
	}{
		{"a lone high surrogate", `x = 1  # \ud800 end`, []string{`"code"`, `lone surrogate \ud800`, "byte offset 53"}},
		{"a lone low surrogate", `x = 1  # \uDC00`, []string{`"code"`, `lone surrogate \uDC00`, "byte offset 53"}},
		{"a pair in the wrong order", `x = 1  # \udc00\ud800`, []string{`"code"`, `lone surrogate \udc00`, "byte offset 53"}},
		{"a high surrogate before a plain escape", `x = 1  # \ud800\u0041`, []string{`"code"`, `lone surrogate \ud800`, "byte offset 53"}},
		{"invalid UTF-8", "x = 1  # \xff", []string{`"code"`, "not valid UTF-8", "byte offset 53"}},
		{"a NUL", `x = 1\u0000\n`, []string{"code", "NUL", "byte offset 5", "line 1"}},
		{"a NUL on a later line", `x = 1\ny = 2\u0000\n`, []string{"code", "NUL", "byte offset 11", "line 2"}},
		// A decline's reason goes to the model as text, like a script; before,
		// one with a NUL was accepted where an edit with one was refused.
		{"a decline reason with a NUL", `{"verdict":"REVIEW_VERDICT_DECLINE","reason":"no\u0000pe"}`, []string{"reason", "NUL", "byte offset 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := approve + tt.code + `"}`
			if strings.HasPrefix(tt.code, "{") {
				body = tt.code
			}
			resp := request(t, http.MethodPost, review, aliceKey, body)
			if resp.StatusCode != http.StatusBadRequest {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want 400: %s", resp.StatusCode, b)
			}
			e := apiErrorOf(t, resp)
			for _, m := range tt.mentions {
				if e.Status != "INVALID_ARGUMENT" || !strings.Contains(e.Message, m) {
					t.Errorf("error %+v, want INVALID_ARGUMENT saying %s", e, m)
				}
			}
			t.Logf("%s", e.Message)
		})
	}

	// Nothing was decided: the call still awaits review, and a decision in
	// proper text (a surrogate pair is one character) is taken.
	resp := request(t, http.MethodGet, base+"/v1/sessions/"+session, aliceKey, "")
	var sess agentv1.Session
	b, _ := io.ReadAll(resp.Body)
	if err := protojson.Unmarshal(b, &sess); err != nil {
		t.Fatal(err)
	}
	if p := sess.GetPendingToolCall(); p.GetToolCallId() != awaiting.GetToolCallId() || p.GetReview() != agentv1.ReviewState_REVIEW_STATE_AWAITING {
		t.Fatalf("after the refused decisions the pending call is %v, want %s still awaiting review", p, awaiting.GetToolCallId())
	}
	resp = request(t, http.MethodPost, review, aliceKey, `{"verdict":"REVIEW_VERDICT_DECLINE","reason":"not now \ud83d\ude00"}`)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("decline: %d %s", resp.StatusCode, b)
	}
	if last := rd.lastEvent(t).event; last != "complete" {
		t.Errorf("the run's last event is %q, want complete", last)
	}
}

// TestTextErrorNamesOnlyWhatIsNotText checks the body scan on its edges: an
// escaped backslash before "u" is text, a surrogate pair is one character,
// and a lone half is found wherever it is, with its field.
func TestTextErrorNamesOnlyWhatIsNotText(t *testing.T) {
	for _, tt := range []struct {
		body, want string
	}{
		{`{"code":"a \\ud800 b"}`, ""},
		{`{"code":"\ud83d\ude00"}`, ""},
		{`{"code":"\u00e9\n\"\\"}`, ""},
		{`{"code":"` + "\u00e9\U0001F600" + `"}`, ""},
		{`{"code":"\ud8"}`, ""},
		{`{"result":{"stdout":"ok \ud800"}}`, `"stdout" holds a lone surrogate \ud800 at byte offset 24`},
		{`{"result":{"stdout":"ok \\\ud800"}}`, `"stdout" holds a lone surrogate \ud800 at byte offset 26`},
		{`["\udfff"]`, `a string holds a lone surrogate \udfff at byte offset 2`},
		{"{\"reason\":\"\xc3\"}", `"reason" is not valid UTF-8 at byte offset 11`},
	} {
		err := textError([]byte(tt.body))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused as %v, want it accepted", tt.body, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: got %v, want an error saying %s", tt.body, err, tt.want)
		}
	}
}
