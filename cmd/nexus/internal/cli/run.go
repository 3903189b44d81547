package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
)

// chunkBuffer is how many chunks the stream reader holds while the main
// loop waits on the host or on the person: a run waiting for a result or a
// review streams almost nothing, so this never fills in practice.
const chunkBuffer = 4096

// RunOptions configures Run.
type RunOptions struct {
	Conn Conn
	// Prompt starts a run; empty, with SessionID, joins the session's run
	// that is going (a script awaiting review included).
	Prompt string
	// Model of this run, vendor/model; empty keeps the session's.
	Model string
	// SessionID continues a session instead of creating one.
	SessionID string
	// NewDocument starts the new session on a new, empty document.
	NewDocument bool
	// HostURL and HostToken pair a host runtime that is not linked, which
	// nexus run then carries the session's scripts to; an empty URL asks
	// the running nexus dev for its own, and without one nexus run only
	// watches: the session's linked host carries its scripts.
	HostURL, HostToken string
	// HostApp is the application of a new session when no runtime is
	// paired with nexus run; empty is freecad.
	HostApp string
	// ViewsDir is where views are saved, one folder per session; empty
	// saves none.
	ViewsDir string
	// Review is the session's review policy: unspecified gives a new
	// session the server's default (REVIEW_POLICY_PREVIEW) and leaves an
	// existing one as it is.
	Review agentv1.ReviewPolicy
	Output Output
}

// Run starts a run for a prompt, prints its stream, asks the person to
// review the scripts that wait for it, carries the tool calls to the host
// runtime, and returns an error whenever the run did not complete.
func Run(ctx context.Context, opt RunOptions, o IO) error {
	prompt := strings.TrimSpace(opt.Prompt)
	switch {
	case prompt == "" && opt.SessionID == "":
		return UsageError{errors.New("run: the prompt is empty (nexus run --session ID alone joins that session's run)")}
	case opt.NewDocument && opt.SessionID != "":
		return UsageError{errors.New("run: --new-document starts a new session; --session continues one: give one")}
	}
	conn, err := resolveConn(opt.Conn, o.Env)
	if err != nil {
		return err
	}
	opt.Conn = conn
	host := &Host{URL: opt.HostURL, Token: opt.HostToken, HTTP: o.HTTP}
	if host.URL == "" {
		if url, token, err := devPairing(ctx, o); err == nil {
			host.URL, host.Token = url, token
		}
	}
	hostApp := opt.HostApp
	if hostApp == "" {
		hostApp = "freecad"
	}
	if host.URL != "" {
		info, err := host.Info(ctx)
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		hostApp = info.GetHostApp()
		fmt.Fprintf(o.Stderr, "host %s %s, document %s\n", hostName(info.GetHostApp()), info.GetHostVersion(), info.GetDocument())
	} else {
		host = nil
		fmt.Fprintf(o.Stderr, "no host runtime paired with nexus run: the session's linked %s host carries its scripts "+
			"(`nexus host %s --connect URL` links one; --host-url and --host-token pair one that is not linked)\n", hostName(hostApp), hostApp)
	}

	b, err := connect(ctx, opt.Conn, o)
	if err != nil {
		return err
	}
	defer b.Close()

	sessionID := opt.SessionID
	if sessionID == "" {
		s, err := b.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: hostApp, Model: opt.Model, ReviewPolicy: opt.Review, NewDocument: opt.NewDocument})
		if err != nil {
			return err
		}
		sessionID = s.GetSessionId()
		// Once per session, before anything waits: what will wait for the
		// person, so a pause never comes as a surprise.
		fmt.Fprintf(o.Stderr, "session %s (review: %s)\n%s\n", sessionID, enumText(s.GetReviewPolicy().String(), "REVIEW_POLICY_"), ReviewNotice(s.GetReviewPolicy()))
	} else if opt.Review != agentv1.ReviewPolicy_REVIEW_POLICY_UNSPECIFIED {
		s, err := b.UpdateSession(ctx, &agentv1.UpdateSessionRequest{SessionId: sessionID, ReviewPolicy: opt.Review})
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Stderr, "session %s now (review: %s)\n%s\n", sessionID, enumText(s.GetReviewPolicy().String(), "REVIEW_POLICY_"), ReviewNotice(s.GetReviewPolicy()))
	}

	// The stream outlives ctx: closing it would not stop the durable run, so
	// on Ctrl-C onInterrupt cancels the run and the loop reads on to its end.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	f := &follower{b: b, session: sessionID, host: host, hostApp: hostApp, o: o, carried: map[string]bool{}}
	var stream chunkStream
	if prompt == "" {
		stream, err = f.join(runCtx)
	} else {
		stream, err = b.Run(runCtx, &agentv1.RunRequest{SessionId: sessionID, Prompt: prompt, Model: opt.Model})
		if isConflict(err) && opt.SessionID != "" {
			err = fmt.Errorf("%w\n(nexus run --session %s without a prompt joins the run that is going)", err, sessionID)
		}
	}
	if err != nil {
		return err
	}
	defer onInterrupt(ctx, b, sessionID, o, stopRun)()

	if st, ok := readDevState(o.Env); ok && opt.Conn.GatewayURL == "" && st.OrchestratorAddr == opt.Conn.Addr {
		f.dev = true
	}
	if opt.Output != OutputJSON {
		f.r = NewRenderer(o.Stdout, o.TTY, o.now)
		if opt.ViewsDir != "" {
			f.r.ViewsDir = filepath.Join(opt.ViewsDir, sessionID)
		}
	}
	if o.Stdin != nil && o.StdinTTY {
		f.lines = &lineReader{r: bufio.NewReader(o.Stdin)}
	}
	return f.follow(ctx, stream)
}

