package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"nexus.local/platform/sqlstore"
	"nexus.local/platform/sqlstore/sqlstoretest"
)

// TestServerClosedConnectionsAreReplaced ends every pooled connection with
// pg_terminate_backend, as an operator or a failover does, right before each
// kind of statement: each one succeeds on a fresh connection instead of
// failing with the server's "terminating connection" (57P01).
func TestServerClosedConnectionsAreReplaced(t *testing.T) {
	ctx := context.Background()
	cfg := sqlstoretest.Config(t, "postgres")
	db, err := sqlstore.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dispatch := func(call string) []sqlstore.Dispatch {
		return []sqlstore.Dispatch{{SessionID: "pg", RunID: "r1", ToolCallID: call, Kind: "task_automation", User: "ada",
			SHA256: "h-" + call, Code: []byte("x = 1"), DispatchedAt: t0}}
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"append dispatches", func() error { return db.AppendDispatches(ctx, dispatch("c1")) }},
		{"record an outcome", func() error {
			return db.RecordOutcome(ctx, sqlstore.Outcome{SessionID: "pg", RunID: "r1", ToolCallID: "c1", Outcome: "committed", At: t0})
		}},
		{"list dispatches", func() error {
			got, err := db.ListDispatches(ctx, "pg", true)
			if err == nil && (len(got) != 1 || got[0].Outcome != "committed") {
				t.Errorf("want the one committed dispatch, got %+v", got)
			}
			return err
		}},
		{"start a run", func() error {
			return db.StartRun(ctx, sqlstore.Run{RunID: "r1", SessionID: "pg", Owner: "ada", HostApp: "freecad", Prompt: "p", StartedAt: t0})
		}},
		{"record a tool call", func() error {
			return db.RecordToolCall(ctx, sqlstore.ToolCall{SessionID: "pg", RunID: "r1", ToolCallID: "c1", ToolName: "t", Outcome: "committed", At: t0})
		}},
		{"finish a run", func() error {
			return db.FinishRun(ctx, sqlstore.Run{RunID: "r1", SessionID: "pg", Outcome: "completed", EndedAt: t0.Add(time.Second)})
		}},
		{"list runs", func() error {
			got, err := db.ListRuns(ctx, "pg")
			if err == nil && (len(got) != 1 || got[0].Outcome != "completed") {
				t.Errorf("want the one completed run, got %+v", got)
			}
			return err
		}},
	}
	for _, s := range steps {
		// Several connections in the pool, all used a moment ago, so the
		// driver's own liveness check of idle connections does not run.
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := db.HasHistory(ctx, "pg"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := sqlstoretest.TerminateBackends(t, cfg.DatabaseURL); n == 0 {
			t.Fatal("no backend to terminate: the pool holds no connection")
		}
		if err := s.do(); err != nil {
			t.Errorf("%s after the server closed the pooled connections: %v", s.name, err)
		}
	}
}
