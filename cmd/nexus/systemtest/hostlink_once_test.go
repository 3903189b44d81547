package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

// TestLinkAndLoopbackCarryOnce has a follower still carry each call to the
// loopback runtime, as couriers did before the link, racing the link that
// carries the same call to the same runtime: the ledger runs it once, the
// loser of the race gets the winner's answer, and both posts are accepted
// as the same result. The same id with other code is refused.
func TestLinkAndLoopbackCarryOnce(t *testing.T) {
	t.Parallel()
	script := "import time\ndoc.addObject('Part::Box', 'Twice')\ntime.sleep(1)\n"
	base := startOneCallStack(t, "toolu_twice", "A box", script, "One box.")
	token := pairOverHTTP(t, base, linkUserKey)
	rt := startLinkedFreeCAD(t, base, token, nil)
	waitLinked(t, base, linkUserKey)
	var sess struct{ SessionID string }
	apiJSON(t, http.MethodPost, base+"/v1/sessions", linkUserKey, map[string]any{"hostApp": "freecad", "reviewPolicy": "REVIEW_POLICY_NONE"}, http.StatusOK, &sess)
	ctx, cancel := context.WithTimeout(t.Context(), linkPatience)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/sessions/"+sess.SessionID+"/runs", strings.NewReader(`{"prompt":"one box"}`))
	req.Header.Set("Authorization", "Bearer "+linkUserKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var (
		wg       sync.WaitGroup
		exec     *hostv1.ExecuteRequest
		complete bool
		mu       sync.Mutex
		results  []*hostv1.HostResult
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var c agentv1.StreamChunk
		if err := protojson.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		switch {
		case c.GetToolCall() != nil:
			call := c.GetToolCall()
			if call.GetHostId() == "" {
				t.Errorf("the call does not name the linked host")
			}
			exec = call.GetExecute()
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The courier of old: carry it to the loopback runtime too.
				res, err := rt.Client.Execute(ctx, exec)
				if err != nil {
					t.Errorf("loopback courier: %v", err)
					return
				}
				body, _ := protojson.Marshal(&agentv1.SubmitToolResultRequest{ToolCallId: call.GetToolCallId(), ResultToken: call.GetResultToken(), Result: res})
				r, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/sessions/"+sess.SessionID+"/tool-results", bytes.NewReader(body))
				r.Header.Set("Authorization", "Bearer "+linkUserKey)
				got, err := http.DefaultClient.Do(r)
				if err != nil {
					t.Errorf("post the courier's result: %v", err)
					return
				}
				got.Body.Close()
				// Accepted as the same result, or refused because the run
				// already went on with the link's identical one.
				if got.StatusCode != http.StatusOK && got.StatusCode != http.StatusConflict {
					t.Errorf("the courier's result: HTTP %d", got.StatusCode)
				}
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
			}()
		case c.GetMetadata().GetToolResult() != nil:
			mu.Lock()
			results = append(results, c.GetMetadata().GetToolResult().GetResult())
			mu.Unlock()
		case c.GetComplete() != nil:
			complete = true
		}
	}
	wg.Wait()
	if !complete || exec == nil {
		t.Fatalf("the run did not complete with a call (complete=%v)", complete)
	}
	if len(results) != 2 || results[0].GetCommitted() != results[1].GetCommitted() || results[0].GetDurationMs() != results[1].GetDurationMs() {
		t.Errorf("the courier and the link got different answers for one call: %v", results)
	}
	count := func() string { return countNamed(t, rt, "Twice") }
	if n := count(); n != "1" {
		t.Fatalf("the document holds %s boxes after two carriers ran one call, want 1", n)
	}
	// The same id with other code is refused and changes nothing.
	other := &hostv1.ExecuteRequest{ToolCallId: exec.GetToolCallId(), Mode: hostv1.Mode_MODE_TRANSACTION, Code: "doc.addObject('Part::Box', 'Twice')\n"}
	res, err := rt.Client.Execute(ctx, other)
	if (err != nil && !strings.Contains(err.Error(), "CallIdReused")) || (err == nil && res.GetError().GetType() != "CallIdReused") {
		t.Fatalf("a reused call id with other code: %v, want CallIdReused", res)
	}
	if n := count(); n != "1" {
		t.Fatalf("the refused call changed the document: %s boxes", n)
	}
}
