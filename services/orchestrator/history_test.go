package orchestrator_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/sqlstore"
	"nexus.local/platform/sqlstore/sqlstoretest"
	ot "nexus.local/services/orchestrator/orchestratortest"
	"nexus.local/services/orchestrator/state/statetest"
)

// TestRunHistoryAuditAndDelete drives a run whose first automation rolls back
// and whose fix commits, then reads its history and audit log and deletes the
// session, on SQLite and on PostgreSQL.
func TestRunHistoryAuditAndDelete(t *testing.T) {
	for _, kind := range sqlstoretest.Kinds() {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ot.As(context.Background(), "ada"), testTimeout)
			defer cancel()
			dbCfg := sqlstoretest.Config(t, kind)
			env := withEnv(map[string]string{"NEXUS_DATA_DIR": dbCfg.DataDir, "NEXUS_DATABASE_URL": dbCfg.DatabaseURL})
			vendor := ot.NewAnthropic(t,
				ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_01", "execute_data_collection", map[string]any{"code": "print(1)", "description": "Look"})}},
				ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_02", "execute_task_automation", map[string]any{"description": "Add a box", "code": boxScript})}},
				ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_03", "execute_task_automation", map[string]any{"description": "Fix", "edits": []map[string]any{{"start_line": 5, "end_line": 5, "new_text": fixedLine}}})}},
				ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}, InputTokens: 10, OutputTokens: 5},
			)
			stack := ot.Start(t, vendor.URL, env)
			sess := newSession(ctx, t, stack.Client)
			sent := map[string]*agentv1.ToolCall{}
			_, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Add a 10 x 20 box"},
				func(tc *agentv1.ToolCall) *hostv1.HostResult {
					sent[tc.GetToolCallId()] = tc
					switch tc.GetToolCallId() {
					case "toolu_01":
						return &hostv1.HostResult{Stdout: "1\n"}
					case "toolu_02":
						return &hostv1.HostResult{Error: &hostv1.ExecError{Type: "AttributeError", Message: "no Widht", Line: 5}}
					}
					return &hostv1.HostResult{Committed: true, Epilogue: &hostv1.EpilogueResult{Stdout: "report", ContentHash: tc.GetEpilogueStamp().GetContentHash()}}
				})
			if err != nil {
				t.Fatal(err)
			}

			t.Run("the history names the prompt, model, outcome, usage and tool calls", func(t *testing.T) {
				runs, err := stack.Client.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: sess.GetSessionId()})
				if err != nil {
					t.Fatal(err)
				}
				if len(runs.GetRuns()) != 1 {
					t.Fatalf("want 1 run, got %v", runs)
				}
				r := runs.GetRuns()[0]
				if r.GetPrompt() != "Add a 10 x 20 box" || r.GetOutcome() != "completed" || r.GetTurns() != 4 || len(r.GetModels()) != 1 ||
					r.GetModels()[0] != ot.Model || r.GetUsage().GetInputTokens() == 0 || r.GetEndTime() == nil || r.GetHostApp() != "freecad" {
					t.Fatalf("run record %v", r)
				}
				want := map[string]int32{"read_only": 1, "rolled_back": 1, "committed": 1}
				if fmt.Sprint(r.GetToolCalls()) != fmt.Sprint(want) {
					t.Fatalf("tool calls by outcome: want %v, got %v", want, r.GetToolCalls())
				}
			})
			t.Run("the audit log has the bytes that left and how each call ended", func(t *testing.T) {
				resp, err := stack.Client.ListDispatches(ctx, &agentv1.ListDispatchesRequest{SessionId: sess.GetSessionId(), IncludeCode: true})
				if err != nil {
					t.Fatal(err)
				}
				ds := resp.GetDispatches()
				if len(ds) != 5 {
					t.Fatalf("want 5 rows (read-only script, two scripts, two epilogues), got %d", len(ds))
				}
				wantOutcome := map[string]capabilityv1.DispatchOutcome{
					"toolu_01": capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_READ_ONLY,
					"toolu_02": capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_ROLLED_BACK,
					"toolu_03": capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED,
				}
				for _, d := range ds {
					tc := sent[d.GetToolCallId()]
					code := tc.GetExecute().GetCode()
					if d.GetKind() == capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE {
						code = tc.GetExecute().GetEpilogue().GetCode()
					}
					sum := sha256.Sum256([]byte(d.GetStamp().GetCode()))
					if d.GetStamp().GetCode() != code || hex.EncodeToString(sum[:]) != d.GetStamp().GetContentHash() {
						t.Errorf("%s %s: stored bytes are not the bytes that left", d.GetToolCallId(), d.GetKind())
					}
					if d.GetOutcome() != wantOutcome[d.GetToolCallId()] {
						t.Errorf("%s: want %v, got %v", d.GetToolCallId(), wantOutcome[d.GetToolCallId()], d.GetOutcome())
					}
				}
				if ds[1].GetErrorType() != "AttributeError" {
					t.Errorf("the rollback names its error type, got %q", ds[1].GetErrorType())
				}
			})
			t.Run("delete removes the session and its history, keeps the audit log", func(t *testing.T) {
				if _, err := stack.Client.DeleteSession(ctx, &agentv1.DeleteSessionRequest{SessionId: sess.GetSessionId()}); err != nil {
					t.Fatal(err)
				}
				if _, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()}); status.Code(err) != codes.NotFound {
					t.Fatalf("want the session gone, got %v", err)
				}
				db, err := sqlstore.Open(ctx, dbCfg)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if has, err := db.HasHistory(ctx, sess.GetSessionId()); err != nil || has {
					t.Fatalf("want no history row, got %v %v", has, err)
				}
				if ds, err := db.ListDispatches(ctx, sess.GetSessionId(), false); err != nil || len(ds) != 5 {
					t.Fatalf("want the 5 audit rows kept, got %d %v", len(ds), err)
				}
			})
		})
	}
}

