package orchestrator

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// AcceptsUsers marks the orchestrator as the service users call: besides the
// gateway's assertions it checks the credentials the CLI presents.
func (s *Service) AcceptsUsers() {}

// Ready reports whether the orchestrator can serve runs: its shared store
// answers, and the model-router and the capability service are serving. Its
// gRPC health follows, and the gateway's /readyz follows that.
func (s *Service) Ready(ctx context.Context) error {
	if c, ok := s.store.(interface{ Client() redis.UniversalClient }); ok {
		if err := c.Client().Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis (NEXUS_REDIS_URL): %w", err)
		}
	}
	for _, peer := range []struct {
		name string
		conn *grpc.ClientConn
	}{{"model-router", s.routerConn}, {"capability", s.capConn}} {
		// Waiting for the connection (within ctx) lets a peer that is being
		// reconnected answer instead of failing the check at once.
		resp, err := healthpb.NewHealthClient(peer.conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
		if err != nil {
			return fmt.Errorf("%s: %w", peer.name, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("%s is %s", peer.name, resp.GetStatus())
		}
	}
	return nil
}
