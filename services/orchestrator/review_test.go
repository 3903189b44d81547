package orchestrator_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/hosts/freecad/launcher/launchertest"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// reviewer decides a call awaiting review, as a person in another client
// would; it answers nil to leave the call waiting.
type reviewer func(tc *agentv1.ToolCall) *agentv1.ReviewToolCallRequest

// followAndCarry follows a run like a courier that carries only calls with a
// result token, once each, and lets review decide the calls that await it.
func followAndCarry(ctx context.Context, t *testing.T, c agentv1.OrchestratorServiceClient, sessionID, prompt string,
	carry func(*agentv1.ToolCall) *agentv1.SubmitToolResultRequest, review reviewer) []*agentv1.StreamChunk {
	t.Helper()
	stream, err := c.Run(ctx, &agentv1.RunRequest{SessionId: sessionID, Prompt: prompt})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	carried := map[string]bool{}
	var chunks []*agentv1.StreamChunk
	for {
		ch, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return chunks
		}
		if err != nil {
			t.Fatalf("follow: %v", err)
		}
		chunks = append(chunks, ch)
		tc := ch.GetToolCall()
		switch {
		case tc == nil:
		case tc.GetResultToken() == "":
			if tc.GetReview() != agentv1.ReviewState_REVIEW_STATE_AWAITING {
				t.Errorf("call %s has no result token but is not awaiting review: %v", tc.GetToolCallId(), tc.GetReview())
			}
			if req := review(tc); req != nil {
				req.SessionId, req.ToolCallId = sessionID, tc.GetToolCallId()
				if _, err := c.ReviewToolCall(ctx, req); err != nil {
					t.Fatalf("review %s: %v", tc.GetToolCallId(), err)
				}
			}
		case !carried[tc.GetToolCallId()+" "+tc.GetResultToken()]:
			carried[tc.GetToolCallId()+" "+tc.GetResultToken()] = true
			req := carry(tc)
			req.SessionId, req.ToolCallId, req.ResultToken = sessionID, tc.GetToolCallId(), tc.GetResultToken()
			if _, err := c.SubmitToolResult(ctx, req); err != nil {
				t.Fatalf("submit %s: %v", tc.GetToolCallId(), err)
			}
		}
	}
}

func lastError(chunks []*agentv1.StreamChunk) *agentv1.Error {
	if n := len(chunks); n > 0 {
		return chunks[n-1].GetError()
	}
	return nil
}

