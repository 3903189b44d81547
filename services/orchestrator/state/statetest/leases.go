package statetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/services/orchestrator/state"
)

// Leases on runs, their hand-over, and the run history.

func testLeases(t *testing.T, s state.Store) {
	ctx := testContext(t)
	const ttl = time.Hour
	a := state.Lease{RunID: "run-1", SessionID: "s1", Owner: "replica-a"}
	b := a
	b.Owner = "replica-b"
	due := func() error {
		got, err := s.Due(ctx, 100)
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0].RunID != "run-1" || got[0].SessionID != "s1" || got[0].Owner != "" {
			return fmt.Errorf("due = %+v, want run-1 of s1 without an owner", got)
		}
		return nil
	}
	notDue := func() error {
		got, err := s.Due(ctx, 100)
		if err != nil {
			return err
		}
		if len(got) != 0 {
			return fmt.Errorf("due = %+v, want none", got)
		}
		return nil
	}
	steps := []struct {
		name string
		do   func() error
		want error
	}{
		{"a acquires", func() error { return s.Acquire(ctx, a, ttl) }, nil},
		{"b cannot acquire a held lease", func() error { return s.Acquire(ctx, b, ttl) }, state.ErrLeaseLost},
		{"a acquires again", func() error { return s.Acquire(ctx, a, ttl) }, nil},
		{"a renews", func() error { return s.Renew(ctx, a, ttl) }, nil},
		{"b cannot renew", func() error { return s.Renew(ctx, b, ttl) }, state.ErrLeaseLost},
		{"b cannot claim a run that is not due", func() error { return s.Claim(ctx, b, ttl) }, state.ErrLeaseLost},
		{"a wake of an owned run changes nothing", func() error { return s.Wake(ctx, "run-1") }, nil},
		{"so nothing is due", notDue, nil},
		{"b's release leaves it alone", func() error { return s.Release(ctx, b) }, nil},
		{"so a still renews", func() error { return s.Renew(ctx, a, ttl) }, nil},
		{"a suspends the run until its deadline", func() error { return s.Suspend(ctx, a, ttl) }, nil},
		{"a no longer owns it", func() error { return s.Renew(ctx, a, ttl) }, state.ErrLeaseLost},
		{"a suspended run is not due before its deadline", notDue, nil},
		{"nor can it be claimed", func() error { return s.Claim(ctx, b, ttl) }, state.ErrLeaseLost},
		{"a result wakes it", func() error { return s.Wake(ctx, "run-1") }, nil},
		{"so it is due, with no owner", due, nil},
		{"b claims it", func() error { return s.Claim(ctx, b, ttl) }, nil},
		{"a cannot claim it too", func() error { return s.Claim(ctx, a, ttl) }, state.ErrLeaseLost},
		{"b renews", func() error { return s.Renew(ctx, b, ttl) }, nil},
		{"and it is not due", notDue, nil},
		{"b suspends with no wait (a drain hands it over)", func() error { return s.Suspend(ctx, b, 0) }, nil},
		{"so it is due at once", due, nil},
		{"a claims it", func() error { return s.Claim(ctx, a, ttl) }, nil},
		{"a releases", func() error { return s.Release(ctx, a) }, nil},
		{"a cannot renew a released lease", func() error { return s.Renew(ctx, a, ttl) }, state.ErrLeaseLost},
		{"nobody can claim a released run", func() error { return s.Claim(ctx, b, ttl) }, state.ErrLeaseLost},
		{"a released run is never due", notDue, nil},
		{"b acquires the free lease", func() error { return s.Acquire(ctx, b, ttl) }, nil},
		{"a cannot wake and claim a run b holds", func() error { return s.WakeClaim(ctx, a, ttl) }, state.ErrLeaseLost},
		{"so b still renews", func() error { return s.Renew(ctx, b, ttl) }, nil},
		{"b suspends it until its deadline", func() error { return s.Suspend(ctx, b, ttl) }, nil},
		{"a wakes and claims it in one step", func() error { return s.WakeClaim(ctx, a, ttl) }, nil},
		{"so a renews", func() error { return s.Renew(ctx, a, ttl) }, nil},
		{"and b cannot claim it", func() error { return s.Claim(ctx, b, ttl) }, state.ErrLeaseLost},
		{"nor wake and claim it", func() error { return s.WakeClaim(ctx, b, ttl) }, state.ErrLeaseLost},
		{"and it is not due", notDue, nil},
		{"a releases it", func() error { return s.Release(ctx, a) }, nil},
		{"nobody can wake and claim a released run", func() error { return s.WakeClaim(ctx, b, ttl) }, state.ErrLeaseLost},
		{"b acquires the free lease again", func() error { return s.Acquire(ctx, b, ttl) }, nil},
		{"b releases", func() error { return s.Release(ctx, b) }, nil},
	}
	for _, st := range steps {
		if err := st.do(); !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.want)
		}
	}
}

