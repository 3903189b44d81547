package modelrouter_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/modelrouter/routertest"
)

const overloadedBody = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`

func overloaded(header map[string]string) reply {
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range header {
		h[k] = v
	}
	return reply{status: 529, header: h, body: overloadedBody}
}

// TestVendorErrors shows what reaches the caller when the vendor fails: retried
// failures before the first byte, and a TurnError once output was streamed.
func TestVendorErrors(t *testing.T) {
	cases := []struct {
		name      string
		replies   []reply
		attempts  int
		wantText  string
		wantEnd   bool
		wantCode  modelv1.TurnErrorCode
		retryable bool
		sleeps    func(t *testing.T, got []time.Duration)
	}{
		{
			name:     "overloaded mid-stream is not retryable",
			replies:  []reply{{file: "anthropic_overloaded_midstream.sse"}},
			attempts: 1, wantText: "Let me look at the document", wantCode: modelv1.TurnErrorCode_TURN_ERROR_CODE_OVERLOADED, retryable: false,
		},
		{
			name:     "529 before the first byte is retried",
			replies:  []reply{overloaded(map[string]string{"Retry-After": "7"}), overloaded(nil), {file: "anthropic_text.sse"}},
			attempts: 3, wantText: "The wall is in place.", wantEnd: true,
			sleeps: func(t *testing.T, got []time.Duration) {
				if len(got) != 2 || got[0] != 7*time.Second || got[1] <= 0 || got[1] > 2*time.Second {
					t.Errorf("backoff waits = %v, want [7s, (0,2s]]", got)
				}
			},
		},
		{
			name:     "429 honours retry-after-ms",
			replies:  []reply{{status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Content-Type": "application/json"}, body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`}, {file: "anthropic_text.sse"}},
			attempts: 2, wantText: "The wall is in place.", wantEnd: true,
			sleeps: func(t *testing.T, got []time.Duration) {
				if !slices.Equal(got, []time.Duration{1500 * time.Millisecond}) {
					t.Errorf("backoff waits = %v, want [1.5s]", got)
				}
			},
		},
		{
			name:     "retries are capped",
			replies:  []reply{overloaded(nil), overloaded(nil), overloaded(nil), overloaded(nil), overloaded(nil), {file: "anthropic_text.sse"}},
			attempts: 5, wantCode: modelv1.TurnErrorCode_TURN_ERROR_CODE_OVERLOADED, retryable: true,
		},
		{
			name:     "a bad request is not retried",
			replies:  []reply{{status: 400, header: map[string]string{"Content-Type": "application/json"}, body: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}`}},
			attempts: 1, wantCode: modelv1.TurnErrorCode_TURN_ERROR_CODE_INVALID_REQUEST, retryable: false,
		},
		{
			name:     "a stream that stops early is reported",
			replies:  []reply{{body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half\"}}\n\n"}},
			attempts: 1, wantText: "Half", wantCode: modelv1.TurnErrorCode_TURN_ERROR_CODE_STREAM_CUT, retryable: false,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := newVendor(t, tc.replies...)
			r := start(t, map[string]string{"ANTHROPIC_BASE_URL": v.url, "ANTHROPIC_API_KEY": "k"})
			ctx := testCtx(t)
			turn, err := routertest.Collect(ctx, r.Client, &modelv1.StreamTurnRequest{
				Model: "anthropic/claude-haiku-4-5", Messages: []*modelv1.Message{userText("Hello")}, MaxTokens: 1000,
			})
			if err != nil {
				t.Fatalf("StreamTurn: %v", err)
			}
			if got := len(v.requests()); got != tc.attempts {
				t.Errorf("vendor saw %d attempts, want %d", got, tc.attempts)
			}
			if turn.Text != tc.wantText {
				t.Errorf("text = %q, want %q", turn.Text, tc.wantText)
			}
			if (turn.End != nil) != tc.wantEnd {
				t.Errorf("end = %v, want end %v", turn.End, tc.wantEnd)
			}
			if tc.wantCode != modelv1.TurnErrorCode_TURN_ERROR_CODE_UNSPECIFIED {
				if turn.Error == nil {
					t.Fatalf("no TurnError; events %v", kinds(turn.Events))
				}
				if turn.Error.Code != tc.wantCode || turn.Error.Retryable != tc.retryable || turn.Error.Message == "" {
					t.Errorf("TurnError = %v, want code %s retryable %v", turn.Error, tc.wantCode, tc.retryable)
				}
				if k := kinds(turn.Events); k[len(k)-1] != "error" {
					t.Errorf("the error must end the stream: %v", k)
				}
			}
			if tc.sleeps != nil {
				tc.sleeps(t, r.Sleeps())
			}
			// The router is still there for the next call.
			if _, err := r.Client.ListModels(ctx, &modelv1.ListModelsRequest{}); err != nil {
				t.Errorf("router unusable after a vendor error: %v", err)
			}
		})
	}
}

// TestStalledStream shows a vendor that stops sending mid-stream: the turn
// ends with an error instead of hanging.
func TestStalledStream(t *testing.T) {
	v := newVendor(t, reply{file: "anthropic_partial.sse", stall: true})
	r := start(t, map[string]string{"ANTHROPIC_BASE_URL": v.url, "ANTHROPIC_API_KEY": "k",
		"NEXUS_MODEL_STREAM_IDLE_TIMEOUT": "1s", "NEXUS_MODEL_MAX_RETRIES": "0"})
	stalled, err := routertest.Collect(testCtx(t), r.Client, &modelv1.StreamTurnRequest{
		Model: "anthropic/claude-haiku-4-5", Messages: []*modelv1.Message{userText("Hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if stalled.Error == nil || !strings.Contains(stalled.Error.Message, "sent nothing for 1s") || stalled.End != nil {
		t.Errorf("stalled turn = error %v end %v", stalled.Error, stalled.End)
	}
}

// TestBadRequests shows the gRPC errors for requests the router refuses itself.
func TestBadRequests(t *testing.T) {
	r := start(t, map[string]string{})
	ctx := testCtx(t)
	cases := []struct {
		name string
		req  *modelv1.StreamTurnRequest
		code codes.Code
		want []string
	}{
		{"unknown vendor", &modelv1.StreamTurnRequest{Model: "acme/rocket-1"}, codes.InvalidArgument,
			[]string{`"acme/rocket-1"`, "anthropic, openai, gemini, openai-compat, replay"}},
		{"unknown model", &modelv1.StreamTurnRequest{Model: "anthropic/claude-nonexistent"}, codes.InvalidArgument,
			[]string{`"anthropic/claude-nonexistent"`, "anthropic/claude-sonnet-4-5", "NEXUS_MODEL_CATALOG"}},
		{"vendor not configured", &modelv1.StreamTurnRequest{Model: "openai/gpt-5"}, codes.FailedPrecondition,
			[]string{"openai/gpt-5", "OPENAI_API_KEY"}},
		{"bad tool schema", &modelv1.StreamTurnRequest{Model: "replay/demo", Tools: []*modelv1.ToolSpec{{Name: "x", InputSchemaJson: `{"type":"string"}`}}},
			codes.InvalidArgument, []string{"tool x", `"type": "object"`}},
		{"tool schema of another type", &modelv1.StreamTurnRequest{Model: "replay/demo", Tools: []*modelv1.ToolSpec{{Name: "x", InputSchemaJson: `{"properties":{},"type":["object"]}`}}},
			codes.InvalidArgument, []string{"tool x", `"type": "object"`}},
		{"tool schema not an object", &modelv1.StreamTurnRequest{Model: "replay/demo", Tools: []*modelv1.ToolSpec{{Name: "x", InputSchemaJson: `["type","object"]`}}},
			codes.InvalidArgument, []string{"tool x", "not a JSON object"}},
		{"tool schema cut short", &modelv1.StreamTurnRequest{Model: "replay/demo", Tools: []*modelv1.ToolSpec{{Name: "x", InputSchemaJson: `{"type":"object","properties":{`}}},
			codes.InvalidArgument, []string{"tool x", "not a JSON object"}},
		{"bad image", &modelv1.StreamTurnRequest{Model: "replay/demo", Messages: []*modelv1.Message{{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{
			{Block: &modelv1.ContentBlock_Image{Image: &modelv1.ImageBlock{MimeType: "image/gif", Data: []byte("GIF89a")}}}}}}},
			codes.InvalidArgument, []string{"message 0 block 0", "image/png or image/jpeg"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := routertest.Collect(ctx, r.Client, tc.req)
			st, _ := status.FromError(err)
			if st.Code() != tc.code {
				t.Fatalf("code = %v (%v), want %v", st.Code(), err, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(st.Message(), w) {
					t.Errorf("message %q does not mention %q", st.Message(), w)
				}
			}
		})
	}
}
