package capability

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/sqlstore"
	"nexus.local/platform/sqlstore/sqlstoretest"
)

// TestDispatchReviews runs on SQLite and on PostgreSQL: the log keeps who
// approved (and edited) a script, who declined one, the preview that ran and
// rolled back, and the call the courier could not deliver, and lists them
// back as the orchestrator sent them.
func TestDispatchReviews(t *testing.T) {
	for _, kind := range sqlstoretest.Kinds() {
		t.Run(kind, func(t *testing.T) {
			db := sqlstoretest.Open(t, kind)
			reviewsOn(t, startGRPC(t, db), db)
		})
	}
}

func reviewsOn(t *testing.T, c capabilityv1.CapabilityServiceClient, db *sqlstore.DB) {
	ctx := identity.Outgoing(context.Background(), "ada@example.com")
	approvedAt, declinedAt := fixedNow.Add(-2*time.Minute+7), fixedNow.Add(-time.Minute+11)
	const (
		automation = capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION
		epilogue   = capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE
	)
	dispatches := []*capabilityv1.Dispatch{
		// The preview of call-ok ran first, then the person edited and
		// approved the script, which left with its epilogue.
		{SessionId: "rv", RunId: "run-1", ToolCallId: "call-ok.preview1", Kind: automation, Stamp: stampOf("x = 1")},
		{SessionId: "rv", RunId: "run-1", ToolCallId: "call-ok", Kind: automation, Stamp: stampOf("x = 2"),
			Reviewer: "grace@example.com", ReviewTime: timestamppb.New(approvedAt), Edited: true},
		{SessionId: "rv", RunId: "run-1", ToolCallId: "call-ok", Kind: epilogue, Stamp: stampOf("print('report')")},
		{SessionId: "rv", RunId: "run-1", ToolCallId: "call-no", Kind: automation, Stamp: stampOf("x = 3")},
		{SessionId: "rv", RunId: "run-1", ToolCallId: "call-lost", Kind: automation, Stamp: stampOf("x = 4")},
	}
	if _, err := c.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: dispatches}); err != nil {
		t.Fatal(err)
	}
	outcomes := []*capabilityv1.RecordOutcomeRequest{
		{ToolCallId: "call-ok.preview1", Outcome: capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_PREVIEWED},
		{ToolCallId: "call-ok", Outcome: capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED},
		{ToolCallId: "call-no", Outcome: capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_DECLINED, ErrorType: "Declined",
			Reviewer: "linus@example.com", ReviewTime: timestamppb.New(declinedAt)},
		{ToolCallId: "call-lost", Outcome: capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_NOT_DELIVERED, ErrorType: "HOST_UNREACHABLE"},
	}
	for _, o := range outcomes {
		o.SessionId, o.RunId = "rv", "run-1"
		if _, err := c.RecordOutcome(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	r, err := c.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: "rv", IncludeCode: true})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		call     string
		kind     capabilityv1.ScriptKind
		code     string
		reviewer string
		at       time.Time
		edited   bool
		outcome  capabilityv1.DispatchOutcome
		errType  string
	}
	want := []row{
		{"call-ok.preview1", automation, "x = 1", "", time.Time{}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_PREVIEWED, ""},
		{"call-ok", automation, "x = 2", "grace@example.com", approvedAt, true, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED, ""},
		{"call-ok", epilogue, "print('report')", "", time.Time{}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED, ""},
		{"call-no", automation, "x = 3", "linus@example.com", declinedAt, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_DECLINED, "Declined"},
		{"call-lost", automation, "x = 4", "", time.Time{}, false, capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_NOT_DELIVERED, "HOST_UNREACHABLE"},
	}
	got := r.GetDispatches()
	if len(got) != len(want) {
		t.Fatalf("want %d entries, got %v", len(want), got)
	}
	for i, w := range want {
		d := got[i]
		var at time.Time
		if d.GetReviewTime() != nil {
			at = d.GetReviewTime().AsTime()
		}
		g := row{d.GetToolCallId(), d.GetKind(), d.GetStamp().GetCode(), d.GetReviewer(), at, d.GetEdited(), d.GetOutcome(), d.GetErrorType()}
		if g != w || d.GetUser() != "ada@example.com" || !d.GetOutcomeTime().AsTime().Equal(fixedNow) {
			t.Errorf("entry %d: want %+v, got %+v (user %q, outcome time %v)", i, w, g, d.GetUser(), d.GetOutcomeTime().AsTime())
		}
	}
	t.Run("stores the outcomes by name", func(t *testing.T) {
		// Operators read the table with SQL, and older readers map names.
		rows, err := db.ListDispatches(ctx, "rv", false)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rows {
			names = append(names, r.Outcome)
		}
		if got := strings.Join(names, " "); got != "previewed committed committed declined not_delivered" {
			t.Fatalf("stored outcomes %q", got)
		}
	})
	t.Run("a repeated decline is answered the same, another reviewer is refused", func(t *testing.T) {
		if _, err := c.RecordOutcome(ctx, outcomes[2]); err != nil {
			t.Fatalf("the same decline twice is answered the same, got %v", err)
		}
		other := &capabilityv1.RecordOutcomeRequest{SessionId: "rv", RunId: "run-1", ToolCallId: "call-no",
			Outcome: outcomes[2].GetOutcome(), ErrorType: "Declined", Reviewer: "mallory@example.com", ReviewTime: outcomes[2].GetReviewTime()}
		if _, err := c.RecordOutcome(ctx, other); status.Code(err) != codes.AlreadyExists {
			t.Fatalf("want AlreadyExists, got %v", err)
		}
	})
	// A valid entry the refused requests must leave as it is: the first
	// sending of its call.
	if r, err := c.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{
		{SessionId: "rv-bad", RunId: "r", ToolCallId: "c", Kind: automation, Stamp: stampOf("x")}}}); err != nil || r.GetAttempt() != 1 {
		t.Fatalf("record the first sending: attempt %d, %v; want attempt 1", r.GetAttempt(), err)
	}
	bad := []struct {
		name     string
		dispatch *capabilityv1.Dispatch
		outcome  *capabilityv1.RecordOutcomeRequest
		want     string
	}{
		{name: "an edit without a reviewer", dispatch: &capabilityv1.Dispatch{SessionId: "rv-bad", Stamp: stampOf("x"), Edited: true},
			want: "dispatches[0].edited is set but reviewer is empty"},
		{name: "a review time without a reviewer", dispatch: &capabilityv1.Dispatch{SessionId: "rv-bad", Stamp: stampOf("x"), ReviewTime: timestamppb.New(fixedNow)},
			want: "dispatches[0].review_time is set but reviewer is empty"},
		{name: "a reviewer on an outcome other than declined", outcome: &capabilityv1.RecordOutcomeRequest{SessionId: "rv-bad", RunId: "r", ToolCallId: "c",
			Outcome: capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED, Reviewer: "grace"},
			want: "reviewer is set with outcome DISPATCH_OUTCOME_COMMITTED: only DISPATCH_OUTCOME_DECLINED carries who declined"},
		{name: "a decline time without a reviewer", outcome: &capabilityv1.RecordOutcomeRequest{SessionId: "rv-bad", RunId: "r", ToolCallId: "c",
			Outcome: capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_DECLINED, ReviewTime: timestamppb.New(fixedNow)},
			want: "review_time is set but reviewer is empty"},
		{name: "a negative attempt", outcome: &capabilityv1.RecordOutcomeRequest{SessionId: "rv-bad", RunId: "r", ToolCallId: "c",
			Outcome: capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED, Attempt: -1},
			want: "attempt is -1: it numbers sendings from 1"},
		{name: "an attempt that never left", outcome: &capabilityv1.RecordOutcomeRequest{SessionId: "rv-bad", RunId: "r", ToolCallId: "c",
			Outcome: capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED, Attempt: 2},
			want: "tool call c of run r has no attempt 2 in the audit log"},
	}
	for _, tt := range bad {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			var err error
			if tt.dispatch != nil {
				_, err = c.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{tt.dispatch}})
			} else {
				_, err = c.RecordOutcome(ctx, tt.outcome)
			}
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want InvalidArgument naming %q, got %v", tt.want, err)
			}
			r, err := c.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: "rv-bad"})
			if err != nil || len(r.GetDispatches()) != 1 || r.GetDispatches()[0].GetOutcome() != capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_UNSPECIFIED {
				t.Fatalf("a refused request must change nothing, got %v %v", r.GetDispatches(), err)
			}
		})
	}
}