type received struct {
	c   *agentv1.StreamChunk
	err error
}

// follower prints one run's stream and acts on it.
type follower struct {
	b       backend
	session string
	// host is the runtime that is not linked nexus run carries calls to;
	// nil when it only watches.
	host    *Host
	hostApp string
	o       IO
	r       *Renderer
	lines   *lineReader

	chunks chan received
	// ended is done once the stream said how the run ended (or broke):
	// a host call in flight is then abandoned.
	ended context.Context
	// end is how the run ended: nil for complete, the error otherwise.
	end     error
	sawEnd  bool
	carried map[string]bool
	// dev is true when the orchestrator is the one process of nexus dev:
	// when it goes away, no other replica carries the run on.
	dev bool
	// waitFor, on a run joined midway, is the call that was pending then:
	// the calls replayed before it were decided already, so they are shown
	// and not carried or reviewed again.
	waitFor string
}

// join follows the session's run that is going, from its start, and takes
// up the call pending now (a script awaiting review, say).
func (f *follower) join(ctx context.Context) (chunkStream, error) {
	s, err := f.b.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: f.session})
	if err != nil {
		return nil, err
	}
	run := s.GetActiveRunId()
	if run == "" {
		return nil, fmt.Errorf("run: session %s has no run going to join; give a prompt to start one: nexus run --session %s \"...\"", f.session, f.session)
	}
	p := s.GetPendingToolCall()
	f.waitFor = p.GetToolCallId()
	what := "it is running"
	switch {
	case p.GetReview() == agentv1.ReviewState_REVIEW_STATE_AWAITING:
		what = "a script awaits your review"
	case p != nil:
		what = "a script is with the host"
	}
	fmt.Fprintf(f.o.Stderr, "joining run %s of session %s (%s); what it did so far comes first\n", run, f.session, what)
	return f.b.StreamRunEvents(ctx, &agentv1.StreamRunEventsRequest{RunId: run})
}

// follow reads the stream to its end. A reader goroutine sees the run's end
// even while the loop waits for the host or the person, so a run cancelled
// elsewhere stops this one at once.
func (f *follower) follow(ctx context.Context, stream chunkStream) error {
	f.chunks = make(chan received, chunkBuffer)
	ended, markEnded := context.WithCancel(context.Background())
	defer markEnded()
	f.ended = ended
	go func() {
		for {
			c, err := stream.Recv()
			if err != nil || c.GetError() != nil || c.GetComplete() != nil {
				markEnded()
			}
			f.chunks <- received{c, err}
			if err != nil {
				return
			}
		}
	}()
	// The reader never closes f.chunks: its last send is an error, which
	// handle always ends the loop on.
	for {
		if done, err := f.handle(ctx, <-f.chunks); done {
			return err
		}
	}
}

