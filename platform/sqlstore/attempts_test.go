package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"nexus.local/platform/sqlstore"
	"nexus.local/platform/sqlstore/sqlstoretest"
)

// TestEachAttemptHasItsOwnOutcome sends one tool call three times, as the
// preview policy does when the host refuses an approved script because the
// document changed: twice refused (once as edited bytes), then committed.
// Each sending keeps its own outcome, its epilogue shares it, and a repeat
// or a change of the last outcome is answered as for a single sending.
func TestEachAttemptHasItsOwnOutcome(t *testing.T) {
	for _, kind := range sqlstoretest.Kinds() {
		t.Run(kind, func(t *testing.T) {
			db := sqlstoretest.Open(t, kind)
			ctx := context.Background()
			send := func(sha string, outcome, errType string) {
				t.Helper()
				if err := db.AppendDispatches(ctx, []sqlstore.Dispatch{
					{SessionID: "at", RunID: "r", ToolCallID: "c", Kind: "task_automation", SHA256: sha, Code: []byte(sha), DispatchedAt: t0},
					{SessionID: "at", RunID: "r", ToolCallID: "c", Kind: "epilogue", SHA256: "ep", Code: []byte("report"), DispatchedAt: t0},
				}); err != nil {
					t.Fatal(err)
				}
				if err := db.RecordOutcome(ctx, sqlstore.Outcome{SessionID: "at", RunID: "r", ToolCallID: "c", Outcome: outcome, ErrorType: errType, At: t0.Add(time.Second)}); err != nil {
					t.Fatal(err)
				}
			}
			send("edited", "rolled_back", "RevisionChanged")
			send("asked", "rolled_back", "RevisionChanged")
			send("asked", "committed", "")
			got, err := db.ListDispatches(ctx, "at", false)
			if err != nil {
				t.Fatal(err)
			}
			want := []struct {
				sha, outcome, errType string
				attempt               int
			}{
				{"edited", "rolled_back", "RevisionChanged", 1}, {"ep", "rolled_back", "RevisionChanged", 1},
				{"asked", "rolled_back", "RevisionChanged", 2}, {"ep", "rolled_back", "RevisionChanged", 2},
				{"asked", "committed", "", 3}, {"ep", "committed", "", 3},
			}
			if len(got) != len(want) {
				t.Fatalf("want %d rows, got %+v", len(want), got)
			}
			for i, w := range want {
				if g := got[i]; g.SHA256 != w.sha || !g.HasOutcome || g.Outcome != w.outcome || g.ErrorType != w.errType || g.Attempt != w.attempt {
					t.Errorf("row %d: want %s attempt %d %s (%s), got %s attempt %d %s (%s)", i, w.sha, w.attempt, w.outcome, w.errType,
						g.SHA256, g.Attempt, g.Outcome, g.ErrorType)
				}
			}
			if err := db.RecordOutcome(ctx, sqlstore.Outcome{SessionID: "at", RunID: "r", ToolCallID: "c", Outcome: "committed", At: t0}); err != nil {
				t.Errorf("a repeat of the last outcome: %v", err)
			}
			if err := db.RecordOutcome(ctx, sqlstore.Outcome{SessionID: "at", RunID: "r", ToolCallID: "c", Outcome: "no_result", At: t0}); !errors.Is(err, sqlstore.ErrOutcomeRecorded) {
				t.Errorf("another outcome of the last sending: want ErrOutcomeRecorded, got %v", err)
			}
		})
	}
}

// TestALateOutcomeNamesItsAttempt writes the outcome of a call's first
// sending after the call was sent again, as an outbox sweep standing in for
// another replica can: naming its attempt, it ends that sending and leaves
// the second to its own outcome; an attempt never sent is refused.
func TestALateOutcomeNamesItsAttempt(t *testing.T) {
	for _, kind := range sqlstoretest.Kinds() {
		t.Run(kind, func(t *testing.T) {
			db := sqlstoretest.Open(t, kind)
			ctx := context.Background()
			for want := 1; want <= 2; want++ {
				ds := []sqlstore.Dispatch{
					{SessionID: "late", RunID: "r", ToolCallID: "c", Kind: "task_automation", SHA256: "s", Code: []byte("s"), DispatchedAt: t0},
					{SessionID: "late", RunID: "r", ToolCallID: "c", Kind: "epilogue", SHA256: "ep", Code: []byte("report"), DispatchedAt: t0},
				}
				if err := db.AppendDispatches(ctx, ds); err != nil {
					t.Fatal(err)
				}
				if ds[0].Attempt != want || ds[1].Attempt != want {
					t.Fatalf("sending %d: the rows were given attempts %d and %d", want, ds[0].Attempt, ds[1].Attempt)
				}
			}
			late := sqlstore.Outcome{SessionID: "late", RunID: "r", ToolCallID: "c", Attempt: 1, Outcome: "rolled_back", ErrorType: "RevisionChanged", At: t0}
			if err := db.RecordOutcome(ctx, late); err != nil {
				t.Fatal(err)
			}
			if err := db.RecordOutcome(ctx, late); err != nil {
				t.Errorf("the same late outcome again: %v", err)
			}
			never := sqlstore.Outcome{SessionID: "late", RunID: "r", ToolCallID: "c", Attempt: 3, Outcome: "committed", At: t0}
			if err := db.RecordOutcome(ctx, never); !errors.Is(err, sqlstore.ErrNoSuchAttempt) {
				t.Errorf("an outcome of attempt 3 of 2: want ErrNoSuchAttempt, got %v", err)
			}
			got, err := db.ListDispatches(ctx, "late", false)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 4 {
				t.Fatalf("the log lists %d rows, want the 2 sendings' script and epilogue", len(got))
			}
			for _, g := range got {
				ended := g.HasOutcome && g.Outcome == "rolled_back" && g.ErrorType == "RevisionChanged"
				if (g.Attempt == 1) != ended || (g.Attempt == 2 && g.HasOutcome) {
					t.Errorf("attempt %d (%s): outcome %q (%q), has outcome %v", g.Attempt, g.SHA256, g.Outcome, g.ErrorType, g.HasOutcome)
				}
			}
		})
	}
}
