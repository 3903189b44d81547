package call_test

import (
	"bytes"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	_ "modernc.org/sqlite"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/sqlitestate"
	"nexus.local/services/orchestrator/state/statetest"
)

// TestAFullStoreEndsARunAsFull takes the refusal of a SQLite store with no
// room left (its max_page_count, which refuses a write with the same
// SQLITE_FULL as a data folder whose disk is full) and the failure of a
// Redis that went away, and ends a run with each as a run's store failure
// does: the full store ends it with ERROR_CODE_STORE_FULL, not retryable
// (retrying does not help until space is freed), saying the store is full;
// the store that is away with ERROR_CODE_STATE_UNAVAILABLE, retryable.
// Before, both ended the run with ERROR_CODE_STATE_UNAVAILABLE, retryable,
// so clients told the person to retry shortly in both cases.
func TestAFullStoreEndsARunAsFull(t *testing.T) {
	ctx := t.Context()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "nexus.db")+"?_pragma=max_page_count(64)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	full, err := sqlitestate.Open(ctx, db, sqlitestate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fullErr := sqlitestate.NewDocuments(full).PutDocument(ctx, &agentv1.SessionDocument{SessionId: "s_1", FileName: "room.FCStd", Data: bytes.Repeat([]byte("walls"), 200_000)})

	srv := statetest.StartRedis(t, "no")
	away, err := redisstate.Open(ctx, srv.URL(), redisstate.Options{ReplicaID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = away.Close() })
	srv.Stop(syscall.SIGKILL)
	awayErr := redisstate.NewDocuments(away).PutDocument(ctx, &agentv1.SessionDocument{SessionId: "s_2", Data: []byte("small")})

	r := call.New(&call.Deps{}, nil)
	for _, tc := range []struct {
		name      string
		err       error
		code      agentv1.ErrorCode
		retryable bool
		says      string
	}{
		{"full disk", fullErr, agentv1.ErrorCode_ERROR_CODE_STORE_FULL, false, "the state store is full"},
		{"redis away", awayErr, agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, true, "save transcript"},
	} {
		if tc.err == nil {
			t.Fatalf("%s: the write succeeded; want it refused", tc.name)
		}
		var re *call.RunError
		if !errors.As(r.StateErr(ctx, "save transcript", tc.err), &re) {
			t.Fatalf("%s: %v is no run error", tc.name, tc.err)
		}
		got := re.Public()
		if got.GetCode() != tc.code || got.GetRetryable() != tc.retryable || !strings.Contains(got.GetMessage(), tc.says) {
			t.Errorf("%s ends the run with %v (retryable %v): %q; want %v (retryable %v) saying %q", tc.name,
				got.GetCode(), got.GetRetryable(), got.GetMessage(), tc.code, tc.retryable, tc.says)
		}
	}
}