// TestReviewIsServerState drives each review policy through the real
// router and capability service: which calls wait, that a waiting call has
// no token and shows in GetSession, that a decision is taken once, that an
// edit is what runs and what the audit keeps, and that a courier failure
// ends the run with its own error.
func TestReviewIsServerState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	const edited = "import FreeCAD as App\nApp.ActiveDocument.addObject('Part::Box', 'Edited')\n"
	turns := func() *ot.Vendor {
		return ot.NewAnthropic(t,
			ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_r1", "execute_data_collection", map[string]any{"code": "print(1)", "description": "Look"})}},
			ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_r2", "execute_task_automation", map[string]any{"description": "Add a box", "code": boxScript})}},
			ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}},
		)
	}
	committed := func(tc *agentv1.ToolCall) *agentv1.SubmitToolResultRequest {
		if tc.GetExecute().GetMode() == hostv1.Mode_MODE_READ_ONLY {
			return &agentv1.SubmitToolResultRequest{Result: &hostv1.HostResult{Stdout: "1\n"}}
		}
		return &agentv1.SubmitToolResultRequest{Result: &hostv1.HostResult{Committed: true, Changes: &hostv1.Changes{Added: []string{"Box"}}}}
	}
	approve := func(code string) reviewer {
		return func(*agentv1.ToolCall) *agentv1.ReviewToolCallRequest {
			return &agentv1.ReviewToolCallRequest{Verdict: agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE, Code: code}
		}
	}
	cases := []struct {
		name     string
		policy   agentv1.ReviewPolicy
		review   reviewer
		carry    func(*agentv1.ToolCall) *agentv1.SubmitToolResultRequest
		awaiting []string // calls that waited for review, in order
		wantErr  agentv1.ErrorCode
		check    func(t *testing.T, v *ot.Vendor, chunks []*agentv1.StreamChunk, c agentv1.OrchestratorServiceClient, sessionID string)
	}{
		{name: "none runs everything unattended", policy: agentv1.ReviewPolicy_REVIEW_POLICY_NONE, carry: committed},
		{name: "automations wait, inspections run", policy: agentv1.ReviewPolicy_REVIEW_POLICY_AUTOMATIONS, carry: committed,
			review: approve(""), awaiting: []string{"toolu_r2"}},
		{name: "every script waits", policy: agentv1.ReviewPolicy_REVIEW_POLICY_EVERY_SCRIPT, carry: committed,
			review: approve(""), awaiting: []string{"toolu_r1", "toolu_r2"}},
		{name: "an edit is what runs", policy: agentv1.ReviewPolicy_REVIEW_POLICY_AUTOMATIONS, carry: func(tc *agentv1.ToolCall) *agentv1.SubmitToolResultRequest {
			if tc.GetToolCallId() == "toolu_r2" && tc.GetExecute().GetCode() != edited {
				t.Errorf("approved call carries %q, want the reviewer's edit", tc.GetExecute().GetCode())
			}
			return committed(tc)
		}, review: approve(edited), awaiting: []string{"toolu_r2"},
			check: func(t *testing.T, v *ot.Vendor, chunks []*agentv1.StreamChunk, c agentv1.OrchestratorServiceClient, sessionID string) {
				ds, err := c.ListDispatches(ctx, &agentv1.ListDispatchesRequest{SessionId: sessionID, IncludeCode: true})
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, d := range ds.GetDispatches() {
					if d.GetToolCallId() == "toolu_r2" && d.GetStamp().GetCode() == edited {
						found = true
						if d.GetReviewer() == "" || !d.GetEdited() {
							t.Errorf("the audit row of the edited script names no reviewer or edit: %v", d)
						}
					}
				}
				if !found {
					t.Errorf("the audit log does not hold the edited script: %v", ds.GetDispatches())
				}
				if text, _ := lastToolResultText(v); !strings.Contains(text, "edited your script") {
					t.Errorf("the model was not told its script was edited: %q", text)
				}
			}},
		{name: "a decline tells the model and runs nothing", policy: agentv1.ReviewPolicy_REVIEW_POLICY_AUTOMATIONS,
			carry: func(tc *agentv1.ToolCall) *agentv1.SubmitToolResultRequest {
				if tc.GetToolCallId() == "toolu_r2" {
					t.Errorf("a declined call was offered to the courier: %v", tc)
				}
				return committed(tc)
			},
			review: func(*agentv1.ToolCall) *agentv1.ReviewToolCallRequest {
				return &agentv1.ReviewToolCallRequest{Verdict: agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE, Reason: "not now"}
			}, awaiting: []string{"toolu_r2"},
			check: func(t *testing.T, v *ot.Vendor, chunks []*agentv1.StreamChunk, _ agentv1.OrchestratorServiceClient, _ string) {
				if text, _ := lastToolResultText(v); !strings.Contains(text, "declined") || !strings.Contains(text, "not now") {
					t.Errorf("the model was told %q, want the decline and its reason", text)
				}
				decided := metadataOf(chunks, (*agentv1.Metadata).GetReviewDecided)
				if len(decided) != 1 || decided[0].GetVerdict() != agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE || decided[0].GetReviewer() == "" {
					t.Errorf("review_decided = %v, want one decline with its reviewer", decided)
				}
			}},
		{name: "an unreachable host ends the run as such", policy: agentv1.ReviewPolicy_REVIEW_POLICY_NONE,
			carry: func(tc *agentv1.ToolCall) *agentv1.SubmitToolResultRequest {
				return &agentv1.SubmitToolResultRequest{CourierFailure: &agentv1.CourierFailure{
					Code: agentv1.ErrorCode_ERROR_CODE_HOST_UNREACHABLE, Message: "dial tcp 127.0.0.1:7723: connection refused"}}
			}, wantErr: agentv1.ErrorCode_ERROR_CODE_HOST_UNREACHABLE,
			check: func(t *testing.T, v *ot.Vendor, chunks []*agentv1.StreamChunk, c agentv1.OrchestratorServiceClient, sessionID string) {
				if e := lastError(chunks); !strings.Contains(e.GetMessage(), "could not be reached") || !strings.Contains(e.GetMessage(), "connection refused") {
					t.Errorf("error = %q, want what failed and what the courier saw", e.GetMessage())
				}
				if n := len(v.Requests()); n != 1 {
					t.Errorf("the model was asked %d times, want once: the run ends at the failure", n)
				}
				ds, err := c.ListDispatches(ctx, &agentv1.ListDispatchesRequest{SessionId: sessionID})
				if err != nil {
					t.Fatal(err)
				}
				if len(ds.GetDispatches()) == 0 || ds.GetDispatches()[0].GetOutcome().String() != "DISPATCH_OUTCOME_NOT_DELIVERED" {
					t.Errorf("audit = %v, want the script recorded as not delivered", ds.GetDispatches())
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vendor := turns()
			stack := ot.Start(t, vendor.URL, baseEnv())
			sess, err := stack.Client.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad", Model: ot.Model, ReviewPolicy: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			var awaited []string
			review := func(call *agentv1.ToolCall) *agentv1.ReviewToolCallRequest {
				awaited = append(awaited, call.GetToolCallId())
				got, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()})
				if err != nil {
					t.Fatal(err)
				}
				if p := got.GetPendingToolCall(); p.GetReview() != agentv1.ReviewState_REVIEW_STATE_AWAITING || p.GetToolCall().GetExecute().GetCode() == "" ||
					p.GetToolCall().GetResultToken() != "" {
					t.Errorf("GetSession's pending call = %v, want the script awaiting review, without a token", p)
				}
				// A result posted for a call awaiting review is refused: only
				// a decision moves it.
				if _, err := stack.Client.SubmitToolResult(ctx, &agentv1.SubmitToolResultRequest{SessionId: sess.GetSessionId(), ToolCallId: call.GetToolCallId(),
					ResultToken: "guess", Result: &hostv1.HostResult{Committed: true}}); status.Code(err) != codes.PermissionDenied {
					t.Errorf("a result for a call awaiting review: %v, want PermissionDenied", err)
				}
				return tc.review(call)
			}
			chunks := followAndCarry(ctx, t, stack.Client, sess.GetSessionId(), "Add a box", tc.carry, review)
			if strings.Join(awaited, ",") != strings.Join(tc.awaiting, ",") {
				t.Errorf("calls that awaited review = %v, want %v", awaited, tc.awaiting)
			}
			if e := lastError(chunks); e.GetCode() != tc.wantErr {
				t.Errorf("run ended with %v, want %v", e, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, vendor, chunks, stack.Client, sess.GetSessionId())
			}
		})
	}
}

