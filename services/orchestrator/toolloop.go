package orchestrator

// This file carries the tool calls of one model turn, in order, within the run's budgets.

import (
	"context"
	"errors"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// runTools runs the calls of the last assistant message that have no result
// yet, one at a time; a call sent to the courier suspends the run. Once every
// call has its result the results join the transcript.
func (r *runner) runTools(ctx context.Context, uses []*modelv1.ToolUseBlock) error {
	var stopErr error
	remaining := uses[min(len(r.rs.GetResults()), len(uses)):]
	for i, u := range remaining {
		if stopErr != nil {
			// Every call gets a result, so the transcript stays valid for the
			// next run even when this one stops here.
			r.rs.Results = append(r.rs.Results, &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true,
				Text: "Not run: the run stopped before this call."})
			continue
		}
		var res *modelv1.ToolResultBlock
		var err error
		if p := r.rs.GetPending(); p != nil && pendingUse(p) == u.GetId() {
			res, err = r.collect(ctx, u, p)
		} else {
			res, err = r.execute(ctx, u)
		}
		if errors.Is(err, errSuspended) {
			return err
		}
		if res == nil && err != nil && (errors.Is(context.Cause(ctx), errLeaseLost) || errors.Is(context.Cause(ctx), errDraining)) {
			return err
		}
		if res == nil {
			res = &modelv1.ToolResultBlock{ToolUseId: u.GetId(), Name: u.GetName(), IsError: true, Text: "Not run: the run stopped before this call."}
		}
		r.rs.Results = append(r.rs.Results, res)
		r.rs.Pending = nil
		stopErr = err
		// After the last call the transcript is saved next, which records
		// the same progress; a replica that stops in between decides the
		// last call again and gets the same answer.
		if i < len(remaining)-1 || stopErr != nil {
			if err := r.saveRun(ctx); err != nil {
				return err
			}
		}
	}
	results := &modelv1.Message{Role: modelv1.Role_ROLE_USER}
	for _, res := range r.rs.GetResults() {
		results.Content = append(results.Content, toolResult(res))
	}
	r.msgs = append(r.msgs, results)
	if err := r.save(ctx); err != nil {
		return err
	}
	// The next turn saves the run state without these results; until then
	// the transcript, which ends with them, says where the run is.
	r.rs.Results = nil
	return stopErr
}

// clampBudget keeps a budget within what the model can produce.
func (r *runner) clampBudget(n int) int {
	if m := int(r.model.GetMaxOutputTokens()); m > 0 && n > m {
		return m
	}
	return n
}
