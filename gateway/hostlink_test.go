package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// startLinkStack is the real orchestrator behind a gateway of alice's and
// bob's, its model writing one script per run and then answering.
func startLinkStack(t *testing.T) string {
	t.Helper()
	vendor := ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
		if len(r.ToolResults()) > 0 {
			return ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}}
		}
		return ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_01", "execute_data_collection", map[string]any{"description": "Count", "code": "print(len(doc.Objects))"})}}
	})
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	return startGateway(t, realGatewayEnv(stack, "NEXUS_RATE_LIMIT_RPS", "0"))
}

// pairHost runs the device flow as a runtime and a person would: the runtime
// asks for codes, key's user approves the user code, the runtime claims its
// host token.
func pairHost(t *testing.T, base, key string) (token, hostID string) {
	t.Helper()
	var start agentv1.StartPairingResponse
	decodeProto(t, request(t, http.MethodPost, base+"/v1/host-pairings", "", `{"hostApp":"freecad","document":"room.FCStd","hostVersion":"0.20.2","machine":"ada-laptop"}`), http.StatusOK, &start)
	if len(start.GetUserCode()) != 9 || start.GetExpiresIn() != 600 {
		t.Fatalf("pairing codes: %v", &start)
	}
	var pending agentv1.ClaimPairingResponse
	decodeProto(t, request(t, http.MethodPost, base+"/v1/host-pairings:claim", "", `{"deviceCode":"`+start.GetDeviceCode()+`"}`), http.StatusOK, &pending)
	if pending.GetStatus() != agentv1.PairingStatus_PAIRING_STATUS_PENDING || pending.GetHostToken() != "" {
		t.Fatalf("a claim before the approval: %v", &pending)
	}
	// What the person is shown before they approve: what asked, from
	// where, and when. Looking links nothing: the approval below finds the
	// code still open.
	var seen agentv1.PendingPairing
	decodeProto(t, request(t, http.MethodGet, base+"/v1/host-pairings/"+strings.ToLower(start.GetUserCode()), key, ""), http.StatusOK, &seen)
	if seen.GetUserCode() != start.GetUserCode() || seen.GetHostApp() != "freecad" || seen.GetHostVersion() != "0.20.2" || seen.GetDocument() != "room.FCStd" ||
		seen.GetMachine() != "ada-laptop" || seen.GetStartTime().AsTime().After(time.Now()) || !seen.GetExpireTime().AsTime().After(time.Now()) {
		t.Fatalf("the pairing as shown before approval: %v", &seen)
	}
	if r := request(t, http.MethodGet, base+"/v1/host-pairings/BCDF-XXXX", key, ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown code looked up: HTTP %d, want 404", r.StatusCode)
	}
	var host agentv1.LinkedHost
	// The person types it as they read it, in lower case.
	decodeProto(t, request(t, http.MethodPost, base+"/v1/host-pairings:approve", key, `{"userCode":"`+strings.ToLower(start.GetUserCode())+`"}`), http.StatusOK, &host)
	var claim agentv1.ClaimPairingResponse
	decodeProto(t, request(t, http.MethodPost, base+"/v1/host-pairings:claim", "", `{"deviceCode":"`+start.GetDeviceCode()+`"}`), http.StatusOK, &claim)
	if claim.GetStatus() != agentv1.PairingStatus_PAIRING_STATUS_APPROVED || !strings.HasPrefix(claim.GetHostToken(), "nxh_") || claim.GetHost().GetHostId() != host.GetHostId() {
		t.Fatalf("the claim after the approval: %v", &claim)
	}
	// Single use, both ends.
	if r := request(t, http.MethodPost, base+"/v1/host-pairings:claim", "", `{"deviceCode":"`+start.GetDeviceCode()+`"}`); r.StatusCode != http.StatusNotFound {
		t.Errorf("a second claim: HTTP %d, want 404", r.StatusCode)
	}
	if r := request(t, http.MethodPost, base+"/v1/host-pairings:approve", key, `{"userCode":"`+start.GetUserCode()+`"}`); r.StatusCode != http.StatusNotFound {
		t.Errorf("a second approval of a used code: HTTP %d, want 404", r.StatusCode)
	}
	return claim.GetHostToken(), host.GetHostId()
}

