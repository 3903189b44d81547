package eval

import (
	"context"
	"fmt"
	"strings"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// Executor runs a script on a host runtime: the runtime's own client, or the
// command's courier to it.
type Executor interface {
	Execute(ctx context.Context, req *hostv1.ExecuteRequest) (*hostv1.HostResult, error)
}

// Prepare gives the task its starting document: the active document
// emptied, then the setup run in one transaction. These requests carry no
// tool call id, so the runtime runs each one (nothing to deduplicate).
func Prepare(ctx context.Context, ex Executor, t Task) error {
	if err := run(ctx, ex, "clear the document", t.Host.clearCode(), hostv1.Mode_MODE_TRANSACTION); err != nil {
		return err
	}
	if code := t.SetupCode(); code != "" {
		return run(ctx, ex, "set up "+t.ID, code, hostv1.Mode_MODE_TRANSACTION)
	}
	return nil
}

// Check runs the task's checker on the document as it is, read-only, with
// the run's final message as the answer.
func Check(ctx context.Context, ex Executor, t Task, answer string) (bool, string, error) {
	res, err := ex.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: t.CheckCode(answer)})
	if err != nil {
		return false, "", fmt.Errorf("check %s: %w", t.ID, err)
	}
	ok, why := Verdict(res)
	return ok, why, nil
}

// Solve prepares the task, runs a solution's scripts straight on the host
// and checks the result; the answer of an inspection is what its last
// script printed. A script that fails fails the solution.
func Solve(ctx context.Context, ex Executor, t Task, s Solution) (bool, string, error) {
	if err := Prepare(ctx, ex, t); err != nil {
		return false, "", err
	}
	answer := ""
	for i, code := range s.Scripts {
		res, err := ex.Execute(ctx, &hostv1.ExecuteRequest{Mode: t.ScriptMode(), Code: code, TransactionName: fmt.Sprintf("%s %s %d", t.ID, s.Name, i+1)})
		if err != nil {
			return false, "", fmt.Errorf("%s %s script %d: %w", t.ID, s.Name, i+1, err)
		}
		if e := res.GetError(); e != nil {
			return false, fmt.Sprintf("script %d failed: %s: %s", i+1, e.GetType(), e.GetMessage()), nil
		}
		answer = res.GetStdout()
	}
	return Check(ctx, ex, t, answer)
}

func run(ctx context.Context, ex Executor, what, code string, mode hostv1.Mode) error {
	res, err := ex.Execute(ctx, &hostv1.ExecuteRequest{Mode: mode, Code: code, TransactionName: what})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if e := res.GetError(); e != nil {
		return fmt.Errorf("%s: %s: %s (line %d)", what, e.GetType(), strings.TrimSpace(e.GetMessage()), e.GetLine())
	}
	return nil
}
