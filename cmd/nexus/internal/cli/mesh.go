package cli

import (
	"context"
	"fmt"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// Mesh is the part of the public API another command drives runs through
// (nexus eval): the very connection nexus run uses, over the orchestrator's
// gRPC API or the gateway.
type Mesh interface {
	CreateSession(ctx context.Context, req *agentv1.CreateSessionRequest) (*agentv1.Session, error)
	Run(ctx context.Context, req *agentv1.RunRequest) (ChunkStream, error)
	SubmitToolResult(ctx context.Context, req *agentv1.SubmitToolResultRequest, traceparent string) error
	ListRuns(ctx context.Context, req *agentv1.ListRunsRequest) (*agentv1.ListRunsResponse, error)
	Where() string
	Close() error
}

// ChunkStream is a run's stream of chunks.
type ChunkStream = chunkStream

// ConnectMesh opens the connection c names, with the caller's credentials.
func ConnectMesh(ctx context.Context, c Conn, o IO) (Mesh, error) { return connect(ctx, c, o) }

// Reach asks Nexus for one session, so a command about to start work finds
// out once, before it starts anything, that nobody answers at m's address.
func Reach(ctx context.Context, m Mesh) error {
	b, ok := m.(backend)
	if !ok {
		return nil
	}
	_, err := b.ListSessions(ctx, &agentv1.ListSessionsRequest{PageSize: 1})
	if isUnavailable(err) {
		return UsageError{fmt.Errorf("no Nexus answers: start nexus dev, or name a running Nexus with --addr or --gateway: %w", err)}
	}
	return err
}
