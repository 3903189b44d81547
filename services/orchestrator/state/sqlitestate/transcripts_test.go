package sqlitestate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/state/sqlitestate"
	"nexus.local/services/orchestrator/state/statetest"
)

// TestTranscriptsOutliveTheRowidMigration: a data folder whose hot state was
// written before transcripts left their WITHOUT ROWID table keeps its
// session's transcript and its run's events through the migration, and the
// next save writes over them.
func TestTranscriptsOutliveTheRowidMigration(t *testing.T) {
	ctx := t.Context()
	db := openDB(t, t.TempDir())
	if err := sqlitestate.MigrateTo(ctx, db.SQLite(), 4); err != nil {
		t.Fatal(err)
	}
	sess, err := proto.Marshal(&agentv1.Session{SessionId: "s1", Owner: "ada", HostApp: "freecad", CreateTime: timestamppb.Now()})
	if err != nil {
		t.Fatal(err)
	}
	old := []string{"hello", strings.Repeat("wall ok\n", 100_000), "bye"}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.SQLite().ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO hot_sessions (session_id, owner, create_time, body, expires) VALUES ('s1', 'ada', 1, $1, 0)`, sess)
	for i, text := range old {
		b, err := proto.Marshal(statetest.TextMessage(text))
		if err != nil {
			t.Fatal(err)
		}
		exec(`INSERT INTO hot_transcripts (session_id, idx, body, expires) VALUES ('s1', $1, $2, 0)`, i, b)
	}
	chunk, err := proto.Marshal(&agentv1.StreamChunk{Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO hot_events (run_id, seq, body) VALUES ('r1', 1, $1)`, chunk)

	s := openStore(t, db, sqlitestate.Options{})
	readBack := func(want []string) {
		t.Helper()
		got, err := s.Transcript(ctx, "s1")
		if err != nil || len(got) != len(want) {
			t.Fatalf("transcript = %d messages, %v; want %d", len(got), err, len(want))
		}
		for i := range want {
			if text := got[i].GetContent()[0].GetText().GetText(); text != want[i] {
				t.Fatalf("message %d is %.20q, want %.20q", i, text, want[i])
			}
		}
	}
	readBack(old)
	var events int
	if err := db.SQLite().QueryRowContext(ctx, `SELECT COUNT(*) FROM hot_events WHERE run_id = 'r1'`).Scan(&events); err != nil || events != 1 {
		t.Fatalf("run r1 has %d events after the migration (%v), want 1", events, err)
	}
	next := []string{"hello", old[1], "bye, changed", "one more"}
	msgs := make([]*modelv1.Message, len(next))
	for i, text := range next {
		msgs[i] = statetest.TextMessage(text)
	}
	if err := s.SaveTranscript(ctx, "s1", msgs); err != nil {
		t.Fatal(err)
	}
	readBack(next)
}

// BenchmarkSaveTranscriptAfterATurn saves a transcript that holds a 6 MiB
// script output once more after each turn, as the runner does: what a save
// costs should follow the turn, not the transcript.
func BenchmarkSaveTranscriptAfterATurn(b *testing.B) {
	ctx := context.Background()
	s := openStore(b, openDB(b, b.TempDir()), sqlitestate.Options{})
	if err := s.Create(ctx, &agentv1.Session{SessionId: "s1", Owner: "ada", HostApp: "freecad", CreateTime: timestamppb.New(time.Now())}); err != nil {
		b.Fatal(err)
	}
	msgs := []*modelv1.Message{statetest.TextMessage("add the walls"), statetest.TextMessage(strings.Repeat("wall 0123456789 ok\n", (6<<20)/19+1))}
	if err := s.SaveTranscript(ctx, "s1", msgs); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		msgs = append(msgs, statetest.TextMessage(fmt.Sprintf("turn %d", i)))
		if err := s.SaveTranscript(ctx, "s1", msgs); err != nil {
			b.Fatal(err)
		}
	}
}
