package mcpserver

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/status"

	"nexus.local/platform/refusal"
)

// ReasonKey is the _meta key of a tool error that passes on a refusal of
// Nexus: its RefusalReason's name, which an MCP client decides by (the
// text is for the model and the person).
const ReasonKey = "nexus/refusalReason"

// refusedError is a refusal of the orchestrator passed on to the MCP client:
// what the tool was doing, then the refusal's sentence.
type refusedError struct {
	what string
	err  error
}

// refused passes err, a refusal of the orchestrator, on as a tool error.
func refused(what string, err error) error { return &refusedError{what: what, err: err} }

func (e *refusedError) Error() string { return e.what + ": " + status.Convert(e.err).Message() }

func (e *refusedError) Unwrap() error { return e.err }

// withReasons puts the reason of a tool error that passes on a refusal into
// the result's _meta.
func withReasons(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var re *refusedError
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError && errors.As(r.GetError(), &re) {
			if r.Meta == nil {
				r.Meta = mcp.Meta{}
			}
			r.Meta[ReasonKey] = refusal.Of(re.err).String()
		}
		return res, err
	}
}
