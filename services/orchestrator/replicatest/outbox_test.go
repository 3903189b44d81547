package replicatest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/sqlstore"
	"nexus.local/platform/sqlstore/sqlstoretest"
)

// TestKillAfterResultAccepted kills the replica that took a tool result
// while the outcome of the call is in the store's outbox only: the test
// holds the run history's tool call table locked, so no replica can write
// the outcome there yet, and kills the replica once the outbox holds it.
// The run goes on regardless (the outbox is off its path) and completes on
// another replica; once the table is free, a surviving replica's sweep
// writes the outcome, which the audit log and the history then hold
// exactly once each.
func TestKillAfterResultAccepted(t *testing.T) {
	const lease = 3 * time.Second
	dbURL := sqlstoretest.Postgres(t)
	m := startMeshOpts(t, meshOptions{allEnv: []string{"NEXUS_DATABASE_URL=" + dbURL}, orchEnv: []string{"NEXUS_RUN_LEASE=" + lease.String()}})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sid, err := m.createSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := redis.ParseURL(m.redis.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	lock, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(context.Background())

	f := newFollower(m, sid)
	var killedCall *agentv1.ToolCall
	killed := -1
	var answered sync.WaitGroup
	var once sync.Once
	onCall := func(tc *agentv1.ToolCall) bool {
		first := false
		once.Do(func() { first = true })
		// Read here, on the stream's goroutine, which writes it with every
		// event.
		runID := f.runID
		answered.Go(func() {
			if !first {
				if err := m.answer(ctx, &run{sessionID: sid, runID: runID}, tc); err != nil {
					t.Error(err)
				}
				return
			}
			if err := f.killAfterAccept(ctx, t, lock, rdb, runID, tc, &killed); err != nil {
				t.Error(err)
				return
			}
			killedCall = tc
		})
		return true
	}
	if err := f.start(ctx, onCall); err != nil {
		t.Logf("first stream: %v", err)
	}
	err = f.rejoin(ctx, onCall)
	answered.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if killedCall == nil {
		t.Fatal("no replica was killed after a result was accepted")
	}
	switch {
	case len(f.problems) > 0:
		t.Fatalf("the client saw: %v", f.problems)
	case f.complete == nil:
		t.Fatalf("run %s ended without complete (error %v)", f.runID, f.errChunk)
	}
	for id, n := range f.calls {
		if n != 1 {
			t.Errorf("the courier saw tool call %s %d times", id, n)
		}
	}

	db, err := sqlstore.Open(ctx, sqlstore.Config{DatabaseURL: dbURL, MaxConns: 2, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	callID := killedCall.GetToolCallId()
	// A surviving replica's sweep writes the outcome once the record is
	// past its grace; wait for it, then for the outbox to be empty.
	var audit []sqlstore.Dispatch
	var history []string
	for {
		all, err := db.ListDispatches(ctx, sid, false)
		if err != nil {
			t.Fatal(err)
		}
		audit = audit[:0]
		for _, d := range all {
			if d.ToolCallID == callID {
				audit = append(audit, d)
			}
		}
		history = toolCallOutcomes(ctx, t, lock, f.runID, callID)
		left, err := rdb.LLen(ctx, "nexus:obl:{"+sid+"}").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(audit) == 1 && audit[0].HasOutcome && len(history) == 1 && left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the outcome of %s never arrived: audit %+v, history %v, %d records in the outbox", callID, audit, history, left)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if audit[0].Outcome != "read_only" || history[0] != "read_only" {
		t.Errorf("outcome of %s: audit %q, history %q; want read_only in both", callID, audit[0].Outcome, history[0])
	}
	runs, err := db.ListRuns(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Outcome != "completed" {
		t.Errorf("the history's runs of %s = %+v, want one completed run", sid, runs)
	}
	t.Logf("killed %s after it accepted the result of %s; the run completed elsewhere and the outcome was written once", m.replicas[killed], callID)
}

// killAfterAccept answers tc while the history's tool call table is locked,
// waits until the outcome is in the session's outbox, kills the replica
// working on the run and frees the table.
func (f *follower) killAfterAccept(ctx context.Context, t *testing.T, lock *pgx.Conn, rdb *redis.Client, runID string, tc *agentv1.ToolCall, killed *int) error {
	tx, err := lock.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, "LOCK TABLE run_tool_calls IN ACCESS EXCLUSIVE MODE"); err != nil {
		return fmt.Errorf("lock the history's tool calls: %w", err)
	}
	if err := f.m.answer(ctx, &run{sessionID: f.sessionID, runID: runID}, tc); err != nil {
		return err
	}
	for {
		n, err := rdb.LLen(ctx, "nexus:obl:{"+f.sessionID+"}").Result()
		if err != nil {
			return err
		}
		if n > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the outcome of %s never reached the outbox: %w", tc.GetToolCallId(), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	i := f.m.replicaHolding(ctx, t, runID)
	f.m.orchs[i].Kill()
	*killed = i
	t.Logf("killed %s while the outcome of %s was in the outbox only", f.m.replicas[i], tc.GetToolCallId())
	return tx.Rollback(ctx)
}

// toolCallOutcomes reads the history's rows of one tool call.
func toolCallOutcomes(ctx context.Context, t *testing.T, conn *pgx.Conn, runID, callID string) []string {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT outcome FROM run_tool_calls WHERE run_id = $1 AND tool_call_id = $2", runID, callID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
