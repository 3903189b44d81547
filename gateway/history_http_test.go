package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestRunHistoryOverHTTP reads a finished run's history and audit log over
// the public API, with the script bytes only on request, and deletes the
// session; another user gets 404 for all of it.
func TestRunHistoryOverHTTP(t *testing.T) {
	stack := startRealStack(t)
	base := startGateway(t, realGatewayEnv(stack))
	session := createSession(t, base, aliceKey)
	ctx, cancel := context.WithTimeout(ot.As(context.Background(), "key:alice"), testTimeout)
	defer cancel()
	if _, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: session, Prompt: "add a 20 mm box"},
		func(*agentv1.ToolCall) *hostv1.HostResult { return &hostv1.HostResult{Committed: true} }); err != nil {
		t.Fatal(err)
	}
	get := func(t *testing.T, path, key string, out any) int {
		t.Helper()
		resp := request(t, http.MethodGet, base+path, key, "")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK && out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s: %v: %s", path, err, b)
			}
		}
		return resp.StatusCode
	}

	t.Run("GET runs", func(t *testing.T) {
		var runs struct {
			Runs []struct {
				Prompt    string         `json:"prompt"`
				Outcome   string         `json:"outcome"`
				Models    []string       `json:"models"`
				Turns     int            `json:"turns"`
				ToolCalls map[string]int `json:"toolCalls"`
				Usage     map[string]any `json:"usage"`
			} `json:"runs"`
		}
		if code := get(t, "/v1/sessions/"+session+"/runs", aliceKey, &runs); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
		if len(runs.Runs) != 1 {
			t.Fatalf("want 1 run, got %+v", runs)
		}
		r := runs.Runs[0]
		if r.Prompt != "add a 20 mm box" || r.Outcome != "completed" || r.Turns != 2 || len(r.Models) != 1 || r.ToolCalls["committed"] != 1 || r.Usage["inputTokens"] == nil {
			t.Fatalf("run record %+v", r)
		}
	})
	t.Run("GET dispatches gives the bytes on request", func(t *testing.T) {
		type list struct {
			Dispatches []struct {
				Outcome string `json:"outcome"`
				Stamp   struct {
					Code        string `json:"code"`
					ContentHash string `json:"contentHash"`
				} `json:"stamp"`
			} `json:"dispatches"`
		}
		var without, with list
		if code := get(t, "/v1/sessions/"+session+"/dispatches", aliceKey, &without); code != http.StatusOK || len(without.Dispatches) != 2 || without.Dispatches[0].Stamp.Code != "" {
			t.Fatalf("without includeCode: %d %+v", code, without)
		}
		if code := get(t, "/v1/sessions/"+session+"/dispatches?includeCode=true", aliceKey, &with); code != http.StatusOK || len(with.Dispatches) != 2 {
			t.Fatalf("with includeCode: %d %+v", code, with)
		}
		for _, d := range with.Dispatches {
			sum := sha256.Sum256([]byte(d.Stamp.Code))
			if d.Stamp.Code == "" || hex.EncodeToString(sum[:]) != d.Stamp.ContentHash || d.Outcome != "DISPATCH_OUTCOME_COMMITTED" {
				t.Errorf("dispatch %+v: want its bytes, hashing to its stamp, committed", d)
			}
		}
		if !strings.Contains(with.Dispatches[0].Stamp.Code, `box.Length = 20`) {
			t.Errorf("want the model's script, got %q", with.Dispatches[0].Stamp.Code)
		}
		var page struct {
			Dispatches    []any  `json:"dispatches"`
			NextPageToken string `json:"nextPageToken"`
		}
		if code := get(t, "/v1/sessions/"+session+"/dispatches?pageSize=1", aliceKey, &page); code != http.StatusOK || len(page.Dispatches) != 1 || page.NextPageToken == "" {
			t.Fatalf("pageSize=1: %d %+v", code, page)
		}
		if code := get(t, "/v1/sessions/"+session+"/dispatches?pageSize=1&pageToken="+page.NextPageToken, aliceKey, &page); code != http.StatusOK || len(page.Dispatches) != 1 || page.NextPageToken != "" {
			t.Fatalf("second page: %d %+v", code, page)
		}
		if code := get(t, "/v1/sessions/"+session+"/dispatches?pageSize=5000", aliceKey, nil); code != http.StatusBadRequest {
			t.Fatalf("pageSize=5000: %d, want 400", code)
		}
	})
	t.Run("another user gets 404", func(t *testing.T) {
		if code := get(t, "/v1/sessions/"+session+"/runs", bobKey, nil); code != http.StatusNotFound {
			t.Errorf("GET runs: %d, want 404", code)
		}
		resp := request(t, http.MethodDelete, base+"/v1/sessions/"+session, bobKey, "")
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("DELETE: %d, want 404", resp.StatusCode)
		}
	})
	t.Run("DELETE", func(t *testing.T) {
		resp := request(t, http.MethodDelete, base+"/v1/sessions/"+session, aliceKey, "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || len(b) != 0 {
			t.Fatalf("DELETE: %d %q, want 204 without a body", resp.StatusCode, b)
		}
		for _, path := range []string{"/v1/sessions/" + session, "/v1/sessions/" + session + "/runs"} {
			if code := get(t, path, aliceKey, nil); code != http.StatusNotFound {
				t.Errorf("GET %s after DELETE: %d, want 404", path, code)
			}
		}
	})
}
