// Package rpc builds gRPC servers and client connections the same way for every
// Nexus service: OpenTelemetry instrumentation, the grpc.health.v1 service,
// panic recovery, and client-side round-robin balancing across peers.
package rpc

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/refusal"
	"nexus.local/platform/telemetry"
)

// roundRobin balances calls across every address a target resolves to.
const roundRobin = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// listScheme names the resolver used for comma-separated peer lists.
const listScheme = "nexus-peers"

// MaxConnectionAge is how long a client keeps one connection before the
// server asks it to reconnect (GOAWAY): round-robin clients then re-resolve
// their peers, so new replicas get traffic after a scale-up.
const MaxConnectionAge = 5 * time.Minute

// MaxConnectionAgeGrace lets streams that are open when a connection ages out
// finish: a run's stream can wait on a host for many minutes.
const MaxConnectionAgeGrace = time.Hour

// Server is a gRPC server with its health service.
type Server struct {
	*grpc.Server
	Health *health.Server
}

// NewServer returns a gRPC server with tracing, metrics, panic recovery, the
// health service and server reflection (v1) registered. Reflection lets grpcurl
// and grpcui call a service without its proto files; it passes through the
// same authentication interceptors as every other call. Callers register their services, then mark them
// serving with MarkServing.
func NewServer(tel *telemetry.Telemetry, log *slog.Logger, opts ...grpc.ServerOption) *Server {
	base := []grpc.ServerOption{
		grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(tel.Tracers),
			otelgrpc.WithMeterProvider(tel.Meters),
			otelgrpc.WithPropagators(tel.Propagator),
		)),
		grpc.ChainUnaryInterceptor(recoverUnary(log)),
		grpc.ChainStreamInterceptor(recoverStream(log)),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: MaxConnectionAge, MaxConnectionAgeGrace: MaxConnectionAgeGrace}),
	}
	base = append(base, sizeServerOptions()...)
	// opts come last, so a caller's keepalive settings replace the defaults.
	s := grpc.NewServer(append(base, opts...)...)
	h := health.NewServer()
	healthpb.RegisterHealthServer(s, h)
	reflection.RegisterV1(s)
	return &Server{Server: s, Health: h}
}

// MarkServing reports every registered service, and the server as a whole, as SERVING.
func (s *Server) MarkServing() {
	s.Health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	for name := range s.GetServiceInfo() {
		s.Health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
}

// Dial returns one connection to a peer, meant to be reused for the life of the
// process. addrs is one address, a comma-separated list, or any gRPC target
// such as dns:///orchestrator:7001; calls are balanced round-robin.
func Dial(addrs string, tel *telemetry.Telemetry, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	addrs = strings.TrimSpace(addrs)
	if addrs == "" {
		return nil, fmt.Errorf("dial: no peer address")
	}
	base := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(roundRobin),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tel.Tracers),
			otelgrpc.WithMeterProvider(tel.Meters),
			otelgrpc.WithPropagators(tel.Propagator),
		)),
	}
	base = append(base, sizeDialOptions()...)
	target := addrs
	if !strings.Contains(addrs, "://") {
		r := manual.NewBuilderWithScheme(listScheme)
		var state resolver.State
		for _, a := range strings.Split(addrs, ",") {
			if a = strings.TrimSpace(a); a != "" {
				// The address's host is the name its TLS certificate is
				// checked against; the list's own authority names nothing.
				host, _, err := net.SplitHostPort(a)
				if err != nil {
					host = a
				}
				state.Addresses = append(state.Addresses, resolver.Address{Addr: a, ServerName: host})
			}
		}
		r.InitialState(state)
		base = append(base, grpc.WithResolvers(r))
		target = listScheme + ":///peers"
	}
	conn, err := grpc.NewClient(target, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addrs, err)
	}
	return conn, nil
}

func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in handler", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				err = refusal.Newf(codes.Internal, agentv1.RefusalReason_REFUSAL_REASON_INTERNAL, "internal error in %s", info.FullMethod)
			}
		}()
		return handler(ctx, req)
	}
}

func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in handler", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				err = refusal.Newf(codes.Internal, agentv1.RefusalReason_REFUSAL_REASON_INTERNAL, "internal error in %s", info.FullMethod)
			}
		}()
		return handler(srv, ss)
	}
}