// decodeProto reads a JSON answer of status want into out.
func decodeProto(t *testing.T, resp *http.Response, want int, out proto.Message) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, want, b)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// hostLinkConn is a host's open link as a test reads it.
type hostLinkConn struct {
	calls chan *agentv1.HostCall
	ended chan struct{}
	// closing is the error event that ended the link, if one did; read it
	// once ended is closed.
	closing *agentv1.Error
}

// openLink opens token's link and hands on its calls until it ends.
func openLink(t *testing.T, base, token string) *hostLinkConn {
	t.Helper()
	resp := request(t, http.MethodGet, base+"/v1/host-link?hostApp=freecad&document=room.FCStd", token, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("open link: HTTP %d %s", resp.StatusCode, b)
	}
	l := &hostLinkConn{calls: make(chan *agentv1.HostCall, 64), ended: make(chan struct{})}
	rd := newSSEReader(resp.Body)
	first, err := rd.next()
	if err != nil || first.event != "linked" {
		t.Fatalf("the link's first event: %v %v", first, err)
	}
	go func() {
		defer close(l.ended)
		defer resp.Body.Close()
		for {
			f, err := rd.next()
			if err != nil {
				return
			}
			if f.event == "error" {
				c := &agentv1.StreamChunk{}
				if protojson.Unmarshal([]byte(f.data), c) == nil {
					l.closing = c.GetError()
				}
				return
			}
			if f.event == "call" {
				c := &agentv1.HostCall{}
				if protojson.Unmarshal([]byte(f.data), c) == nil {
					l.calls <- c
				}
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return l
}

// TestHostTokenCarriesCallsOnly shows a host token refused with 403 on
// every route but the link and tool results, and refused everywhere once
// the host is revoked; the revoked host's open link is cut at once.
func TestHostTokenCarriesCallsOnly(t *testing.T) {
	base := startLinkStack(t)
	token, hostID := pairHost(t, base, aliceKey)
	session := createSession(t, base, aliceKey)
	for _, route := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/sessions", ""},
		{http.MethodPost, "/v1/sessions", `{"hostApp":"freecad"}`},
		{http.MethodGet, "/v1/sessions/" + session, ""},
		{http.MethodPatch, "/v1/sessions/" + session, `{}`},
		{http.MethodDelete, "/v1/sessions/" + session, ""},
		{http.MethodPost, "/v1/sessions/" + session + "/runs", `{"prompt":"x"}`},
		{http.MethodPost, "/v1/sessions/" + session + "/runs:start", `{"prompt":"x"}`},
		{http.MethodGet, "/v1/sessions/" + session + "/runs", ""},
		{http.MethodGet, "/v1/runs/r_x/events", ""},
		{http.MethodPost, "/v1/sessions/" + session + ":cancel", `{}`},
		{http.MethodPost, "/v1/sessions/" + session + "/tool-calls/c1:review", `{"verdict":"REVIEW_VERDICT_APPROVE"}`},
		{http.MethodGet, "/v1/sessions/" + session + "/dispatches", ""},
		{http.MethodGet, "/v1/models", ""},
		{http.MethodGet, "/v1/hosts", ""},
		{http.MethodDelete, "/v1/hosts/" + hostID, ""},
		{http.MethodPost, "/v1/host-pairings:approve", `{"userCode":"BCDF-GHJK"}`},
		{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	} {
		r := request(t, route.method, base+route.path, token, route.body)
		r.Body.Close()
		if r.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s with a host token: HTTP %d, want 403", route.method, route.path, r.StatusCode)
		}
	}
	// The host's own routes take it.
	link := openLink(t, base, token)
	var hosts agentv1.ListHostsResponse
	decodeProto(t, request(t, http.MethodGet, base+"/v1/hosts", aliceKey, ""), http.StatusOK, &hosts)
	if len(hosts.GetLinkedHosts()) != 1 || !hosts.GetLinkedHosts()[0].GetOnline() || hosts.GetLinkedHosts()[0].GetDocument() != "room.FCStd" {
		t.Fatalf("alice's linked hosts: %v", hosts.GetLinkedHosts())
	}
	// Bob can neither see nor revoke alice's host.
	var bobs agentv1.ListHostsResponse
	decodeProto(t, request(t, http.MethodGet, base+"/v1/hosts", bobKey, ""), http.StatusOK, &bobs)
	if len(bobs.GetLinkedHosts()) != 0 {
		t.Fatalf("bob sees alice's hosts: %v", bobs.GetLinkedHosts())
	}
	if r := request(t, http.MethodDelete, base+"/v1/hosts/"+hostID, bobKey, ""); r.StatusCode != http.StatusNotFound {
		t.Fatalf("bob revoking alice's host: HTTP %d, want 404", r.StatusCode)
	}
	revoked := time.Now()
	if r := request(t, http.MethodDelete, base+"/v1/hosts/"+hostID, aliceKey, ""); r.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: HTTP %d, want 204", r.StatusCode)
	}
	select {
	case <-link.ended:
		cut := time.Since(revoked)
		t.Logf("the revoked host's link was cut %s after the revocation", cut)
		if cut > time.Second {
			t.Errorf("the revoked host's link was cut after %s, want within 1 s", cut)
		}
		// The runtime is told its credential is no longer good, not that
		// something broke.
		if code := link.closing.GetCode(); code != agentv1.ErrorCode_ERROR_CODE_HOST_UNAUTHORIZED || !strings.Contains(link.closing.GetMessage(), "revoked") {
			t.Errorf("the revoked link ended with %v %q, want ERROR_CODE_HOST_UNAUTHORIZED saying it was revoked", code, link.closing.GetMessage())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the revoked host's link stayed open")
	}
	for _, route := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/host-link", ""},
		{http.MethodPost, "/v1/sessions/" + session + "/tool-results", `{"toolCallId":"c","resultToken":"t","result":{}}`},
	} {
		r := request(t, route.method, base+route.path, token, route.body)
		r.Body.Close()
		if r.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s with a revoked host token: HTTP %d, want 401", route.method, route.path, r.StatusCode)
		}
	}
}