// carriedID says whether this follower carried the call with id.
func (f *follower) carriedID(id string) bool {
	for key := range f.carried {
		if strings.HasPrefix(key, id+"\x00") {
			return true
		}
	}
	return false
}

// handle acts on one received chunk; done says the loop is over.
func (f *follower) handle(ctx context.Context, rv received) (bool, error) {
	if rv.err != nil {
		switch {
		case f.sawEnd:
			return true, f.end
		case ctx.Err() != nil:
			return true, interruptedError(ctx, nil)
		case errors.Is(rv.err, io.EOF):
			return true, errors.New("run: the stream ended before the run completed")
		case f.dev && isUnavailable(rv.err):
			return true, fmt.Errorf("run: nexus dev stopped before the run ended; session %s keeps it: start nexus dev again, "+
				"then open the session in the web UI or continue it with nexus run --session %s", f.session, f.session)
		}
		return true, rv.err
	}
	c := rv.c
	if w := c.GetMetadata().GetHostWaiting(); w != nil && f.carriedID(w.GetToolCallId()) {
		return false, nil // This follower carried it: it waits for nobody.
	}
	if f.r != nil {
		f.r.Chunk(c)
	} else if err := writeJSON(f.o.Stdout, c); err != nil {
		return true, err
	}
	switch {
	case c.GetToolCall() != nil:
		if f.sawEnd || ctx.Err() != nil {
			return false, nil // Ending: nothing more is carried.
		}
		if f.waitFor != "" {
			if c.GetToolCall().GetToolCallId() != f.waitFor {
				return false, nil // Decided before this follower joined.
			}
			f.waitFor = ""
		}
		if done, err := f.toolCall(ctx, c.GetToolCall()); done || err != nil {
			return true, err
		}
	case c.GetError() != nil:
		f.sawEnd = true
		e := c.GetError()
		f.end = fmt.Errorf("run %s failed: %s: %s", c.GetRunId(), codeText(e.GetCode()), e.GetMessage())
		if ctx.Err() != nil {
			f.end = interruptedError(ctx, c)
		}
	case c.GetComplete() != nil:
		f.sawEnd = true
		if ctx.Err() != nil {
			f.end = interruptedError(ctx, c)
		}
	}
	return false, nil
}

// toolCall carries a call with a result token once per (id, token), and
// asks the person about a call awaiting review.
// done says the loop is over (the run ended while the person was asked).
func (f *follower) toolCall(ctx context.Context, call *agentv1.ToolCall) (done bool, err error) {
	if call.GetReview() == agentv1.ReviewState_REVIEW_STATE_AWAITING {
		return f.review(ctx, call)
	}
	if call.GetResultToken() == "" {
		return false, nil // Nothing a courier may run.
	}
	if call.GetHostId() != "" || f.host == nil {
		// The session's linked host carries it from its delivery log (a
		// session with none yet waits for the first to link, which the
		// stream says); the run's stream shows its result like any other.
		return false, nil
	}
	key := call.GetToolCallId() + "\x00" + call.GetResultToken()
	if f.carried[key] {
		return false, nil
	}
	f.carried[key] = true
	return false, f.carry(ctx, call)
}

func (f *follower) carry(ctx context.Context, call *agentv1.ToolCall) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(f.ended, cancel)
	defer stop()
	done := func(*hostv1.HostResult) {}
	if f.r != nil {
		done = f.r.HostWorking(f.hostApp, call)
	}
	res, failure := f.host.Carry(cctx, f.hostApp, call)
	done(res)
	if cctx.Err() != nil {
		return nil // The run ended or the person interrupted while the host worked.
	}
	req := &agentv1.SubmitToolResultRequest{SessionId: f.session, ToolCallId: call.GetToolCallId(), ResultToken: call.GetResultToken()}
	if failure != nil {
		fmt.Fprintf(f.o.Stderr, "could not deliver the script to %s: %s\n", hostName(f.hostApp), failure.GetMessage())
		req.CourierFailure = failure
	} else {
		req.Result = res
	}
	err := f.b.SubmitToolResult(ctx, req, call.GetTraceparent())
	if err != nil && ctx.Err() == nil && f.ended.Err() == nil {
		return err
	}
	return nil
}
