package replicatest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// run is one client's view of a run.
type run struct {
	sessionID string
	runID     string
	lastSeq   int64
	calls     []*agentv1.ToolCall
	complete  *agentv1.Complete
	errChunk  *agentv1.Error
}

// startRun posts a run through a random gateway and reads its stream,
// calling onCall for every tool call; onCall returns false to stop reading
// (the run is then left suspended, its stream open until ctx ends).
func (m *mesh) startRun(ctx context.Context, sessionID string, onCall func(r *run, tc *agentv1.ToolCall) (bool, error)) (*run, error) {
	r := &run{sessionID: sessionID}
	var resp *http.Response
	// A gateway may first pick a replica that just died; it answers 503
	// until its connection notices, which the client retries like any 503.
	for attempt := 0; ; attempt++ {
		var err error
		resp, err = m.do(ctx, http.MethodPost, m.gateway()+"/v1/sessions/"+sessionID+"/runs", `{"prompt":"How many bodies does the document have?"}`, nil)
		if err != nil {
			return r, err
		}
		if resp.StatusCode != http.StatusServiceUnavailable || attempt == 20 {
			break
		}
		resp.Body.Close()
	}
	var cbErr error
	err := events(resp, func(c *agentv1.StreamChunk) bool {
		if c.GetSeq() > 0 {
			r.runID, r.lastSeq = c.GetRunId(), c.GetSeq()
		}
		switch {
		case c.GetToolCall() != nil:
			r.calls = append(r.calls, c.GetToolCall())
			more, err := onCall(r, c.GetToolCall())
			cbErr = err
			return more && err == nil
		case c.GetComplete() != nil:
			r.complete = c.GetComplete()
		case c.GetError() != nil:
			r.errChunk = c.GetError()
		}
		return true
	})
	return r, errors.Join(err, cbErr)
}

// answer posts the tool result through a random gateway, the same result
// again through the other one (accepted again: a courier may retry), and a
// different one, which must be refused.
func (m *mesh) answer(ctx context.Context, r *run, tc *agentv1.ToolCall) error {
	first := m.gateway()
	other := m.gateways[0]
	if other == first {
		other = m.gateways[1]
	}
	for _, post := range []struct {
		gateway, stdout string
		want            int
	}{
		{first, "objects in " + r.sessionID, http.StatusOK},
		{other, "objects in " + r.sessionID, http.StatusOK},
		{other, "a different result for " + r.sessionID, http.StatusConflict},
	} {
		code, err := m.postResultRetrying(ctx, post.gateway, r.sessionID, tc, post.stdout)
		if err != nil || code != post.want {
			return fmt.Errorf("post %q for %s through %s: status %d, want %d (%v)", post.stdout, tc.GetToolCallId(), post.gateway, code, post.want, err)
		}
	}
	return nil
}

// postResultRetrying posts like a courier does: a 5xx or a broken
// connection (a replica or Redis that is away) is tried again.
func (m *mesh) postResultRetrying(ctx context.Context, gateway, sessionID string, tc *agentv1.ToolCall, stdout string) (int, error) {
	for {
		code, err := m.postResult(ctx, gateway, sessionID, tc, stdout)
		if err == nil && code < 500 {
			return code, nil
		}
		select {
		case <-ctx.Done():
			return code, fmt.Errorf("%w (last status %d, %v)", ctx.Err(), code, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkDelivered checks that the model was sent the call's result exactly
// once, and the first one posted.
func (m *mesh) checkDelivered(r *run) error {
	for _, tc := range r.calls {
		got := m.vendor.toolResults(tc.GetToolCallId())
		if len(got) != 1 || !strings.Contains(got[0], "objects in "+r.sessionID) {
			return fmt.Errorf("session %s: the model was sent %d results for %s: %q", r.sessionID, len(got), tc.GetToolCallId(), got)
		}
	}
	return nil
}

// TestTwoHundredSessionsAcrossReplicas runs 200 sessions at once through two
// gateways in front of three orchestrator replicas; every tool result goes
// through a gateway chosen at random (so usually not the replica holding the
// run) and is posted twice. Every run must complete and the model must see
// every result exactly once.
func TestTwoHundredSessionsAcrossReplicas(t *testing.T) {
	const sessions = 200
	m := startMesh(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for range sessions {
		wg.Go(func() {
			sid, err := m.createSession(ctx)
			if err != nil {
				errs <- err
				return
			}
			r, err := m.startRun(ctx, sid, func(r *run, tc *agentv1.ToolCall) (bool, error) {
				return true, m.answer(ctx, r, tc)
			})
			switch {
			case err != nil:
				errs <- fmt.Errorf("session %s: %w", sid, err)
			case r.complete == nil:
				errs <- fmt.Errorf("session %s: run %s ended without complete (error %v)", sid, r.runID, r.errChunk)
			case len(r.calls) != 1:
				errs <- fmt.Errorf("session %s: %d tool calls, want 1", sid, len(r.calls))
			default:
				errs <- m.checkDelivered(r)
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			if failed <= 10 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d sessions failed", failed, sessions)
	}
	t.Logf("%d sessions, each with one suspended tool call, completed in %s", sessions, time.Since(begin).Round(time.Millisecond))
}
