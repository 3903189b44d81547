package orchestrator_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestEachDispatchHasItsOwnOutcome runs an automation under the preview
// policy on the real FreeCAD runtime while someone changes the document
// during the first two reviews, and the first approval edits the script: the
// host refuses approved scripts whose preview no longer holds, the call is
// previewed and approved again, and in the end one script commits. The audit
// log lists every script that left with the outcome the host gave that very
// dispatch: the refused bytes are not listed as committed.
func TestEachDispatchHasItsOwnOutcome(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("start the FreeCAD runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	const (
		script = "App.ActiveDocument.addObject('Part::Box', 'Asked')\n"
		edited = "App.ActiveDocument.addObject('Part::Box', 'Edited')\n"
	)
	vendor := ot.NewAnthropic(t,
		ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_a1", "execute_task_automation", map[string]any{"description": "Add a box", "code": script})}},
		ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}},
	)
	stack := ot.Start(t, vendor.URL, baseEnv())
	sess, err := stack.Client.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: "freecad", Model: ot.Model, ReviewPolicy: agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW})
	if err != nil {
		t.Fatal(err)
	}
	// What the host answered each dispatch, in order.
	type sent struct {
		callID, sha256 string
		result         *hostv1.HostResult
	}
	var carried []sent
	carry := func(tc *agentv1.ToolCall) *agentv1.SubmitToolResultRequest {
		res, err := rt.Client.Execute(ctx, tc.GetExecute())
		if err != nil {
			t.Fatalf("execute %s on the runtime: %v", tc.GetToolCallId(), err)
		}
		carried = append(carried, sent{tc.GetToolCallId(), dispatchHash(tc.GetExecute().GetCode()), res})
		return &agentv1.SubmitToolResultRequest{Result: res}
	}
	reviews := 0
	review := func(tc *agentv1.ToolCall) *agentv1.ReviewToolCallRequest {
		reviews++
		req := &agentv1.ReviewToolCallRequest{Verdict: agentv1.ReviewVerdict_REVIEW_VERDICT_APPROVE}
		if reviews <= 2 {
			// Someone changes the document while the person reads the preview.
			res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, TransactionName: "meanwhile",
				Code: "App.ActiveDocument.addObject('Part::Sphere', 'Meanwhile')\n"})
			if err != nil || !res.GetCommitted() {
				t.Fatalf("change the document: %v %v", err, res.GetError())
			}
		}
		if reviews == 1 {
			req.Code = edited
		}
		return req
	}
	chunks := followAndCarry(ctx, t, stack.Client, sess.GetSessionId(), "Add a box", carry, review)
	if e := lastError(chunks); e != nil {
		t.Fatalf("run failed: %v", e)
	}

	refused, committed := 0, 0
	for _, c := range carried {
		switch {
		case c.result.GetError().GetType() == "RevisionChanged":
			refused++
		case c.result.GetCommitted():
			committed++
		}
	}
	if refused == 0 || committed != 1 {
		t.Fatalf("the host refused %d approved scripts and committed %d, want at least one refusal and one commit", refused, committed)
	}
	// Each time, the person is told why they are asked again.
	told := 0
	for _, c := range chunks {
		if strings.Contains(c.GetMetadata().GetNotice().GetText(), "the document changed after the preview you approved") {
			told++
		}
	}
	if told != refused {
		t.Errorf("the stream says %d times why the script is previewed again, want once per refusal (%d)", told, refused)
	}
	ds, err := stack.Client.ListDispatches(ctx, &agentv1.ListDispatchesRequest{SessionId: sess.GetSessionId()})
	if err != nil {
		t.Fatal(err)
	}
	var scripts []*capabilityv1.Dispatch
	for i, d := range ds.GetDispatches() {
		switch d.GetKind() {
		case capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION:
			scripts = append(scripts, d)
		case capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE:
			// An epilogue went with the script before it and shares its end.
			if prev := scripts[len(scripts)-1]; i == 0 || prev.GetToolCallId() != d.GetToolCallId() ||
				prev.GetOutcome() != d.GetOutcome() || prev.GetErrorType() != d.GetErrorType() {
				t.Errorf("epilogue entry %d of %s ended %s (%s), its script %s (%s)", i, d.GetToolCallId(),
					d.GetOutcome(), d.GetErrorType(), prev.GetOutcome(), prev.GetErrorType())
			}
		}
	}
	if len(scripts) != len(carried) {
		t.Fatalf("the audit log lists %d scripts, the host was sent %d", len(scripts), len(carried))
	}
	for i, c := range carried {
		d := scripts[i]
		want, wantType := capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_ROLLED_BACK, c.result.GetError().GetType()
		switch {
		case c.result.GetPreviewed():
			want, wantType = capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_PREVIEWED, ""
		case c.result.GetCommitted():
			want, wantType = capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED, ""
		}
		if d.GetToolCallId() != c.callID || d.GetStamp().GetContentHash() != c.sha256 || d.GetOutcome() != want || d.GetErrorType() != wantType {
			t.Errorf("audit entry %d: %s sha256 %s ended %s (%s); the host was sent %s sha256 %s and answered %s (%s)", i,
				d.GetToolCallId(), d.GetStamp().GetContentHash()[:12], d.GetOutcome(), d.GetErrorType(),
				c.callID, c.sha256[:12], want, wantType)
		}
	}
	runs, err := stack.Client.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: sess.GetSessionId()})
	if err != nil {
		t.Fatal(err)
	}
	if got := runs.GetRuns(); len(got) != 1 || got[0].GetToolCalls()["committed"] != 1 || got[0].GetToolCalls()["rolled_back"] != 0 {
		t.Errorf("the run history counts %v, want the model's one call committed", got)
	}
}

func dispatchHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