// waitDue polls until n runs are due; the store's own clock decides.
func waitDue(ctx context.Context, t *testing.T, s state.Store, n int) {
	t.Helper()
	for {
		got, err := s.Due(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d runs due: %v", len(got), n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func testClaimOnce(t *testing.T, s state.Store) {
	ctx := testContext(t)
	const runs, claimers = 30, 8
	const short = 20 * time.Millisecond
	for i := range runs {
		l := state.Lease{RunID: fmt.Sprintf("run-%d", i), SessionID: fmt.Sprintf("s-%d", i), Owner: "replica-dead"}
		if err := s.Acquire(ctx, l, short); err != nil {
			t.Fatal(err)
		}
	}
	live := state.Lease{RunID: "run-live", SessionID: "s-live", Owner: "replica-alive"}
	if err := s.Acquire(ctx, live, time.Hour); err != nil {
		t.Fatal(err)
	}
	// A lease that ran out but that nobody claimed is still its owner's:
	// after an outage the owner renews before anyone takes it.
	late := state.Lease{RunID: "run-late", SessionID: "s-late", Owner: "replica-slow"}
	if err := s.Acquire(ctx, late, short); err != nil {
		t.Fatal(err)
	}
	waitDue(ctx, t, s, runs+1)
	if err := s.Renew(ctx, late, time.Hour); err != nil {
		t.Fatalf("renewing an expired, unclaimed lease: %v", err)
	}

	var mu sync.Mutex
	taken := map[string]int{}
	var wg sync.WaitGroup
	for c := range claimers {
		wg.Go(func() {
			got, err := s.Due(ctx, 1000)
			if err != nil {
				t.Error(err)
				return
			}
			for _, l := range got {
				if l.RunID == "run-live" || l.RunID == "run-late" {
					t.Errorf("%s is due, but its owner holds it", l.RunID)
				}
				if l.Owner != "replica-dead" || l.SessionID != "s-"+l.RunID[len("run-"):] {
					t.Errorf("lease came back as %+v", l)
				}
				l.Owner = fmt.Sprintf("claimer-%d", c)
				err := s.Claim(ctx, l, time.Hour)
				if errors.Is(err, state.ErrLeaseLost) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				taken[l.RunID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(taken) != runs {
		t.Fatalf("%d distinct runs claimed, want %d: %v", len(taken), runs, taken)
	}
	for run, n := range taken {
		if n != 1 {
			t.Fatalf("%s was claimed %d times", run, n)
		}
	}
	if err := s.Renew(ctx, state.Lease{RunID: "run-0", SessionID: "s-0", Owner: "replica-dead"}, time.Hour); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("renewing a claimed lease: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Renew(ctx, live, time.Hour); err != nil {
		t.Fatalf("the live lease was taken: %v", err)
	}
}

func testRuns(t *testing.T, s state.Store) {
	ctx := testContext(t)
	if _, err := s.GetRun(ctx, "run-x"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("unknown run: err = %v, want ErrNotFound", err)
	}
	r := &orchestratorv1.RunState{RunId: "run-1", SessionId: "s1", Turns: 2, Results: []*modelv1.ToolResultBlock{{ToolUseId: "call-1", Text: "ok"}}}
	if err := s.SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Turns = 3 // the store keeps its own copy
	got, err := s.GetRun(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.GetTurns() != 2 || got.GetResults()[0].GetText() != "ok" {
		t.Fatalf("run = %v", got)
	}
	if err := s.SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetRun(ctx, "run-1"); got.GetTurns() != 3 {
		t.Fatalf("saved again: turns = %d, want 3", got.GetTurns())
	}
}