// TestPairingCodesRefused shows unknown codes refused, and a user guessing
// them stopped by the rate limit: 100 guesses, none accepted, 429s.
func TestPairingCodesRefused(t *testing.T) {
	base := startLinkStack(t)
	counts := map[int]int{}
	for i := range 100 {
		r := request(t, http.MethodPost, base+"/v1/host-pairings:approve", bobKey, fmt.Sprintf(`{"userCode":"BCDF-%04d"}`, i))
		r.Body.Close()
		counts[r.StatusCode]++
	}
	t.Logf("100 guessed codes answered %v", counts)
	if counts[http.StatusOK] != 0 || counts[http.StatusNotFound]+counts[http.StatusTooManyRequests] != 100 || counts[http.StatusTooManyRequests] == 0 {
		t.Fatalf("100 guessed codes answered %v; want none accepted, 404s then 429s", counts)
	}
	// An unknown device code claims nothing.
	if r := request(t, http.MethodPost, base+"/v1/host-pairings:claim", "", `{"deviceCode":"guess"}`); r.StatusCode != http.StatusNotFound {
		t.Fatalf("a guessed device code: HTTP %d, want 404", r.StatusCode)
	}
}

// TestOneLiveLinkPerHost opens a second link with a copy of a host's token:
// the newer link supersedes the older, which is closed at once and told why
// (ERROR_CODE_HOST_SUPERSEDED), and the host's next call reaches the newer
// link only, so one executor carries it. Before, both links stayed open and
// both received every call, result token included.
func TestOneLiveLinkPerHost(t *testing.T) {
	base := startLinkStack(t)
	token, _ := pairHost(t, base, aliceKey)
	older := openLink(t, base, token)
	newer := openLink(t, base, token)
	select {
	case <-older.ended:
		if code := older.closing.GetCode(); code != agentv1.ErrorCode_ERROR_CODE_HOST_SUPERSEDED {
			t.Errorf("the older link ended with %v %q, want ERROR_CODE_HOST_SUPERSEDED", code, older.closing.GetMessage())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the older link stayed open beside the newer one")
	}
	session := createSession(t, base, aliceKey)
	r := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs:start", aliceKey, `{"prompt":"count"}`)
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("start run: HTTP %d", r.StatusCode)
	}
	select {
	case c := <-newer.calls:
		if c.GetSessionId() != session {
			t.Fatalf("the newer link received a call of session %s, want %s", c.GetSessionId(), session)
		}
	case <-time.After(time.Minute):
		t.Fatal("the newer link received no call")
	}
	select {
	case c := <-older.calls:
		t.Fatalf("the superseded link received call %s too", c.GetToolCall().GetToolCallId())
	default:
	}
	// The host is listed once, online.
	var hosts agentv1.ListHostsResponse
	decodeProto(t, request(t, http.MethodGet, base+"/v1/hosts", aliceKey, ""), http.StatusOK, &hosts)
	if len(hosts.GetLinkedHosts()) != 1 || !hosts.GetLinkedHosts()[0].GetOnline() {
		t.Fatalf("alice's hosts: %v, want the one host online", hosts.GetLinkedHosts())
	}
}

