package rpc

import (
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The mesh's message sizes, one set for every server and client, sized from
// the input limits the gateway enforces: gRPC's own default of 4 MiB sits
// under them, so a result the gateway accepted would be refused one hop on.
const (
	// DefaultMaxToolResultBytes is the gateway's default bound on one tool
	// result, images included (NEXUS_MAX_TOOL_RESULT_BYTES).
	DefaultMaxToolResultBytes = 16 << 20
	// EnvelopeBytes is the room a message needs around the payload the
	// gateway bounded: ids, the result token, field tags, session state.
	EnvelopeBytes = 1 << 20
	// MaxMessageBytes bounds every gRPC message sent or received. It holds
	// a tool result at the gateway's largest setting it allows (see
	// MaxToolResultBytes), and a model turn: its transcript keeps only the
	// newest views in full (the model-router's image history), so turns do
	// not grow with the number of views a session made.
	MaxMessageBytes = 64 << 20
	// MaxToolResultBytes is the largest NEXUS_MAX_TOOL_RESULT_BYTES the mesh
	// can carry: a result and its envelope fit one message.
	MaxToolResultBytes = MaxMessageBytes - EnvelopeBytes
)

// sizeServerOptions configure a server with the mesh's message sizes.
func sizeServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes)}
}

// sizeDialOptions configure a client with the mesh's message sizes.
func sizeDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes))}
}

// IsMessageTooLarge reports whether err is gRPC refusing a message over its
// size limit. gRPC says so with ResourceExhausted, which HTTP would map to
// 429 and a client would retry; a size refusal is final.
func IsMessageTooLarge(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return false
	}
	msg := st.Message()
	return strings.Contains(msg, "message larger than max") || strings.Contains(msg, "message too large")
}