// TestConcurrentRunsLoseNothing runs 200 runs at once, each with one
// automation that commits, and counts their audit and history rows.
func TestConcurrentRunsLoseNothing(t *testing.T) {
	for _, kind := range sqlstoretest.Kinds() {
		t.Run(kind, func(t *testing.T) {
			const n = 200
			ctx, cancel := context.WithTimeout(ot.As(context.Background(), "ada"), 3*testTimeout)
			defer cancel()
			dbCfg := sqlstoretest.Config(t, kind)
			vendor := ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
				if len(r.Messages) == 1 {
					return ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_1", "execute_task_automation", map[string]any{"description": "Box", "code": "box = 1\n"})}}
				}
				return ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}}
			})
			stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_DATA_DIR": dbCfg.DataDir, "NEXUS_DATABASE_URL": dbCfg.DatabaseURL}))
			sessions := make([]string, n)
			for i := range sessions {
				sessions[i] = newSession(ctx, t, stack.Client).GetSessionId()
			}
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for _, id := range sessions {
				wg.Go(func() {
					chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: id, Prompt: "Add a box"},
						func(tc *agentv1.ToolCall) *hostv1.HostResult { return &hostv1.HostResult{Committed: true} })
					if err == nil && (len(chunks) == 0 || chunks[len(chunks)-1].GetComplete() == nil) {
						err = fmt.Errorf("session %s: the run did not complete: %v", id, chunks[len(chunks)-1])
					}
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
			db, err := sqlstore.Open(ctx, dbCfg)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			audit, err := db.CountDispatches(ctx, "s_")
			if err != nil {
				t.Fatal(err)
			}
			total, ended, err := db.CountRuns(ctx, "s_")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d runs, %d audit rows, %d history rows (%d ended)", kind, n, audit, total, ended)
			if audit != 2*n || total != n || ended != n {
				t.Fatalf("want %d audit rows and %d ended runs, got %d audit rows and %d runs (%d ended)", 2*n, n, audit, total, ended)
			}
			for _, id := range sessions[:3] {
				ds, err := db.ListDispatches(ctx, id, false)
				if err != nil || len(ds) != 2 || ds[0].Outcome != "committed" {
					t.Fatalf("session %s: want 2 committed rows, got %+v %v", id, ds, err)
				}
			}
		})
	}
}

func TestDeleteRefusesAnActiveRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(ot.As(context.Background(), "ada"), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropic(t, ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_1", "execute_task_automation", map[string]any{"description": "Box", "code": "box = 1\n"})}})
	stack := ot.Start(t, vendor.URL, baseEnv())
	sess := newSession(ctx, t, stack.Client)
	stream, err := stack.Client.Run(ctx, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Add a box"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		c, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if c.GetToolCall() != nil {
			break
		}
	}
	_, err = stack.Client.DeleteSession(ctx, &agentv1.DeleteSessionRequest{SessionId: sess.GetSessionId()})
	if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "has an active run") {
		t.Fatalf("want Aborted naming the active run, got %v", err)
	}
	if _, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()}); err != nil {
		t.Fatalf("a refused delete changes nothing, got %v", err)
	}
}

// redisKeysOf lists the keys on the shared Redis that name any of ids.
func redisKeysOf(t *testing.T, rdb *redis.Client, ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		keys, err := rdb.Keys(context.Background(), "nexus:*"+id+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, keys...)
	}
	return out
}

// runOnce runs one automation that commits on a new session and returns the
// session and its run id.
func runOnce(ctx context.Context, t *testing.T, stack *ot.Stack) (string, string) {
	t.Helper()
	sess := newSession(ctx, t, stack.Client)
	_, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Add a box"},
		func(tc *agentv1.ToolCall) *hostv1.HostResult { return &hostv1.HostResult{Committed: true} })
	if err != nil {
		t.Fatal(err)
	}
	got, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()})
	if err != nil {
		t.Fatal(err)
	}
	return sess.GetSessionId(), got.GetLastRunId()
}

func scriptedRuns(t *testing.T) *ot.Vendor {
	return ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
		if len(r.Messages) == 1 {
			return ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_1", "execute_task_automation", map[string]any{"description": "Box", "code": "box = 1\n"})}}
		}
		return ot.Turn{Blocks: []ot.Block{ot.Text("Done.")}}
	})
}

// TestDeleteLeavesNoRedisKey deletes a session that ran twice on the shared
// Redis: no key names the session or its runs, the owner's index does not
// list it, and no history row is left.
func TestDeleteLeavesNoRedisKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(ot.As(context.Background(), "ada-delete"), testTimeout)
	defer cancel()
	dbCfg := sqlstoretest.Config(t, "sqlite")
	stack := ot.Start(t, scriptedRuns(t).URL, withEnv(map[string]string{"NEXUS_REDIS_URL": statetest.RedisURL(), "NEXUS_DATA_DIR": dbCfg.DataDir}))
	opts, err := redis.ParseURL(statetest.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()

	id, first := runOnce(ctx, t, stack)
	_, err = ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: id, Prompt: "Again"},
		func(tc *agentv1.ToolCall) *hostv1.HostResult { return &hostv1.HostResult{Committed: true} })
	if err != nil {
		t.Fatal(err)
	}
	sess, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	second := sess.GetLastRunId()
	if before := redisKeysOf(t, rdb, id, first, second); len(before) < 4 {
		t.Fatalf("want the session's keys and both runs' event logs in Redis before, got %v", before)
	}
	if _, err := stack.Client.DeleteSession(ctx, &agentv1.DeleteSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if left := redisKeysOf(t, rdb, id, first, second); len(left) != 0 {
		t.Fatalf("keys left after DELETE: %v", left)
	}
	if err := rdb.ZScore(ctx, "nexus:owner:{ada-delete}", id).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the owner index still lists the session: %v", err)
	}
	db, err := sqlstore.Open(ctx, dbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if has, err := db.HasHistory(ctx, id); err != nil || has {
		t.Fatalf("want no history row, got %v %v", has, err)
	}
	if _, err := stack.Client.DeleteSession(ctx, &agentv1.DeleteSessionRequest{SessionId: id}); status.Code(err) != codes.NotFound {
		t.Fatalf("a second DELETE finds nothing, got %v", err)
	}
}

