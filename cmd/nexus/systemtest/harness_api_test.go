package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// linkPatience bounds the waits on a whole demo run on a loaded machine;
// it guards against a hang, it measures nothing.
const linkPatience = 5 * time.Minute

// apiJSON sends a JSON request to the gateway and decodes the answer into
// out (when given), failing the test unless the status is want.
func apiJSON(t *testing.T, method, url, token string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, url, resp.StatusCode, want, got)
	}
	if out != nil {
		if err := json.Unmarshal(got, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, url, got, err)
		}
	}
}

// waitFor polls cond until it holds or patience runs out.
func waitFor(t *testing.T, what string, patience time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting (%s) for %s", patience, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type linkedHosts struct {
	LinkedHosts []struct {
		HostID  string `json:"hostId"`
		HostApp string `json:"hostApp"`
		Online  bool   `json:"online"`
	} `json:"linkedHosts"`
}

// readRunEvents reads a finished run's whole event log.
func readRunEvents(t *testing.T, base, runID string) string {
	t.Helper()
	return readRunEventsAs(t, base, runID, "")
}

// readRunEventsAs reads a finished run's event log with key (none when
// empty).
func readRunEventsAs(t *testing.T, base, runID, key string) string {
	t.Helper()
	return readRunEventsWithin(t, base, runID, key, linkPatience)
}

// readRunEventsWithin reads what a run's event log holds within d, with key
// (none when empty); the run may still be going when d ends.
func readRunEventsWithin(t *testing.T, base, runID, key string, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+runID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// pairOverHTTP pairs a host runtime for key's user as the runtime and the
// person do, and answers its host token.
func pairOverHTTP(t *testing.T, base, key string) string {
	t.Helper()
	var start struct{ DeviceCode, UserCode string }
	apiJSON(t, http.MethodPost, base+"/v1/host-pairings", "", map[string]string{"hostApp": "freecad"}, http.StatusOK, &start)
	apiJSON(t, http.MethodPost, base+"/v1/host-pairings:approve", key, map[string]string{"userCode": start.UserCode}, http.StatusOK, nil)
	var claim struct{ HostToken string }
	apiJSON(t, http.MethodPost, base+"/v1/host-pairings:claim", "", map[string]string{"deviceCode": start.DeviceCode}, http.StatusOK, &claim)
	return claim.HostToken
}

// hostPresence answers the ids and presence of the local user's hosts.
func hostPresence(t *testing.T, base string) map[string]bool {
	t.Helper()
	var list linkedHosts
	apiJSON(t, http.MethodGet, base+"/v1/hosts", "", nil, http.StatusOK, &list)
	out := map[string]bool{}
	for _, h := range list.LinkedHosts {
		out[h.HostID] = h.Online
	}
	return out
}

// linkRequest opens a host link with token and answers the response.
func linkRequest(t *testing.T, base, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/host-link?hostApp=freecad", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// waitRunEnded waits until the session has no active run (what names the
// wait in a failure).
func waitRunEnded(t *testing.T, base, key, sessionID, what string) {
	t.Helper()
	waitFor(t, what, linkPatience, func() bool {
		var s struct{ ActiveRunID string }
		apiJSON(t, http.MethodGet, base+"/v1/sessions/"+sessionID, key, nil, http.StatusOK, &s)
		return s.ActiveRunID == ""
	})
}
