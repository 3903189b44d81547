package call

import (
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/app/apptest"
	"nexus.local/platform/config"
	"nexus.local/services/capability"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
	"nexus.local/services/orchestrator/tool"
)

// TestALateOutcomeEndsItsOwnSending is the sweep's race: the host refused
// an approved script (the document changed since its preview), and the
// record of that outcome was still in the outbox, held by another
// replica's sweep, when the call was sent again. The record is written
// only after the second sending is in the audit log; it lands on the
// sending it describes, and the second one waits for its own.
func TestALateOutcomeEndsItsOwnSending(t *testing.T) {
	ctx := t.Context()
	const key = "late-outcome-internal-key-of-32-bytes"
	dataDir := t.TempDir()

	capVars := config.Map(map[string]string{"NEXUS_INTERNAL_KEY": key, "NEXUS_DATA_DIR": dataDir, "NEXUS_LOG_LEVEL": "warn"})
	capCfg, err := capability.LoadConfig(ctx, capVars)
	if err != nil {
		t.Fatal(err)
	}
	capAddr := apptest.Serve(ctx, t, capability.ServiceName, capVars, capability.Builder(capCfg))

	vars := config.Map(map[string]string{
		"NEXUS_MODEL_ROUTER_ADDR": "127.0.0.1:1", "NEXUS_CAPABILITY_ADDR": capAddr,
		"NEXUS_DATA_DIR": dataDir, "NEXUS_INTERNAL_KEY": key, "NEXUS_REPLICA_ID": "late-outcome", "NEXUS_LOG_LEVEL": "warn",
	})
	env, err := app.NewEnv(ctx, "orchestrator", vars)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := env.Dial(capAddr, "NEXUS_CAPABILITY_ADDR")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	capc := capabilityv1.NewCapabilityServiceClient(conn)
	store := memory.New(nil)
	o := StartOutbox(ctx, OutboxDeps{Store: store, Log: env.Log, Now: time.Now, Capability: capc})
	t.Cleanup(o.Close)

	r := New(&Deps{Store: store, Capability: capc, Outbox: o, Now: time.Now}, nil)
	r.Log, r.SessionID, r.RunID, r.Owner, r.HostApp = env.Log, "sess-late", "run-late", "alice", "freecad"
	r.Host = &capabilityv1.HostProvider{CapabilityVersion: "test"}
	script := "App.ActiveDocument.addObject('Part::Box', 'Box')\n"
	call := &agentv1.ToolCall{ToolCallId: "toolu_late", ToolName: agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION,
		HostRequest: &agentv1.ToolCall_Execute{Execute: &hostv1.ExecuteRequest{Code: script, Mode: hostv1.Mode_MODE_TRANSACTION}}}
	approval := &orchestratorv1.ReviewDecision{Reviewer: "bob"}
	kind := capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION

	first, err := r.audit(ctx, call, kind, script, approval, false)
	if err != nil {
		t.Fatalf("audit the first sending: %v", err)
	}
	// What offer keeps in the run state for the sending that left.
	p := &orchestratorv1.PendingCall{ToolCall: call, Kind: kind, Attempt: first}
	rec := r.outcomeRecord(p, "refused", outcomeBody{ToolName: tool.TaskAutomation, Scope: scopeAuditOnly})
	rec.Delivery = state.ResultDelivery(&hostv1.HostResult{Error: &hostv1.ExecError{
		Type: "RevisionChanged", Condition: hostv1.ExecCondition_EXEC_CONDITION_REVISION_CHANGED}})

	second, err := r.audit(ctx, call, kind, script, approval, false)
	if err != nil {
		t.Fatalf("audit the second sending: %v", err)
	}
	if first != 1 || second != 2 {
		t.Fatalf("the audit log numbered the sendings %d and %d, want 1 and 2", first, second)
	}
	if err := o.writeOutcome(ctx, rec); err != nil {
		t.Fatalf("write the late outcome: %v", err)
	}

	resp, err := capc.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: "sess-late"})
	if err != nil {
		t.Fatal(err)
	}
	// The log lists the sendings in order, each with its own outcome.
	ds := resp.GetDispatches()
	if len(ds) != 2 {
		t.Fatalf("the audit log lists %d dispatches, want the 2 sendings", len(ds))
	}
	if d := ds[0]; d.GetOutcome() != capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_ROLLED_BACK || d.GetErrorType() != "RevisionChanged" {
		t.Errorf("the first sending ended %v (%q), want rolled back (RevisionChanged)", d.GetOutcome(), d.GetErrorType())
	}
	if d := ds[1]; d.GetOutcome() != capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_UNSPECIFIED {
		t.Errorf("the second sending, still out, has the outcome %v (%q), want none yet", d.GetOutcome(), d.GetErrorType())
	}
}
