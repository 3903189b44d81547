package sqlitestate_test

import (
	"bytes"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/sqlitestate"
)

// TestFullDiskIsSaidAsSuch fills the file's room (SQLite's max_page_count,
// which refuses a write with the same SQLITE_FULL as a disk with no space
// left): the write is refused as state.ErrFull, which is also
// state.ErrUnavailable (runs wait for room, as on a full Redis), and the
// error says the store is full and why. Before, it was an unclassified
// error that clients read as "the service is unavailable right now; retry
// shortly", the same as a Redis outage.
func TestFullDiskIsSaidAsSuch(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "nexus.db")+"?_pragma=max_page_count(64)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := sqlitestate.Open(t.Context(), db, sqlitestate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	docs := sqlitestate.NewDocuments(s)
	big := &agentv1.SessionDocument{SessionId: "s_1", FileName: "room.FCStd", Data: bytes.Repeat([]byte("walls"), 200_000)}
	err = docs.PutDocument(t.Context(), big)
	if !errors.Is(err, state.ErrFull) || !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("a write past the file's room: %v; want state.ErrFull (and ErrUnavailable)", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "the state store is full") || !strings.Contains(msg, "disk") {
		t.Errorf("the refusal says %q; want it to say the state store is full and that the disk is", msg)
	}
	// What fits still goes in: the refusal changed nothing else.
	if err := docs.PutDocument(t.Context(), &agentv1.SessionDocument{SessionId: "s_2", Data: []byte("small")}); err != nil {
		t.Fatalf("a small write after the refusal: %v", err)
	}
}
