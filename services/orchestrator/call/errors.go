package call

// This file holds the causes and errors with which a call's stages end or
// suspend a run.

import (
	"context"
	"fmt"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/state"
)

// Causes that end a worker's hold on a run, which a call's stages give.
const (
	// ErrCancelled ends the run: it was cancelled.
	ErrCancelled = state.Error("the run was cancelled")
	// ErrSuspended is no failure: the run waits for its tool result (or is
	// handed over) and its worker ends; the run lives on in the store.
	ErrSuspended = state.Error("the run is suspended")
)

// RunError is a failure that ends a run with an error chunk.
type RunError struct {
	Code agentv1.ErrorCode
	// VendorCode is the model vendor's failure as the model-router named
	// it ("overloaded", "rate_limited", ...), when Code is
	// ERROR_CODE_MODEL_ERROR because of one.
	VendorCode string
	Message    string
	Retryable  bool
}

func (e *RunError) Error() string { return metrics.ErrorCodeName(e.Public()) + ": " + e.Message }

// StateErr reports a store failure, or the cause when the run was stopped.
func (r *Call) StateErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return &RunError{Code: agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, Message: fmt.Sprintf("%s: %v", what, err), Retryable: true}
}

// Public is the error as clients see it: the code as it is, no default.
func (e *RunError) Public() *agentv1.Error {
	return &agentv1.Error{Code: e.Code, VendorCode: e.VendorCode, Message: e.Message, Retryable: e.Retryable}
}
