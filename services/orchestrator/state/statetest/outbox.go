package statetest

import (
	"slices"
	"testing"
	"time"

	"nexus.local/services/orchestrator/state"
)

// The outbox: a decision and its outcome record are one step, a record is
// kept until it is done, the same id twice is one record, and a drainer on
// any replica finds every session's records.

func outboxIDs(recs []state.OutboxRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.SessionID+"/"+r.ID)
	}
	return out
}

func testOutbox(t *testing.T, open func(*testing.T) state.Store) {
	const ttl = 10 * time.Minute
	t.Run("a decision puts its record with the result it returns", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		if err := s.Expect(ctx, "s1", "call-1", "tok-1", ttl); err != nil {
			t.Fatal(err)
		}
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("ran")}); err != nil {
			t.Fatal(err)
		}
		d, ok, err := s.DecideRecord(ctx, "s1", "call-1", state.OutboxRecord{ID: "run-1/call-1", Body: []byte("body-1")})
		if err != nil || !ok || d.Content.GetResult().GetStdout() != "ran" {
			t.Fatalf("decide record: %+v ok=%v err=%v, want the delivered result", d, ok, err)
		}
		// The decision is final, as with Decide: a different result is refused.
		if err := s.Deliver(ctx, "s1", "call-1", "tok-1", state.Delivery{Content: result("other")}); err == nil {
			t.Fatal("a different result after the decision was accepted")
		}
		// Deciding again (a replica redoing the step) answers the same and
		// keeps one record.
		if d, ok, err := s.DecideRecord(ctx, "s1", "call-1", state.OutboxRecord{ID: "run-1/call-1", Body: []byte("body-1")}); err != nil || !ok || d.Content.GetResult().GetStdout() != "ran" {
			t.Fatalf("decide record again: %+v ok=%v err=%v", d, ok, err)
		}
		recs, err := s.Outboxed(ctx, "s1", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].ID != "run-1/call-1" || recs[0].SessionID != "s1" || string(recs[0].Body) != "body-1" ||
			recs[0].Delivery.GetResult().GetStdout() != "ran" {
			t.Fatalf("outbox = %+v, want one record with its body and the result", recs)
		}
	})
	t.Run("a decision without a result puts its record without one", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		if err := s.Expect(ctx, "s1", "call-1", "tok-1", ttl); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.DecideRecord(ctx, "s1", "call-1", state.OutboxRecord{ID: "r/none", Body: []byte("b")}); err != nil || ok {
			t.Fatalf("decide record: ok=%v err=%v, want no result", ok, err)
		}
		// A mailbox that is gone (replaced by another call) still records.
		if _, ok, err := s.DecideRecord(ctx, "s1", "call-0", state.OutboxRecord{ID: "r/gone", Body: []byte("b")}); err != nil || ok {
			t.Fatalf("decide record of a replaced call: ok=%v err=%v, want no result", ok, err)
		}
		recs, err := s.Outboxed(ctx, "s1", 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := outboxIDs(recs); !slices.Equal(got, []string{"s1/r/none", "s1/r/gone"}) {
			t.Fatalf("outbox = %v, want both records in order", got)
		}
		for _, r := range recs {
			if r.Delivery != nil {
				t.Fatalf("record %s carries a result %v, want none", r.ID, r.Delivery)
			}
		}
	})
	t.Run("records stay until done, in order, and every session's are found", func(t *testing.T) {
		s, ctx := open(t), testContext(t)
		if err := s.PutOutbox(ctx,
			state.OutboxRecord{ID: "a", SessionID: "s1", Body: []byte("1"), Delivery: result("x")},
			state.OutboxRecord{ID: "b", SessionID: "s1", Body: []byte("2")},
			state.OutboxRecord{ID: "a", SessionID: "s2", Body: []byte("3")},
		); err != nil {
			t.Fatal(err)
		}
		// The same id again is the record already there.
		if err := s.PutOutbox(ctx, state.OutboxRecord{ID: "a", SessionID: "s1", Body: []byte("changed")}); err != nil {
			t.Fatal(err)
		}
		recs, err := s.Outboxed(ctx, "s1", 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := outboxIDs(recs); !slices.Equal(got, []string{"s1/a", "s1/b"}) || string(recs[0].Body) != "1" || recs[0].Delivery.GetResult().GetStdout() != "x" {
			t.Fatalf("outbox of s1 = %v (%+v), want a then b as first put", got, recs)
		}
		if recs, err := s.Outboxed(ctx, "s1", 1); err != nil || len(recs) != 1 || recs[0].ID != "a" {
			t.Fatalf("outbox of s1 limited to 1 = %+v, %v; want a", recs, err)
		}
		all, err := s.Outboxed(ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := outboxIDs(all); len(got) != 3 || !slices.Contains(got, "s1/a") || !slices.Contains(got, "s1/b") || !slices.Contains(got, "s2/a") {
			t.Fatalf("every session's outbox = %v, want s1/a, s1/b and s2/a", got)
		}
		if err := s.DoneOutbox(ctx, "s1", "a"); err != nil {
			t.Fatal(err)
		}
		// Done in one session leaves another's record of the same id.
		all, err = s.Outboxed(ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := outboxIDs(all); len(got) != 2 || !slices.Contains(got, "s1/b") || !slices.Contains(got, "s2/a") {
			t.Fatalf("after done s1/a, every session's outbox = %v, want s1/b and s2/a", got)
		}
		if err := s.DoneOutbox(ctx, "s1", "b"); err != nil {
			t.Fatal(err)
		}
		if err := s.DoneOutbox(ctx, "s2", "a"); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if all, err := s.Outboxed(ctx, "", 10); err != nil || len(all) != 0 {
				t.Fatalf("outbox after every record was done = %v, %v; want none", outboxIDs(all), err)
			}
		}
		// A session emptied once gets records again.
		if err := s.PutOutbox(ctx, state.OutboxRecord{ID: "c", SessionID: "s1", Body: []byte("4")}); err != nil {
			t.Fatal(err)
		}
		if all, err := s.Outboxed(ctx, "", 10); err != nil || !slices.Equal(outboxIDs(all), []string{"s1/c"}) {
			t.Fatalf("outbox after a new record = %v, %v; want s1/c", outboxIDs(all), err)
		}
	})
}