// TestHotRetentionExpiresSessions sets NEXUS_HOT_RETENTION to two seconds:
// the session, its transcript and its run's event log leave Redis by
// themselves, while its history stays readable by its owner.
func TestHotRetentionExpiresSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(ot.As(context.Background(), "ada-retention"), testTimeout)
	defer cancel()
	stack := ot.Start(t, scriptedRuns(t).URL, withEnv(map[string]string{"NEXUS_REDIS_URL": statetest.RedisURL(), "NEXUS_HOT_RETENTION": "2s"}))
	opts, err := redis.ParseURL(statetest.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	id, run := runOnce(ctx, t, stack)
	for _, key := range []string{"nexus:s:{" + id + "}", "nexus:t:{" + id + "}", "nexus:ev:{" + run + "}"} {
		if ttl, err := rdb.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > 2*time.Second {
			t.Errorf("%s: want a ttl within 2s, got %s %v", key, ttl, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		left := redisKeysOf(t, rdb, id, run)
		// The mailbox keeps the lifetime the run gave it (the result timeout).
		if len(left) == 1 && strings.Contains(left[0], "mb:{") || len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hot state did not expire: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: id}); status.Code(err) != codes.NotFound {
		t.Fatalf("want the expired session gone, got %v", err)
	}
	runs, err := stack.Client.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: id})
	if err != nil || len(runs.GetRuns()) != 1 || runs.GetRuns()[0].GetRunId() != run {
		t.Fatalf("the history outlives the hot state for its owner, got %v %v", runs, err)
	}
	if _, err := stack.Client.ListRuns(ot.As(context.Background(), "mallory"), &agentv1.ListRunsRequest{SessionId: id}); status.Code(err) != codes.NotFound {
		t.Fatalf("someone else must not read the history, got %v", err)
	}
}

// TestRunRefusedWhenHistoryDatabaseStopped stops the PostgreSQL server that
// holds the run history: the run is refused with an error naming the
// database before anything is sent, and the session is ready again.
func TestRunRefusedWhenHistoryDatabaseStopped(t *testing.T) {
	pg := sqlstoretest.StartServer(t)
	ctx, cancel := context.WithTimeout(ot.As(context.Background(), "ada"), testTimeout)
	defer cancel()
	stack := ot.Start(t, scriptedRuns(t).URL, withEnv(map[string]string{"NEXUS_DATABASE_URL": pg.URL, "NEXUS_DATABASE_TIMEOUT": "5s"}))
	sess := newSession(ctx, t, stack.Client)
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	// The run is refused before it starts: nothing was recorded, so nothing
	// may run.
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Add a box"},
		func(tc *agentv1.ToolCall) *hostv1.HostResult { return &hostv1.HostResult{Committed: true} })
	if n := len(toolCalls(chunks)); n != 0 {
		t.Fatalf("%d tool call(s) sent with the history database stopped", n)
	}
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "history_unavailable") || !strings.Contains(err.Error(), `PostgreSQL database "postgres" at 127.0.0.1:`) {
		t.Fatalf("want the run refused with history_unavailable naming the database, got %v (chunks %v)", err, chunks)
	}
	got, err := stack.Client.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: sess.GetSessionId()})
	if err != nil || got.GetActiveRunId() != "" {
		t.Fatalf("want the session ready for the next run, got %v %v", got, err)
	}
}

// TestRunWithoutARecordedEndIsUnfinished writes a history row for a run that
// never ended (its replica died): the history shows it unfinished, not
// running.
func TestRunWithoutARecordedEndIsUnfinished(t *testing.T) {
	ctx, cancel := context.WithTimeout(ot.As(context.Background(), "ada"), testTimeout)
	defer cancel()
	dbCfg := sqlstoretest.Config(t, "sqlite")
	stack := ot.Start(t, scriptedRuns(t).URL, withEnv(map[string]string{"NEXUS_DATA_DIR": dbCfg.DataDir}))
	id, _ := runOnce(ctx, t, stack)
	db, err := sqlstore.Open(ctx, dbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.StartRun(ctx, sqlstore.Run{RunID: "r_dead", SessionID: id, Owner: "ada", Prompt: "lost", StartedAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	runs, err := stack.Client.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs.GetRuns()) != 2 || runs.GetRuns()[0].GetOutcome() != "completed" || runs.GetRuns()[1].GetOutcome() != "unfinished" {
		t.Fatalf("want completed then unfinished, got %v", runs.GetRuns())
	}
}
