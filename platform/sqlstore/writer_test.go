package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"nexus.local/platform/sqlstore"
)

// TestWritersQueueInTheProcess: the SQLite file's writers take turns on the
// process's own lock, never in SQLite, whose busy handler sleeps between
// tries (a burst of run starts once queued there for tens of
// milliseconds). With the busy handler off, a writer that met another in
// SQLite would fail at once with SQLITE_BUSY; 24 writers at once, each
// starting a run, recording its tool calls and its audit rows and ending
// it, all succeed, and so does a writer of the file that holds the lock
// itself as the orchestrator's hot state does (Writer).
func TestWritersQueueInTheProcess(t *testing.T) {
	ctx := context.Background()
	db, err := sqlstore.OpenWithoutBusyWait(ctx, sqlstore.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hot := db.SQLite()
	if _, err := hot.ExecContext(ctx, `CREATE TABLE hot_probe (run_id TEXT, n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	const writers, rounds = 24, 10
	errs := make(chan error, writers*rounds*5)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				id := fmt.Sprintf("r-%d-%d", w, i)
				errs <- db.StartRun(ctx, sqlstore.Run{RunID: id, SessionID: "s-writers", Owner: "ada", HostApp: "freecad", Models: []string{"m"}, StartedAt: t0})
				errs <- db.RecordToolCall(ctx, sqlstore.ToolCall{SessionID: "s-writers", RunID: id, ToolCallID: "c1", ToolName: "execute_script", Outcome: "committed", At: t0})
				errs <- db.AppendDispatches(ctx, []sqlstore.Dispatch{{SessionID: "s-writers", RunID: id, ToolCallID: "c1", Kind: "task_automation",
					SHA256: "h", Code: []byte("1"), DispatchedAt: t0}})
				errs <- db.FinishRun(ctx, sqlstore.Run{RunID: id, Models: []string{"m"}, Outcome: "completed", EndedAt: t0})
				errs <- func() error {
					db.Writer().Lock()
					defer db.Writer().Unlock()
					tx, err := hot.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, `INSERT INTO hot_probe (run_id, n) VALUES ($1, $2)`, id, i); err != nil {
						_ = tx.Rollback()
						return err
					}
					return tx.Commit()
				}()
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			if failed == 0 {
				t.Errorf("a writer failed: %v", err)
			}
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d writes failed: writers met in SQLite instead of queueing on the process's lock", failed, writers*rounds*5)
	}
	total, _, err := db.CountRuns(ctx, "s-writers")
	if err != nil || total != writers*rounds {
		t.Errorf("the history holds %d runs (%v), want %d", total, err, writers*rounds)
	}
}