// TestPairingLockoutIsNoOracle shows that once a user is locked out for
// wrong codes, every approval is refused with 429, the right code included,
// and the runtime's pairing stays unapproved: a lockout that let a hit
// through would tell a guesser which code is live. Before, after 10 wrong
// codes the 11th guess got 429 yet the right code answered 200 and linked.
func TestPairingLockoutIsNoOracle(t *testing.T) {
	base := startLinkStack(t)
	var start agentv1.StartPairingResponse
	decodeProto(t, request(t, http.MethodPost, base+"/v1/host-pairings", "", `{"hostApp":"freecad"}`), http.StatusOK, &start)
	for i := range 10 {
		r := request(t, http.MethodPost, base+"/v1/host-pairings:approve", bobKey, fmt.Sprintf(`{"userCode":"BCDF-%04d"}`, i))
		r.Body.Close()
		if r.StatusCode != http.StatusNotFound {
			t.Fatalf("wrong code %d: HTTP %d, want 404", i+1, r.StatusCode)
		}
	}
	for _, code := range []string{"BCDF-9999", start.GetUserCode()} {
		r := request(t, http.MethodPost, base+"/v1/host-pairings:approve", bobKey, `{"userCode":"`+code+`"}`)
		r.Body.Close()
		if r.StatusCode != http.StatusTooManyRequests {
			t.Errorf("code %s while locked out: HTTP %d, want 429", code, r.StatusCode)
		}
	}
	var claim agentv1.ClaimPairingResponse
	decodeProto(t, request(t, http.MethodPost, base+"/v1/host-pairings:claim", "", `{"deviceCode":"`+start.GetDeviceCode()+`"}`), http.StatusOK, &claim)
	if claim.GetStatus() != agentv1.PairingStatus_PAIRING_STATUS_PENDING || claim.GetHostToken() != "" {
		t.Errorf("the runtime's pairing after the locked-out approval: %v, want still pending", &claim)
	}
	// Another person is not locked out by bob's guesses.
	if _, host := pairHost(t, base, aliceKey); host == "" {
		t.Error("alice could not pair while bob was locked out")
	}
}

