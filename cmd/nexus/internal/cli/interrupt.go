package cli

import (
	"context"
	"fmt"
	"sync"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// interruptWait bounds how long an interrupted `nexus run` waits for the
// run's terminal chunk after cancelling it: long enough for the orchestrator
// to stop the run (within a second), short enough for a person at Ctrl-C.
const interruptWait = 5 * time.Second

// onInterrupt cancels the session's run explicitly once ctx ends (Ctrl-C).
// A run is a durable job, so closing the stream would leave it running; the
// stream stays open for the run's terminal chunk, and stopStream ends it
// when that chunk does not come within interruptWait or the cancel failed.
// The returned function ends the watch; call it when the stream is done. It
// waits for a cancel under way, so what the cancel says is written before
// the CLI exits, even when the run's last chunk arrived before its answer.
func onInterrupt(ctx context.Context, client backend, session string, o IO, stopStream func()) func() {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-done:
			if ctx.Err() == nil {
				return
			}
		case <-ctx.Done():
		}
		if err := cancelRun(ctx, client, session, o); err != nil {
			fmt.Fprintf(o.Stderr, "\ncould not cancel the run of session %s: %v\n", session, err)
			stopStream()
			return
		}
		t := time.NewTimer(interruptWait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			fmt.Fprintf(o.Stderr, "the run did not end within %v of the cancel; stopped following it (nexus sessions shows its state)\n", interruptWait)
			stopStream()
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-finished
	})
}

// cancelRun stops the session's run on the server when the person
// interrupts the CLI, so nothing keeps waiting for a host that went away.
func cancelRun(ctx context.Context, client backend, session string, o IO) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	resp, err := client.CancelRun(cctx, &agentv1.CancelRunRequest{SessionId: session})
	if err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	if resp.GetRunId() != "" {
		fmt.Fprintf(o.Stderr, "\ncancelling run %s\n", resp.GetRunId())
	}
	return nil
}

// interruptedError is what `nexus run` returns after Ctrl-C, naming how the
// run ended (its terminal chunk), or that its end was not seen.
func interruptedError(ctx context.Context, end *agentv1.StreamChunk) error {
	switch {
	case end.GetError() != nil:
		return fmt.Errorf("run interrupted: run %s ended: %s: %s", end.GetRunId(), codeText(end.GetError().GetCode()), end.GetError().GetMessage())
	case end.GetComplete() != nil:
		return fmt.Errorf("run interrupted: run %s completed before the cancel reached it", end.GetRunId())
	default:
		return fmt.Errorf("run interrupted before its end was seen: %w", context.Cause(ctx))
	}
}
