package sqlitestate_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/sqlstore"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/sqlitestate"
)

// TestEverythingSurvivesARestart writes a suspended run's whole state, closes
// the file as a stopping nexus dev does, and finds it all in a new process's
// store on the same file: the session, its transcript, the run, its event
// log, the result waiting in the mailbox, a cancel, and the schedule entry
// that lets the next process carry the run on.
func TestEverythingSurvivesARestart(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	lease := state.Lease{RunID: "run-1", SessionID: "s-1", Owner: "process-1"}

	db, err := sqlstore.Open(ctx, sqlstore.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, db, sqlitestate.Options{})
	sess := &agentv1.Session{SessionId: "s-1", Owner: "local", HostApp: "freecad", ActiveRunId: "run-1", CreateTime: timestamppb.Now(),
		PendingToolCall: &agentv1.PendingToolCall{ToolCallId: "call-1", RunId: "run-1"}}
	steps := []func() error{
		func() error { return s.Create(ctx, sess) },
		func() error {
			return s.SaveTranscript(ctx, "s-1", []*modelv1.Message{{Role: modelv1.Role_ROLE_USER, Content: []*modelv1.ContentBlock{{Block: &modelv1.ContentBlock_Text{Text: &modelv1.TextBlock{Text: "add a room"}}}}}})
		},
		func() error {
			return s.SaveRun(ctx, &orchestratorv1.RunState{RunId: "run-1", SessionId: "s-1", Turns: 2})
		},
		func() error {
			return s.Append(ctx, "run-1", &agentv1.StreamChunk{Seq: 1, RunId: "run-1", Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: "looking"}}})
		},
		func() error { return s.Acquire(ctx, lease, time.Hour) },
		func() error { return s.Expect(ctx, "s-1", "call-1", "tok-1", time.Hour) },
		func() error { return s.Suspend(ctx, lease, time.Hour) },
		func() error { return s.Cancel(ctx, "run-2") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d before the restart: %v", i+1, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, openDB(t, dir), sqlitestate.Options{})
	got, err := s.Get(ctx, "s-1")
	if err != nil || got.GetPendingToolCall().GetToolCallId() != "call-1" {
		t.Fatalf("session after the restart = %v, %v", got, err)
	}
	if list, err := s.List(ctx, "local"); err != nil || len(list) != 1 {
		t.Fatalf("sessions listed after the restart = %v, %v", list, err)
	}
	if msgs, err := s.Transcript(ctx, "s-1"); err != nil || len(msgs) != 1 {
		t.Fatalf("transcript after the restart = %v, %v", msgs, err)
	}
	if r, err := s.GetRun(ctx, "run-1"); err != nil || r.GetTurns() != 2 {
		t.Fatalf("run after the restart = %v, %v", r, err)
	}
	if seq, finished, err := s.LastSeq(ctx, "run-1"); err != nil || seq != 1 || finished {
		t.Fatalf("event log after the restart = %d, %v, %v; want seq 1, open", seq, finished, err)
	}
	// The host's result arrives at the new process and wakes the run, which
	// is then due for the new process to claim.
	if err := s.Deliver(ctx, "s-1", "call-1", "tok-1", state.Delivery{Content: state.ResultDelivery(&hostv1.HostResult{Committed: true, Stdout: "done"})}); err != nil {
		t.Fatalf("deliver after the restart: %v", err)
	}
	if err := s.Wake(ctx, "run-1"); err != nil {
		t.Fatal(err)
	}
	due, err := s.Due(ctx, 10)
	if err != nil || len(due) != 1 || due[0].RunID != "run-1" || due[0].Owner != "" {
		t.Fatalf("due after the restart = %v, %v; want run-1 without an owner", due, err)
	}
	if err := s.Claim(ctx, state.Lease{RunID: "run-1", SessionID: "s-1", Owner: "process-2"}, time.Hour); err != nil {
		t.Fatalf("claim after the restart: %v", err)
	}
	if d, ok, err := s.Decide(ctx, "s-1", "call-1"); err != nil || !ok || d.Content.GetResult().GetStdout() != "done" {
		t.Fatalf("decide after the restart = %v, %v, %v", d, ok, err)
	}
	done, stop, err := s.Cancelled(ctx, "run-2")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	select {
	case <-done:
	default:
		t.Fatal("a cancel recorded before the restart was not seen after it")
	}
}
