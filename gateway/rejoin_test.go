package gateway

import (
	"io"
	"net/http"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestRejoinBounds, against the real orchestrator: a rejoin of a quiet run
// gets its headers at once, not after the keepalive period; a Last-Event-ID
// far past a finished run's end ends with the log instead of waiting forever.
func TestRejoinBounds(t *testing.T) {
	for _, store := range []struct{ name, redisURL string }{{"in process", ""}, {"redis", "redis://127.0.0.1:6379/0"}} {
		t.Run(store.name, func(t *testing.T) { testRejoinBounds(t, store.redisURL) })
	}
}

func testRejoinBounds(t *testing.T, redisURL string) {
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_01", "execute_task_automation", map[string]any{
			"description": "Add a 20 mm box", "code": "import FreeCAD\n",
		})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("I added one box.")}},
	)
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error", "NEXUS_REDIS_URL": redisURL})
	// A keepalive longer than the test's timeout: a rejoin that answered
	// only at the first keepalive would fail the test.
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_SSE_KEEPALIVE", "10m"))
	session := createSession(t, base, aliceKey)
	resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"add a 20 mm box"}`)
	rd := newSSEReader(resp.Body)
	var pending *agentv1.ToolCall
	var runID string
	var lastSeq int64
	for pending == nil {
		f, err := rd.next()
		if err != nil {
			t.Fatalf("stream ended before the tool call: %v", err)
		}
		if f.data == "" {
			continue
		}
		c := &agentv1.StreamChunk{}
		if err := protojson.Unmarshal([]byte(f.data), c); err != nil {
			t.Fatal(err)
		}
		runID, lastSeq, pending = c.GetRunId(), c.GetSeq(), c.GetToolCall()
	}

	t.Run("a quiet run's rejoin answers at once", func(t *testing.T) {
		r := request(t, http.MethodGet, base+"/v1/runs/"+runID+"/events", aliceKey, "", "Last-Event-ID", strconv.FormatInt(lastSeq, 10))
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d %q, want 200 text/event-stream", r.StatusCode, r.Header.Get("Content-Type"))
		}
		r.Body.Close()
	})

	body, _ := protojson.Marshal(&agentv1.SubmitToolResultRequest{ToolCallId: pending.GetToolCallId(), ResultToken: pending.GetResultToken(),
		Result: mustHostResult(t, `{"committed":true,"changes":{"added":["Box"]}}`)})
	if r := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/tool-results", aliceKey, string(body)); r.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(r.Body)
		t.Fatalf("tool result: %d %s", r.StatusCode, b)
	}
	for {
		if _, err := rd.next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}

	t.Run("far Last-Event-ID ends with the log", func(t *testing.T) {
		for _, after := range []string{"1000000", "9223372036854775807"} {
			r := request(t, http.MethodGet, base+"/v1/runs/"+runID+"/events", aliceKey, "", "Last-Event-ID", after)
			if r.StatusCode != http.StatusOK {
				t.Fatalf("after %s: status %d", after, r.StatusCode)
			}
			if ids := readIDs(t, r); len(ids) != 0 {
				t.Errorf("after %s: events %v, want none", after, ids)
			}
		}
	})
}
