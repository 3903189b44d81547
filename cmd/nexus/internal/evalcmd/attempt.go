package evalcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"nexus.local/cmd/nexus/internal/cli"
	tasks "nexus.local/eval"
	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// Tokens is a run's token accounting and its cost at the catalog's prices.
type Tokens struct {
	Input      int64   `json:"input"`
	Output     int64   `json:"output"`
	CacheRead  int64   `json:"cacheRead"`
	CacheWrite int64   `json:"cacheWrite"`
	CostUSD    float64 `json:"costUsd"`
}

func (t *Tokens) add(o Tokens) {
	t.Input += o.Input
	t.Output += o.Output
	t.CacheRead += o.CacheRead
	t.CacheWrite += o.CacheWrite
	t.CostUSD += o.CostUSD
}

// Attempt is one run of one task and its checker's verdict.
type Attempt struct {
	Task   string `json:"task"`
	Repeat int    `json:"repeat"`
	Passed bool   `json:"passed"`
	// Why says why a failed attempt failed: the checker's message, or how
	// the run ended when it did not complete.
	Why       string `json:"why,omitempty"`
	SessionID string `json:"sessionId"`
	RunID     string `json:"runId"`
	// Outcome is "completed" or the code of the error that ended the run.
	Outcome     string `json:"outcome"`
	Turns       int32  `json:"turns"`
	Inspections int    `json:"inspections"`
	Automations int    `json:"automations"`
	// Fixes are automations after one that did not commit; iterations
	// follow one that did (the loop's two budgets).
	Fixes      int    `json:"fixes"`
	Iterations int    `json:"iterations"`
	Rollbacks  int    `json:"rollbacks"`
	CapsHit    int    `json:"capsHit"`
	Tokens     Tokens `json:"tokens"`
	WallMs     int64  `json:"wallMs"`
	// Answer is the run's final message.
	Answer string `json:"answer"`
	// View is a PNG of the document after the run (in report.html, not
	// in report.json).
	View []byte `json:"-"`
}

// attempt runs task once on h through the mesh: a fresh document (cleared,
// then the task's setup), an eval session of its own with review off, the run
// with every tool call carried to h, then the checker on what it left.
func attempt(ctx context.Context, m cli.Mesh, h Host, model string, t tasks.Task, repeat int) (Attempt, error) {
	a := Attempt{Task: t.ID, Repeat: repeat}
	if err := tasks.Prepare(ctx, h, t); err != nil {
		return a, fmt.Errorf("prepare the document of %s: %w", t.ID, err)
	}
	start := time.Now()
	// An eval session binds to no linked host: its calls go to h alone,
	// never to a person's FreeCAD, and it stays out of their session list.
	s, err := m.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: h.App(), Model: model, ReviewPolicy: agentv1.ReviewPolicy_REVIEW_POLICY_NONE, Eval: true})
	if err != nil {
		return a, err
	}
	a.SessionID = s.GetSessionId()
	stream, err := m.Run(ctx, &agentv1.RunRequest{SessionId: a.SessionID, Prompt: t.Prompt, Model: model})
	if err != nil {
		return a, err
	}
	if err := follow(ctx, m, h, stream, &a); err != nil {
		return a, err
	}
	a.WallMs = time.Since(start).Milliseconds()
	a.View = finalView(ctx, h)
	if a.Outcome != "completed" {
		a.Passed = false
		return a, nil
	}
	ok, why, err := tasks.Check(ctx, h, t, a.Answer)
	if err != nil {
		return a, err
	}
	a.Passed, a.Why = ok, why
	return a, nil
}

// follow reads a run to its end, carrying each tool call once and
// counting what the loop did.
func follow(ctx context.Context, m cli.Mesh, h Host, stream cli.ChunkStream, a *Attempt) error {
	carried := map[string]bool{}
	// An automation the model wrote (its input streamed) that never became
	// a call to carry was refused by a spent budget.
	written, called := map[string]bool{}, map[string]bool{}
	defer func() {
		for id := range written {
			if !called[id] {
				a.CapsHit++
			}
		}
	}()
	lastCommitted := -1 // -1: no automation yet; 0: the last did not commit; 1: it did
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if a.Outcome == "" {
				return errors.New("the run's stream ended before the run did")
			}
			return nil
		}
		if err != nil {
			if a.Outcome != "" {
				return nil
			}
			return fmt.Errorf("read the run of %s: %w", a.Task, err)
		}
		if id := c.GetRunId(); id != "" {
			a.RunID = id
		}
		switch {
		case c.GetToolInputDelta() != nil:
			if d := c.GetToolInputDelta(); d.GetToolName() == agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION {
				written[d.GetToolCallId()] = true
			}
		case c.GetToolCall() != nil:
			call := c.GetToolCall()
			called[call.GetToolCallId()] = true
			key := call.GetToolCallId() + "\x00" + call.GetResultToken()
			if call.GetResultToken() == "" || carried[key] {
				continue
			}
			carried[key] = true
			res, failure := h.Carry(ctx, call)
			req := &agentv1.SubmitToolResultRequest{SessionId: a.SessionID, ToolCallId: call.GetToolCallId(), ResultToken: call.GetResultToken(),
				Result: res, CourierFailure: failure}
			if failure != nil {
				req.Result = nil
			}
			switch call.GetToolName() {
			case agentv1.ToolName_TOOL_NAME_EXECUTE_DATA_COLLECTION:
				a.Inspections++
			case agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION:
				a.Automations++
				switch lastCommitted {
				case 0:
					a.Fixes++
				case 1:
					a.Iterations++
				}
				lastCommitted = 0
				if res.GetCommitted() {
					lastCommitted = 1
				} else {
					a.Rollbacks++
				}
			}
			if err := m.SubmitToolResult(ctx, req, call.GetTraceparent()); err != nil {
				return fmt.Errorf("submit the result of %s: %w", call.GetToolCallId(), err)
			}
		case c.GetUsage() != nil:
			u := c.GetUsage()
			a.Turns = u.GetTurns()
			tot := u.GetTotal()
			a.Tokens = Tokens{Input: tot.GetInputTokens(), Output: tot.GetOutputTokens(), CacheRead: tot.GetCacheReadTokens(),
				CacheWrite: tot.GetCacheWriteTokens(), CostUSD: tot.GetCostUsd()}
		case c.GetComplete() != nil:
			a.Outcome, a.Answer = "completed", c.GetComplete().GetText()
		case c.GetError() != nil:
			e := c.GetError()
			a.Outcome = enumText(e.GetCode().String(), "ERROR_CODE_")
			a.Why = fmt.Sprintf("the run ended with an error (%s): %s", a.Outcome, e.GetMessage())
		}
	}
}