// TestCallsReachOnlyTheOwnersHost runs 20 sessions of two users, each with
// a linked host: every call reaches its session's owner's host, none the
// other's, and each run completes on the result its host posts.
func TestCallsReachOnlyTheOwnersHost(t *testing.T) {
	base := startLinkStack(t)
	users := map[string]string{"alice": aliceKey, "bob": bobKey}
	tokens, links, sessions := map[string]string{}, map[string]*hostLinkConn{}, map[string]map[string]bool{}
	for u, key := range users {
		tokens[u], _ = pairHost(t, base, key)
		links[u] = openLink(t, base, tokens[u])
		sessions[u] = map[string]bool{}
	}
	for i := range 10 {
		for u, key := range users {
			s := createSession(t, base, key)
			sessions[u][s] = true
			r := request(t, http.MethodPost, base+"/v1/sessions/"+s+"/runs:start", key, fmt.Sprintf(`{"prompt":"count %d"}`, i))
			r.Body.Close()
			if r.StatusCode != http.StatusOK {
				t.Fatalf("start run: HTTP %d", r.StatusCode)
			}
		}
	}
	var wg sync.WaitGroup
	for u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := map[string]bool{}
			timeout := time.After(2 * time.Minute)
			for len(got) < 10 {
				select {
				case c := <-links[u].calls:
					if !sessions[u][c.GetSessionId()] {
						t.Errorf("%s's host received a call of session %s, not one of theirs", u, c.GetSessionId())
						continue
					}
					got[c.GetSessionId()] = true
					body, _ := json.Marshal(map[string]any{"toolCallId": c.GetToolCall().GetToolCallId(), "resultToken": c.GetToolCall().GetResultToken(),
						"result": map[string]any{"stdout": "0\n"}})
					r := request(t, http.MethodPost, base+"/v1/sessions/"+c.GetSessionId()+"/tool-results", tokens[u], string(body))
					r.Body.Close()
					if r.StatusCode != http.StatusOK {
						t.Errorf("%s's host posting its result: HTTP %d", u, r.StatusCode)
					}
				case <-timeout:
					t.Errorf("%s's host received calls of %d sessions, want 10", u, len(got))
					return
				}
			}
		}()
	}
	wg.Wait()
	// A host token cannot post into another user's session.
	for s := range sessions["bob"] {
		r := request(t, http.MethodPost, base+"/v1/sessions/"+s+"/tool-results", tokens["alice"], `{"toolCallId":"toolu_01","resultToken":"x","result":{}}`)
		r.Body.Close()
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("alice's host posting into bob's session: HTTP %d, want 404", r.StatusCode)
		}
		break
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for u, key := range users {
		for s := range sessions[u] {
			for {
				var sess agentv1.Session
				decodeProto(t, request(t, http.MethodGet, base+"/v1/sessions/"+s, key, ""), http.StatusOK, &sess)
				if sess.GetActiveRunId() == "" {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("session %s's run did not end", s)
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}
}

// TestLinkSendsEachCallOnce starts 20 runs on sessions bound to one linked
// host at once. The orchestrator hands each call to the link as soon as it
// is in the host's log, and the log's notification brings it again: the
// link sends each call once all the same, whichever order the two come in.
func TestLinkSendsEachCallOnce(t *testing.T) {
	base := startLinkStack(t)
	token, hostID := pairHost(t, base, aliceKey)
	link := openLink(t, base, token)
	sessions := map[string]bool{}
	for range 20 {
		sessions[createSession(t, base, aliceKey)] = true
	}
	var starts sync.WaitGroup
	for s := range sessions {
		starts.Go(func() {
			r := request(t, http.MethodPost, base+"/v1/sessions/"+s+"/runs:start", aliceKey, `{"prompt":"count"}`)
			r.Body.Close()
			if r.StatusCode != http.StatusOK {
				t.Errorf("start run: HTTP %d", r.StatusCode)
			}
		})
	}
	starts.Wait()
	got := map[string]int{}
	answer := func(c *agentv1.HostCall) {
		got[c.GetSessionId()]++
		if c.GetToolCall().GetHostId() != hostID || !sessions[c.GetSessionId()] {
			t.Errorf("a call for host %s of session %s, want host %s and one of the 20 sessions", c.GetToolCall().GetHostId(), c.GetSessionId(), hostID)
		}
		body, _ := json.Marshal(map[string]any{"toolCallId": c.GetToolCall().GetToolCallId(), "resultToken": c.GetToolCall().GetResultToken(),
			"result": map[string]any{"stdout": "0\n"}})
		r := request(t, http.MethodPost, base+"/v1/sessions/"+c.GetSessionId()+"/tool-results", token, string(body))
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Errorf("post a result: HTTP %d", r.StatusCode)
		}
	}
	timeout := time.After(2 * time.Minute)
	for len(got) < len(sessions) {
		select {
		case c := <-link.calls:
			answer(c)
		case <-timeout:
			t.Fatalf("the link brought calls of %d sessions, want %d", len(got), len(sessions))
		}
	}
	// Every run ends on its one result; whatever the link brings after
	// that is a call it sent twice.
	for s := range sessions {
		for {
			var sess agentv1.Session
			decodeProto(t, request(t, http.MethodGet, base+"/v1/sessions/"+s, aliceKey, ""), http.StatusOK, &sess)
			if sess.GetActiveRunId() == "" {
				break
			}
			select {
			case c := <-link.calls:
				answer(c)
			case <-timeout:
				t.Fatalf("session %s's run did not end", s)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	for drained := false; !drained; {
		select {
		case c := <-link.calls:
			got[c.GetSessionId()]++
		default:
			drained = true
		}
	}
	for s, n := range got {
		if n != 1 {
			t.Errorf("the link sent session %s's call %d times, want once", s, n)
		}
	}
}