// lastToolResultText is the text of the last tool result the model was sent.
func lastToolResultText(v *ot.Vendor) (string, int) {
	reqs := v.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if rs := reqs[i].ToolResults(); len(rs) > 0 {
			return rs[len(rs)-1].ToolResultText()
		}
	}
	return "", 0
}

// TestReviewIsDecidedOnce posts conflicting decisions from two clients: the
// first wins, a repeat of it is answered again, the other is refused.
func TestReviewIsDecidedOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_o1", "execute_task_automation", map[string]any{"description": "Add a box", "code": boxScript})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}},
	)
	stack := ot.Start(t, vendor.URL, baseEnv())
	if def, err := stack.Client.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad", Model: ot.Model}); err != nil {
		t.Fatal(err)
	} else if def.GetReviewPolicy() != agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW {
		t.Errorf("default review policy = %v, want preview", def.GetReviewPolicy())
	}
	sess, err := stack.Client.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad", Model: ot.Model, ReviewPolicy: agentv1.ReviewPolicy_REVIEW_POLICY_AUTOMATIONS})
	if err != nil {
		t.Fatal(err)
	}
	approve := &agentv1.ReviewToolCallRequest{Verdict: agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE}
	chunks := followAndCarry(ctx, t, stack.Client, sess.GetSessionId(), "Add a box",
		func(*agentv1.ToolCall) *agentv1.SubmitToolResultRequest {
			return &agentv1.SubmitToolResultRequest{Result: &hostv1.HostResult{Committed: true}}
		},
		func(tc *agentv1.ToolCall) *agentv1.ReviewToolCallRequest {
			first := proto.Clone(approve).(*agentv1.ReviewToolCallRequest)
			first.SessionId, first.ToolCallId = sess.GetSessionId(), tc.GetToolCallId()
			if _, err := stack.Client.ReviewToolCall(ot.As(ctx, "someone-else"), first); status.Code(err) != codes.NotFound {
				t.Errorf("another user's review: %v, want NotFound", err)
			}
			got, err := stack.Client.ReviewToolCall(ctx, first)
			if err != nil {
				t.Fatalf("approve: %v", err)
			}
			if again, err := stack.Client.ReviewToolCall(ctx, first); err != nil || again.GetVerdict() != got.GetVerdict() {
				t.Errorf("the same approval again: %v %v, want it answered again", again, err)
			}
			decline := &agentv1.ReviewToolCallRequest{SessionId: sess.GetSessionId(), ToolCallId: tc.GetToolCallId(), Verdict: agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE}
			if _, err := stack.Client.ReviewToolCall(ctx, decline); status.Code(err) != codes.Aborted {
				t.Errorf("a decline after the approval: %v, want Aborted", err)
			}
			return nil
		})
	if c := chunks[len(chunks)-1].GetComplete(); c == nil {
		t.Fatalf("run ended with %v, want complete", chunks[len(chunks)-1])
	}
}

