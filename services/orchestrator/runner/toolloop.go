package runner

// This file carries the tool calls of one model turn, in order, within the run's budgets.

import (
	"context"
	"errors"

	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/services/orchestrator/call"
)

// runTools runs the calls of the last assistant message that have no result
// yet, one at a time; a call sent to the courier suspends the run. Once every
// call has its result the results join the transcript.
// What the model is told of a call that gets no host result because its run
// stopped. notRunText: the call never left (an earlier call of the same
// message stopped the run). unansweredText: a run that died may have sent
// the call, so whether it ran is not known, only that no result came.
const (
	notRunText     = "Not run: the run stopped before this call."
	unansweredText = "No result: the run stopped before this call was answered."
)

// notRun is the result of a call that never left.
func notRun(u *modelv1.ToolUseBlock) *modelv1.ToolResultBlock {
	return &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: notRunText}
}

func (r *runner) runTools(ctx context.Context, uses []*modelv1.ToolUseBlock) error {
	var stopErr error
	remaining := uses[min(len(r.RS.GetResults()), len(uses)):]
	for i, u := range remaining {
		if stopErr != nil {
			// Every call gets a result, so the transcript stays valid for the
			// next run even when this one stops here.
			r.RS.Results = append(r.RS.Results, notRun(u))
			continue
		}
		var res *modelv1.ToolResultBlock
		var err error
		if p := r.RS.GetPending(); p != nil && call.PendingUse(p) == u.GetId() {
			res, err = r.Collect(ctx, u, p)
		} else {
			res, err = r.execute(ctx, u)
		}
		if errors.Is(err, call.ErrSuspended) {
			return err
		}
		if res == nil && err != nil && (errors.Is(context.Cause(ctx), errLeaseLost) || errors.Is(context.Cause(ctx), ErrDraining)) {
			return err
		}
		if res == nil {
			res = notRun(u)
		}
		r.RS.Results = append(r.RS.Results, res)
		r.RS.Pending = nil
		stopErr = err
		// After the last call the transcript is saved next, which records
		// the same progress; a replica that stops in between decides the
		// last call again and gets the same answer.
		if i < len(remaining)-1 || stopErr != nil {
			if err := r.SaveRun(ctx); err != nil {
				return err
			}
		}
	}
	results := &modelv1.Message{Role: modelv1.Role_ROLE_USER}
	for _, res := range r.RS.GetResults() {
		results.Content = append(results.Content, toolResult(res))
	}
	r.msgs = append(r.msgs, results)
	if stopErr != nil {
		if err := r.save(ctx); err != nil {
			return err
		}
	} else {
		// The next turn's start saves the transcript in the same round trip
		// as the run state and its first chunk; the loop saves it on its
		// own on every other way out.
		r.unsaved = true
	}
	// The next turn saves the run state without these results; until then
	// the transcript, which ends with them, says where the run is.
	r.RS.Results = nil
	return stopErr
}

// clampBudget keeps a budget within what the model can produce.
func (r *runner) clampBudget(n int) int {
	if m := int(r.model.GetMaxOutputTokens()); m > 0 && n > m {
		return m
	}
	return n
}
