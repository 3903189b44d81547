package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"nexus.local/platform/sqlstore"
	"nexus.local/platform/sqlstore/sqlstoretest"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// TestConformance runs the same suite on SQLite and on the PostgreSQL server
// at 127.0.0.1:5432, each in a database of its own.
func TestConformance(t *testing.T) {
	for _, kind := range sqlstoretest.Kinds() {
		t.Run(kind, func(t *testing.T) {
			cfg := sqlstoretest.Config(t, kind)
			db, err := sqlstore.Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			t.Run("audit log", func(t *testing.T) { auditLog(t, db) })
			t.Run("audit log keeps reviews", func(t *testing.T) { auditReviews(t, db) })
			t.Run("run history", func(t *testing.T) { runHistory(t, db) })
			t.Run("pages", func(t *testing.T) { pages(t, db) })
			t.Run("retention", func(t *testing.T) { retention(t, db) })
			t.Run("concurrent writers lose nothing", func(t *testing.T) { concurrent(t, db) })
			t.Run("survives reopening", func(t *testing.T) { reopen(t, db, cfg) })
		})
	}
}

func auditLog(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	// Bytes a text column would mangle: a NUL, invalid UTF-8, CRLF.
	script := []byte("import FreeCAD\r\nx = '\x00\xff'\n")
	ds := []sqlstore.Dispatch{
		{SessionID: "a1", RunID: "r1", ToolCallID: "c1", Kind: "task_automation", User: "ada", HostApp: "freecad",
			CapabilityVersion: "1", SHA256: "h1", Code: script, DispatchedAt: t0},
		{SessionID: "a1", RunID: "r1", ToolCallID: "c1", Kind: "epilogue", User: "ada", HostApp: "freecad",
			CapabilityVersion: "1", SHA256: "h2", Code: []byte("print('report')"), DispatchedAt: t0},
	}
	if err := db.AppendDispatches(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendDispatches(ctx, []sqlstore.Dispatch{{SessionID: "a2", RunID: "r2", ToolCallID: "c9", Kind: "data_collection",
		SHA256: "h3", Code: []byte("1"), DispatchedAt: t0.Add(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.ListDispatches(ctx, "a1", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kind != "task_automation" || got[1].Kind != "epilogue" || got[0].ID >= got[1].ID {
		t.Fatalf("want the two dispatches of a1 in order, got %+v", got)
	}
	if got[0].Code != nil || got[0].HasOutcome || !got[0].DispatchedAt.Equal(t0) || got[0].User != "ada" || got[0].SHA256 != "h1" ||
		got[0].Reviewer != "" || !got[0].ReviewedAt.IsZero() || got[0].Edited {
		t.Fatalf("without code and outcome, want the row as written, got %+v", got[0])
	}
	if err := db.RecordOutcome(ctx, sqlstore.Outcome{SessionID: "a1", RunID: "r1", ToolCallID: "c1", Outcome: "rolled_back", ErrorType: "NameError", At: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got, err = db.ListDispatches(ctx, "a1", true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[0].Code, script) || string(got[1].Code) != "print('report')" {
		t.Fatalf("want the exact bytes back, got %q and %q", got[0].Code, got[1].Code)
	}
	for _, d := range got {
		if !d.HasOutcome || d.Outcome != "rolled_back" || d.ErrorType != "NameError" || !d.OutcomeAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("want the outcome on both rows of the call, got %+v", d)
		}
	}
	t.Run("same outcome twice is answered the same", func(t *testing.T) {
		err := db.RecordOutcome(ctx, sqlstore.Outcome{SessionID: "a1", RunID: "r1", ToolCallID: "c1", Outcome: "rolled_back", ErrorType: "NameError", At: t0})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a different outcome is refused and changes nothing", func(t *testing.T) {
		err := db.RecordOutcome(ctx, sqlstore.Outcome{SessionID: "a1", RunID: "r1", ToolCallID: "c1", Outcome: "committed", At: t0})
		if !errors.Is(err, sqlstore.ErrOutcomeRecorded) {
			t.Fatalf("want ErrOutcomeRecorded, got %v", err)
		}
		got, _ := db.ListDispatches(ctx, "a1", false)
		if got[0].Outcome != "rolled_back" {
			t.Fatalf("outcome changed to %s", got[0].Outcome)
		}
	})
	if got, _ := db.ListDispatches(ctx, "nobody", false); len(got) != 0 {
		t.Fatalf("want no rows for an unknown session, got %d", len(got))
	}
}

// auditReviews writes a script a person edited and approved, a call a person
// declined, and calls that ended without review, and reads each back as
// written: the review on the dispatch row, the decline on the outcome.
func auditReviews(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	approvedAt, declinedAt := t0.Add(2*time.Second+7), t0.Add(3*time.Second+11)
	if err := db.AppendDispatches(ctx, []sqlstore.Dispatch{
		{SessionID: "rv", RunID: "r1", ToolCallID: "approved", Kind: "task_automation", User: "ada", SHA256: "e1",
			Code: []byte("edited"), DispatchedAt: t0, Reviewer: "grace", ReviewedAt: approvedAt, Edited: true},
		{SessionID: "rv", RunID: "r1", ToolCallID: "approved", Kind: "epilogue", User: "ada", SHA256: "e2", DispatchedAt: t0},
		{SessionID: "rv", RunID: "r1", ToolCallID: "declined", Kind: "task_automation", User: "ada", SHA256: "e3", DispatchedAt: t0},
		{SessionID: "rv", RunID: "r1", ToolCallID: "declined.preview1", Kind: "task_automation", User: "ada", SHA256: "e4", DispatchedAt: t0},
		{SessionID: "rv", RunID: "r1", ToolCallID: "lost", Kind: "task_automation", User: "ada", SHA256: "e5", DispatchedAt: t0},
	}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []sqlstore.Outcome{
		{SessionID: "rv", RunID: "r1", ToolCallID: "approved", Outcome: "committed", At: t0.Add(time.Minute)},
		{SessionID: "rv", RunID: "r1", ToolCallID: "declined", Outcome: "declined", ErrorType: "Declined", At: t0.Add(time.Minute),
			Reviewer: "linus", ReviewedAt: declinedAt},
		{SessionID: "rv", RunID: "r1", ToolCallID: "declined.preview1", Outcome: "previewed", At: t0.Add(time.Minute)},
		{SessionID: "rv", RunID: "r1", ToolCallID: "lost", Outcome: "not_delivered", ErrorType: "HOST_UNREACHABLE", At: t0.Add(time.Minute)},
	} {
		if err := db.RecordOutcome(ctx, o); err != nil {
			t.Fatal(err)
		}
		if err := db.RecordOutcome(ctx, o); err != nil {
			t.Fatalf("the same outcome of %s twice is answered the same, got %v", o.ToolCallID, err)
		}
	}
	got, err := db.ListDispatches(ctx, "rv", false)
	if err != nil {
		t.Fatal(err)
	}
	type review struct {
		call, reviewer   string
		at               time.Time
		edited           bool
		outcome, errType string
		outReviewer      string
		outAt            time.Time
	}
	want := []review{
		{"approved", "grace", approvedAt, true, "committed", "", "", time.Time{}},
		{"approved", "", time.Time{}, false, "committed", "", "", time.Time{}},
		{"declined", "", time.Time{}, false, "declined", "Declined", "linus", declinedAt},
		{"declined.preview1", "", time.Time{}, false, "previewed", "", "", time.Time{}},
		{"lost", "", time.Time{}, false, "not_delivered", "HOST_UNREACHABLE", "", time.Time{}},
	}
	if len(got) != len(want) {
		t.Fatalf("want %d rows, got %+v", len(want), got)
	}
	for i, w := range want {
		d := got[i]
		g := review{d.ToolCallID, d.Reviewer, d.ReviewedAt, d.Edited, d.Outcome, d.ErrorType, d.OutcomeReviewer, d.OutcomeReviewedAt}
		if !d.HasOutcome || g.call != w.call || g.reviewer != w.reviewer || !g.at.Equal(w.at) || g.edited != w.edited ||
			g.outcome != w.outcome || g.errType != w.errType || g.outReviewer != w.outReviewer || !g.outAt.Equal(w.outAt) {
			t.Errorf("row %d: want %+v, got %+v", i, w, g)
		}
	}
	t.Run("a decline by someone else is a different outcome", func(t *testing.T) {
		err := db.RecordOutcome(ctx, sqlstore.Outcome{SessionID: "rv", RunID: "r1", ToolCallID: "declined", Outcome: "declined", ErrorType: "Declined",
			At: t0, Reviewer: "mallory", ReviewedAt: declinedAt})
		if !errors.Is(err, sqlstore.ErrOutcomeRecorded) {
			t.Fatalf("want ErrOutcomeRecorded, got %v", err)
		}
	})
}

// TestAuditUpgrade writes audit rows into a database as the first schema
// left it, upgrades it as Open does, and reads them back as unreviewed.
func TestAuditUpgrade(t *testing.T) {
	for _, kind := range sqlstoretest.Kinds() {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			cfg := sqlstoretest.Config(t, kind)
			old, err := sqlstore.OpenAtVersion(ctx, cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			// The test is only worth something if the review columns are not
			// there yet.
			if _, err := old.SQL().ExecContext(ctx, `SELECT reviewer FROM audit_dispatches`); err == nil {
				t.Fatal("the schema at version 1 already has the review columns")
			}
			_, err = old.SQL().ExecContext(ctx, `INSERT INTO audit_dispatches
				(session_id, run_id, tool_call_id, kind, user_id, host_app, capability_version, sha256, code, dispatched_at)
				VALUES ('up', 'r', 'c', 'task_automation', 'ada', 'freecad', '1', 'h', $1, $2)`, []byte("old"), t0.UnixNano())
			if err == nil {
				_, err = old.SQL().ExecContext(ctx, `INSERT INTO audit_outcomes (run_id, tool_call_id, session_id, outcome, error_type, recorded_at)
					VALUES ('r', 'c', 'up', 'committed', '', $1)`, t0.UnixNano())
			}
			if err := errors.Join(err, old.Close()); err != nil {
				t.Fatal(err)
			}
			db, err := sqlstore.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			got, err := db.ListDispatches(ctx, "up", true)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || string(got[0].Code) != "old" || got[0].User != "ada" || !got[0].DispatchedAt.Equal(t0) ||
				got[0].Reviewer != "" || !got[0].ReviewedAt.IsZero() || got[0].Edited ||
				!got[0].HasOutcome || got[0].Outcome != "committed" || got[0].OutcomeReviewer != "" || !got[0].OutcomeReviewedAt.IsZero() {
				t.Fatalf("want the old row as written and unreviewed, got %+v", got)
			}
			// The upgraded schema takes reviews beside the old rows.
			if err := db.AppendDispatches(ctx, []sqlstore.Dispatch{{SessionID: "up", RunID: "r", ToolCallID: "c2", Kind: "task_automation",
				SHA256: "h2", DispatchedAt: t0, Reviewer: "grace", ReviewedAt: t0, Edited: true}}); err != nil {
				t.Fatal(err)
			}
			if got, err := db.ListDispatches(ctx, "up", false); err != nil || len(got) != 2 || got[1].Reviewer != "grace" || !got[1].Edited {
				t.Fatalf("want the new reviewed row after the old one, got %+v %v", got, err)
			}
		})
	}
}

// pages reads a log of 7 entries in pages of 3, and in pages bounded by the
// bytes of code they hold.
func pages(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	var ds []sqlstore.Dispatch
	for i := range 7 {
		ds = append(ds, sqlstore.Dispatch{SessionID: "pg", RunID: "r", ToolCallID: fmt.Sprint(i), Kind: "task_automation", SHA256: "x",
			Code: bytes.Repeat([]byte{'a'}, 100), DispatchedAt: t0})
	}
	if err := db.AppendDispatches(ctx, ds); err != nil {
		t.Fatal(err)
	}
	read := func(p sqlstore.Page, withCode bool) []string {
		var got []string
		for {
			page, more, err := db.ListDispatchPage(ctx, "pg", withCode, p)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, d := range page {
				ids = append(ids, d.ToolCallID)
				p.AfterID = d.ID
			}
			got = append(got, strings.Join(ids, ""))
			if !more {
				return got
			}
		}
	}
	tests := []struct {
		name     string
		page     sqlstore.Page
		withCode bool
		want     string
	}{
		{"by count", sqlstore.Page{Limit: 3}, false, "012 345 6"},
		{"exact fit", sqlstore.Page{Limit: 7}, false, "0123456"},
		{"by code bytes", sqlstore.Page{Limit: 100, MaxCodeBytes: 250}, true, "01 23 45 6"},
		{"one entry larger than the bound", sqlstore.Page{MaxCodeBytes: 10}, true, "0 1 2 3 4 5 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(read(tt.page, tt.withCode), " "); got != tt.want {
				t.Fatalf("want pages %q, got %q", tt.want, got)
			}
		})
	}
}

func runHistory(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	for i, id := range []string{"h_r1", "h_r2"} {
		if err := db.StartRun(ctx, sqlstore.Run{RunID: id, SessionID: "h1", Owner: "ada", HostApp: "freecad",
			Prompt: fmt.Sprintf("prompt %d", i), Models: []string{"replay/demo"}, StartedAt: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.StartRun(ctx, sqlstore.Run{RunID: "h_r1", SessionID: "h1", StartedAt: t0}); err == nil || !strings.Contains(err.Error(), "record run h_r1 in ") {
		t.Fatalf("a run id used twice must be refused naming the run and the database, got %v", err)
	}
	for _, c := range []sqlstore.ToolCall{
		{RunID: "h_r1", ToolCallID: "c1", SessionID: "h1", ToolName: "execute_task_automation", Outcome: "rolled_back", ErrorType: "NameError", At: t0},
		{RunID: "h_r1", ToolCallID: "c2", SessionID: "h1", ToolName: "execute_task_automation", Outcome: "committed", At: t0},
		{RunID: "h_r1", ToolCallID: "c3", SessionID: "h1", ToolName: "capture_view", Outcome: "committed", At: t0},
		{RunID: "h_r1", ToolCallID: "c3", SessionID: "h1", ToolName: "capture_view", Outcome: "no_result", At: t0},
	} {
		if err := db.RecordToolCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	u := sqlstore.Usage{InputTokens: 1200, OutputTokens: 340, CacheReadTokens: 50, CacheWriteTokens: 7, ReasoningTokens: 3, CostUSD: 0.0123}
	if err := db.FinishRun(ctx, sqlstore.Run{RunID: "h_r1", Models: []string{"replay/demo"}, Outcome: "completed", Turns: 4, Usage: u, EndedAt: t0.Add(30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	runs, err := db.ListRuns(ctx, "h1")
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].RunID != "h_r1" || runs[1].RunID != "h_r2" {
		t.Fatalf("want both runs oldest first, got %+v", runs)
	}
	r := runs[0]
	if r.Prompt != "prompt 0" || r.Outcome != "completed" || r.Turns != 4 || r.Usage != u || !r.EndedAt.Equal(t0.Add(30*time.Second)) ||
		len(r.Models) != 1 || r.Models[0] != "replay/demo" || r.Owner != "ada" {
		t.Fatalf("run 1 as written, got %+v", r)
	}
	if r.ToolCalls["rolled_back"] != 1 || r.ToolCalls["committed"] != 2 || len(r.ToolCalls) != 2 {
		t.Fatalf("want 1 rolled back and 2 committed (the repeat keeps its first outcome), got %v", r.ToolCalls)
	}
	if runs[1].Outcome != sqlstore.OutcomeRunning || !runs[1].EndedAt.IsZero() {
		t.Fatalf("an unfinished run is running, got %+v", runs[1])
	}
	if owner, found, err := db.SessionOwner(ctx, "h1"); err != nil || !found || owner != "ada" {
		t.Fatalf("want owner ada, got %q %v %v", owner, found, err)
	}
	if _, found, err := db.SessionOwner(ctx, "nobody"); err != nil || found {
		t.Fatalf("want no owner for an unknown session, got %v %v", found, err)
	}
	ids, err := db.RunIDs(ctx, "h1")
	if err != nil || len(ids) != 2 {
		t.Fatalf("want 2 run ids, got %v %v", ids, err)
	}
	t.Run("deleting a session's history leaves its audit rows", func(t *testing.T) {
		if err := db.AppendDispatches(ctx, []sqlstore.Dispatch{{SessionID: "h1", RunID: "h_r1", ToolCallID: "c1", Kind: "task_automation", SHA256: "x", DispatchedAt: t0}}); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteHistory(ctx, "h1"); err != nil {
			t.Fatal(err)
		}
		if has, err := db.HasHistory(ctx, "h1"); err != nil || has {
			t.Fatalf("want no history row left, got %v %v", has, err)
		}
		if got, _ := db.ListDispatches(ctx, "h1", false); len(got) != 1 {
			t.Fatalf("the audit row follows its own retention, got %d rows", len(got))
		}
	})
}

func retention(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	old, recent := t0.Add(-48*time.Hour), t0
	if err := db.AppendDispatches(ctx, []sqlstore.Dispatch{
		{SessionID: "ret", RunID: "ret_r1", ToolCallID: "c1", Kind: "task_automation", SHA256: "x", DispatchedAt: old},
		{SessionID: "ret", RunID: "ret_r2", ToolCallID: "c1", Kind: "task_automation", SHA256: "y", DispatchedAt: recent},
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordOutcome(ctx, sqlstore.Outcome{SessionID: "ret", RunID: "ret_r1", ToolCallID: "c1", Outcome: "committed", At: old}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []sqlstore.Run{{RunID: "ret_r1", SessionID: "ret", StartedAt: old}, {RunID: "ret_r2", SessionID: "ret", StartedAt: recent}} {
		if err := db.StartRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.RecordToolCall(ctx, sqlstore.ToolCall{RunID: "ret_r1", ToolCallID: "c1", SessionID: "ret", Outcome: "committed", At: old}); err != nil {
		t.Fatal(err)
	}
	cut := t0.Add(-24 * time.Hour)
	if n, err := db.ExpireHistory(ctx, cut); err != nil || n < 1 {
		t.Fatalf("want the old run expired, got %d %v", n, err)
	}
	if n, err := db.ExpireAudit(ctx, cut); err != nil || n < 1 {
		t.Fatalf("want the old dispatch expired, got %d %v", n, err)
	}
	runs, _ := db.ListRuns(ctx, "ret")
	if len(runs) != 1 || runs[0].RunID != "ret_r2" || len(runs[0].ToolCalls) != 0 {
		t.Fatalf("want only the recent run, got %+v", runs)
	}
	ds, _ := db.ListDispatches(ctx, "ret", false)
	if len(ds) != 1 || ds[0].RunID != "ret_r2" {
		t.Fatalf("want only the recent dispatch, got %+v", ds)
	}
}

// concurrent writes 200 runs at once, each with its audit rows, an outcome
// and its history, and counts every row.
func concurrent(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			sid, rid := fmt.Sprintf("cc_%03d", i), fmt.Sprintf("cc_r%03d", i)
			err := errors.Join(
				db.StartRun(ctx, sqlstore.Run{RunID: rid, SessionID: sid, StartedAt: t0}),
				db.AppendDispatches(ctx, []sqlstore.Dispatch{
					{SessionID: sid, RunID: rid, ToolCallID: "c1", Kind: "task_automation", SHA256: "a", Code: []byte(sid), DispatchedAt: t0},
					{SessionID: sid, RunID: rid, ToolCallID: "c1", Kind: "epilogue", SHA256: "b", Code: []byte("e"), DispatchedAt: t0},
				}),
				db.RecordOutcome(ctx, sqlstore.Outcome{SessionID: sid, RunID: rid, ToolCallID: "c1", Outcome: "committed", At: t0}),
				db.RecordToolCall(ctx, sqlstore.ToolCall{SessionID: sid, RunID: rid, ToolCallID: "c1", Outcome: "committed", At: t0}),
				db.FinishRun(ctx, sqlstore.Run{RunID: rid, Outcome: "completed", EndedAt: t0}),
			)
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got, err := db.CountDispatches(ctx, "cc_"); err != nil || got != 2*n {
		t.Fatalf("want %d audit rows, got %d %v", 2*n, got, err)
	}
	if total, ended, err := db.CountRuns(ctx, "cc_"); err != nil || total != n || ended != n {
		t.Fatalf("want %d runs all ended, got %d (%d ended) %v", n, total, ended, err)
	}
}

func reopen(t *testing.T, db *sqlstore.DB, cfg sqlstore.Config) {
	ctx := context.Background()
	if err := db.AppendDispatches(ctx, []sqlstore.Dispatch{{SessionID: "keep", RunID: "r", ToolCallID: "c", Kind: "task_automation", SHA256: "z", Code: []byte("kept"), DispatchedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	// Two handles opening at once (two replicas starting together) both
	// find the schema current.
	var wg sync.WaitGroup
	dbs := make([]*sqlstore.DB, 2)
	errs := make([]error, 2)
	for i := range dbs {
		wg.Go(func() { dbs[i], errs[i] = sqlstore.Open(ctx, cfg) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		defer dbs[i].Close()
		got, err := dbs[i].ListDispatches(ctx, "keep", true)
		if err != nil || len(got) != 1 || string(got[0].Code) != "kept" {
			t.Fatalf("want the row written before, got %+v %v", got, err)
		}
	}
}

// TestDataFolderWithOddCharacters keeps the SQLite file in a folder whose
// name a URI would misread unless it is escaped.
func TestDataFolderWithOddCharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my data #1 ?x=y %20")
	db, err := sqlstore.Open(context.Background(), sqlstore.Config{DataDir: dir, MaxConns: 1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Path() != filepath.Join(dir, sqlstore.FileName) {
		t.Fatalf("want the file in %s, got %s", dir, db.Path())
	}
	if _, err := os.Stat(db.Path()); err != nil {
		t.Fatalf("the file is not where it says: %v", err)
	}
}

func TestConfigRefusesBadSettings(t *testing.T) {
	tests := []struct {
		name string
		cfg  sqlstore.Config
		want string
	}{
		{"scheme", sqlstore.Config{DatabaseURL: "mysql://x/y", MaxConns: 1, Timeout: time.Second}, "NEXUS_DATABASE_URL must be a postgres:// URL"},
		{"conns", sqlstore.Config{MaxConns: 0, Timeout: time.Second}, "NEXUS_DATABASE_MAX_CONNS must be at least 1"},
		{"timeout", sqlstore.Config{MaxConns: 1, Timeout: -time.Second}, "NEXUS_DATABASE_TIMEOUT must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want an error naming %q, got %v", tt.want, err)
			}
		})
	}
}

// TestStoppedDatabaseIsNamed stops a private PostgreSQL server under an open
// store: writes fail with an error that names the database.
func TestStoppedDatabaseIsNamed(t *testing.T) {
	srv := sqlstoretest.StartServer(t)
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, sqlstore.Config{DatabaseURL: srv.URL, MaxConns: 2, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	err = db.AppendDispatches(ctx, []sqlstore.Dispatch{{SessionID: "s", RunID: "r", ToolCallID: "c", Kind: "task_automation", SHA256: "x", DispatchedAt: t0}})
	if err == nil || !strings.Contains(err.Error(), "write the audit log in PostgreSQL database \"postgres\" at 127.0.0.1:") {
		t.Fatalf("want an error naming the database, got %v", err)
	}
}

// BenchmarkAppendDispatches measures writing one dispatch's two audit rows
// (a 4 KiB script and its epilogue) from parallel writers, as concurrent
// runs do.
func BenchmarkAppendDispatches(b *testing.B) {
	for _, kind := range sqlstoretest.Kinds() {
		b.Run(kind, func(b *testing.B) {
			db := sqlstoretest.Open(b, kind)
			ctx := context.Background()
			script, epilogue := bytes.Repeat([]byte("x = 1\n"), 700), bytes.Repeat([]byte("print(1)\n"), 700)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					err := db.AppendDispatches(ctx, []sqlstore.Dispatch{
						{SessionID: "bench", RunID: "r", ToolCallID: "c", Kind: "task_automation", SHA256: "a", Code: script, DispatchedAt: t0},
						{SessionID: "bench", RunID: "r", ToolCallID: "c", Kind: "epilogue", SHA256: "b", Code: epilogue, DispatchedAt: t0},
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