// TestPreviewPolicy runs the demo's room script under the preview policy on
// the real FreeCAD runtime: the preview reports the room and leaves the
// document as it was; approval commits the same report; a change between
// preview and approval brings a new preview; a decline changes nothing.
func TestPreviewPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("start the FreeCAD runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	room := launchertest.DemoRoomScript(t)
	dump := func() string {
		t.Helper()
		d, err := launchertest.Dump(ctx, rt.Client)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	carry := func(tc *agentv1.ToolCall) *agentv1.SubmitToolResultRequest {
		res, err := rt.Client.Execute(ctx, tc.GetExecute())
		if err != nil {
			t.Fatalf("execute %s on the runtime: %v", tc.GetToolCallId(), err)
		}
		return &agentv1.SubmitToolResultRequest{Result: res}
	}
	// runOn plays turns in a session of policy (unspecified: the default)
	// and answers the chunks, the model's requests and the session's audit.
	runOn := func(t *testing.T, policy agentv1.ReviewPolicy, turns []ot.Turn, carry func(*agentv1.ToolCall) *agentv1.SubmitToolResultRequest, review reviewer) ([]*agentv1.StreamChunk, *ot.Vendor, []*capabilityv1.Dispatch) {
		vendor := ot.NewAnthropic(t, turns...)
		stack := ot.Start(t, vendor.URL, baseEnv())
		sess, err := stack.Client.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad", Model: ot.Model, ReviewPolicy: policy})
		if err != nil {
			t.Fatal(err)
		}
		chunks := followAndCarry(ctx, t, stack.Client, sess.GetSessionId(), "Build a small room", carry, review)
		ds, err := stack.Client.ListDispatches(ctx, &agentv1.ListDispatchesRequest{SessionId: sess.GetSessionId(), IncludeCode: true})
		if err != nil {
			t.Fatal(err)
		}
		return chunks, vendor, ds.GetDispatches()
	}
	roomTurns := []ot.Turn{
		{Blocks: []ot.Block{ot.ToolUse("toolu_p1", "execute_task_automation", map[string]any{"description": "Build the room", "code": room})}},
		{Blocks: []ot.Block{ot.Text("Done.")}},
	}
	run := func(t *testing.T, review reviewer) ([]*agentv1.StreamChunk, *ot.Vendor) {
		chunks, vendor, _ := runOn(t, agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW, roomTurns, carry, review)
		return chunks, vendor
	}
	reset := func(t *testing.T) {
		t.Helper()
		res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, TransactionName: "reset",
			Code: "for o in list(App.ActiveDocument.Objects):\n    App.ActiveDocument.removeObject(o.Name)\n"})
		if err != nil || res.GetError() != nil {
			t.Fatalf("empty the document: %v %v", err, res.GetError())
		}
	}
	approve := &agentv1.ReviewToolCallRequest{Verdict: agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE}

	t.Run("approve commits what the preview showed", func(t *testing.T) {
		reset(t)
		before := dump()
		var preview *hostv1.HostResult
		chunks, vendor := run(t, func(tc *agentv1.ToolCall) *agentv1.ReviewToolCallRequest {
			preview = tc.GetPreview()
			if got := dump(); got != before {
				t.Errorf("the document after the preview differs from before it (%d bytes, was %d)", len(got), len(before))
			}
			return approve
		})
		if preview == nil || !preview.GetPreviewed() || len(preview.GetImages()) == 0 {
			t.Fatalf("the call awaiting review carries preview %v, want a previewed result with a view", preview)
		}
		counts := map[string]int{}
		for _, e := range preview.GetEpilogue().GetReport().GetElements() {
			counts[e.GetCategory()]++
		}
		if counts["Wall"] != 4 || counts["Door"] != 1 || counts["Window"] != 1 || counts["Level"] != 1 {
			t.Errorf("preview report elements = %v, want 4 walls, 1 door, 1 window, 1 level", counts)
		}
		if !strings.Contains(preview.GetEpilogue().GetStdout(), "Construction helpers:") {
			t.Errorf("preview report text has no helpers line:\n%s", preview.GetEpilogue().GetStdout())
		}
		results := metadataOf(chunks, (*agentv1.Metadata).GetToolResult)
		if len(results) != 2 || !results[0].GetPreview() || results[1].GetPreview() || !results[1].GetResult().GetCommitted() {
			t.Fatalf("tool results = %v, want the preview then the commit", results)
		}
		if !proto.Equal(results[1].GetResult().GetEpilogue().GetReport(), preview.GetEpilogue().GetReport()) {
			t.Errorf("committed report differs from the preview's:\n%v\n%v", results[1].GetResult().GetEpilogue().GetReport(), preview.GetEpilogue().GetReport())
		}
		if reqs := vendor.Requests(); len(reqs) != 2 {
			t.Errorf("the model was asked %d times, want 2: it hears only of the commit", len(reqs))
		} else if text, _ := lastToolResultText(vendor); strings.Contains(strings.ToLower(text), "preview") {
			t.Errorf("the model was told of the preview: %q", text)
		}
	})

	t.Run("by default a failing script goes to the model and the next one's preview waits", func(t *testing.T) {
		reset(t)
		before := dump()
		const raises = "import FreeCAD as App\nApp.ActiveDocument.addObject('Part::Box', 'Half')\nraise RuntimeError('first try fails')\n"
		turns := []ot.Turn{
			{Blocks: []ot.Block{ot.ToolUse("toolu_f1", "execute_task_automation", map[string]any{"description": "First try", "code": raises})}},
			{Blocks: []ot.Block{ot.ToolUse("toolu_f2", "execute_task_automation", map[string]any{"description": "Build the room", "code": room})}},
			{Blocks: []ot.Block{ot.Text("Done.")}},
		}
		var awaited []string
		var carried []string
		chunks, vendor, audit := runOn(t, agentv1.ReviewPolicy_REVIEW_POLICY_UNSPECIFIED, turns, func(tc *agentv1.ToolCall) *agentv1.SubmitToolResultRequest {
			carried = append(carried, tc.GetToolCallId()+" "+tc.GetExecute().GetMode().String())
			return carry(tc)
		}, func(tc *agentv1.ToolCall) *agentv1.ReviewToolCallRequest {
			awaited = append(awaited, tc.GetToolCallId())
			if tc.GetPreview() == nil || len(tc.GetPreview().GetImages()) == 0 || tc.GetPreview().GetEpilogue().GetReport() == nil {
				t.Errorf("the call awaiting review carries no preview report and view: %v", tc.GetPreview())
			}
			if got := dump(); got != before {
				t.Errorf("the document changed before the approval")
			}
			return approve
		})
		if strings.Join(awaited, ",") != "toolu_f2" {
			t.Errorf("calls that awaited review = %v, want only the second script's (the failure went to the model unasked)", awaited)
		}
		want := "toolu_f1.preview1 MODE_PREVIEW,toolu_f2.preview1 MODE_PREVIEW,toolu_f2 MODE_TRANSACTION"
		if strings.Join(carried, ",") != want {
			t.Errorf("carried %v, want %s", carried, want)
		}
		if reqs := vendor.Requests(); len(reqs) != 3 {
			t.Errorf("the model was asked %d times, want 3", len(reqs))
		} else if text, _ := reqs[1].ToolResults()[0].ToolResultText(); !strings.Contains(text, "first try fails") {
			t.Errorf("the model was not told of the failure: %q", text)
		}
		if e := lastError(chunks); e != nil {
			t.Fatalf("run ended with %v", e)
		}
		var committed string
		for _, d := range audit {
			if d.GetToolCallId() == "toolu_f2" && d.GetKind().String() == "SCRIPT_KIND_TASK_AUTOMATION" {
				committed = d.GetStamp().GetCode()
			}
		}
		if committed != room {
			t.Errorf("the committed bytes are not the previewed script (%d bytes, want %d)", len(committed), len(room))
		}
	})

	t.Run("an edited approval is previewed again and decided before it commits", func(t *testing.T) {
		reset(t)
		edited := room + "\nApp.ActiveDocument.addObject('Part::Box', 'EditedByReviewer')\n"
		var reviews []*agentv1.ToolCall
		var carried []string
		chunks, vendor, audit := runOn(t, agentv1.ReviewPolicy_REVIEW_POLICY_UNSPECIFIED, roomTurns, func(tc *agentv1.ToolCall) *agentv1.SubmitToolResultRequest {
			carried = append(carried, tc.GetToolCallId()+" "+tc.GetExecute().GetMode().String())
			if tc.GetExecute().GetMode() == hostv1.Mode_MODE_TRANSACTION && len(reviews) < 2 {
				t.Errorf("the edit commits before its own preview was decided")
			}
			return carry(tc)
		}, func(tc *agentv1.ToolCall) *agentv1.ReviewToolCallRequest {
			reviews = append(reviews, tc)
			if len(reviews) == 1 {
				return &agentv1.ReviewToolCallRequest{Verdict: agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE, Code: edited}
			}
			return approve
		})
		if e := lastError(chunks); e != nil {
			t.Fatalf("run ended with %v", e)
		}
		if len(reviews) != 2 {
			t.Fatalf("reviews = %d, want 2: the edit gets its own preview and decision", len(reviews))
		}
		second := reviews[1]
		if second.GetExecute().GetCode() != edited {
			t.Errorf("the second review shows %q, want the edited script", second.GetExecute().GetCode())
		}
		boxes := func(tc *agentv1.ToolCall) int {
			n := 0
			for _, h := range tc.GetPreview().GetEpilogue().GetReport().GetHelpers() {
				if h.GetKind() == "box" {
					n += int(h.GetCount())
				}
			}
			return n
		}
		if boxes(reviews[0]) != 0 || boxes(second) != 1 {
			t.Errorf("the second preview does not show the edit's effect (boxes %d then %d): %v", boxes(reviews[0]), boxes(second), second.GetPreview().GetEpilogue().GetReport())
		}
		want := "toolu_p1.preview1 MODE_PREVIEW,toolu_p1.preview2 MODE_PREVIEW,toolu_p1 MODE_TRANSACTION"
		if strings.Join(carried, ",") != want {
			t.Errorf("carried %v, want %s", carried, want)
		}
		if !strings.Contains(dump(), "EditedByReviewer") {
			t.Errorf("the edited script did not commit")
		}
		var commit *capabilityv1.Dispatch
		for _, d := range audit {
			if d.GetToolCallId() == "toolu_p1" && d.GetKind().String() == "SCRIPT_KIND_TASK_AUTOMATION" {
				commit = d
			}
		}
		if commit.GetStamp().GetCode() != edited || commit.GetReviewer() == "" || !commit.GetEdited() {
			t.Errorf("the committed audit row = %v, want the edited bytes, the reviewer and the edit", commit)
		}
		if text, _ := lastToolResultText(vendor); !strings.Contains(text, "edited your script") {
			t.Errorf("the model was not told its script was edited: %q", text)
		}
	})

	t.Run("a change before approval brings a new preview", func(t *testing.T) {
		reset(t)
		previews := 0
		var last *hostv1.HostResult
		chunks, _ := run(t, func(tc *agentv1.ToolCall) *agentv1.ReviewToolCallRequest {
			previews++
			last = tc.GetPreview()
			if previews == 1 {
				// Someone changes the document while the person reads the preview.
				res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, TransactionName: "meanwhile",
					Code: "App.ActiveDocument.addObject('Part::Box', 'Meanwhile')\n"})
				if err != nil || !res.GetCommitted() {
					t.Fatalf("change the document: %v %v", err, res.GetError())
				}
			}
			return approve
		})
		if previews != 2 {
			t.Fatalf("previews reviewed = %d, want 2", previews)
		}
		results := metadataOf(chunks, (*agentv1.Metadata).GetToolResult)
		commit := results[len(results)-1].GetResult()
		if !commit.GetCommitted() || !proto.Equal(commit.GetEpilogue().GetReport(), last.GetEpilogue().GetReport()) {
			t.Errorf("commit %v does not match the second preview", commit.GetEpilogue().GetReport())
		}
	})

	t.Run("decline leaves the document and tells the model", func(t *testing.T) {
		reset(t)
		before := dump()
		_, vendor := run(t, func(*agentv1.ToolCall) *agentv1.ReviewToolCallRequest {
			return &agentv1.ReviewToolCallRequest{Verdict: agentv1.ReviewVerdict_REVIEW_VERDICT_DECLINE}
		})
		if after := dump(); after != before {
			t.Errorf("a declined preview changed the document (%d bytes, was %d)", len(after), len(before))
		}
		if text, _ := lastToolResultText(vendor); !strings.Contains(text, "declined") {
			t.Errorf("the model was told %q, want the decline", text)
		}
	})
}
