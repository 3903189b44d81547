package call

// This file holds the causes and errors with which a call's stages end or
// suspend a run.

import (
	"context"
	"errors"
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
	return StoreErr(what, err)
}

// StoreErr is the failure a store error ends a run with: a full store is
// ERROR_CODE_STORE_FULL, which retrying does not help until room is made on
// the server, apart from a store that is away (ERROR_CODE_STATE_UNAVAILABLE),
// which passes.
func StoreErr(what string, err error) *RunError {
	if errors.Is(err, state.ErrFull) {
		return &RunError{Code: agentv1.ErrorCode_ERROR_CODE_STORE_FULL, Message: fmt.Sprintf("%s: %v", what, err), Retryable: false}
	}
	return &RunError{Code: agentv1.ErrorCode_ERROR_CODE_STATE_UNAVAILABLE, Message: fmt.Sprintf("%s: %v", what, err), Retryable: true}
}

// Public is the error as clients see it: the code as it is, no default.
func (e *RunError) Public() *agentv1.Error {
	return &agentv1.Error{Code: e.Code, VendorCode: e.VendorCode, Message: e.Message, Retryable: e.Retryable}
}
