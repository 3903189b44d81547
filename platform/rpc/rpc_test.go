package rpc_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"nexus.local/platform/logging"
	"nexus.local/platform/rpc"
	"nexus.local/platform/serve"
	"nexus.local/platform/telemetry"
)

func newTel(t *testing.T) *telemetry.Telemetry {
	t.Helper()
	tel, err := telemetry.New(context.Background(), "test", telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

// startServer serves a health-only server on a loopback port until the test ends.
func startServer(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer(tel, logging.FromContext(context.Background()))
	srv.MarkServing()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.GRPC(ctx, lis, srv.Server) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return lis.Addr().String()
}

func TestDialBalancesAcrossAList(t *testing.T) {
	tel := newTel(t)
	a, b := startServer(t, tel), startServer(t, tel)

	conn, err := rpc.Dial(a+", "+b, tel)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)

	seen := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Round robin spreads calls over the peers that are ready; the second
	// connection may still be opening on a loaded machine, so keep calling
	// (within the deadline) until both have answered.
	for i := 0; len(seen) < 2; i++ {
		if i >= 40 {
			time.Sleep(10 * time.Millisecond)
		}
		var p peer.Peer
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true), grpc.Peer(&p))
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("status = %v, want SERVING", resp.GetStatus())
		}
		seen[p.Addr.String()]++
	}
	if len(seen) != 2 {
		t.Fatalf("calls reached %v, want both %s and %s", seen, a, b)
	}
}

func TestDialRejectsEmptyAddress(t *testing.T) {
	_, err := rpc.Dial("  ", newTel(t))
	if err == nil || !strings.Contains(err.Error(), "no peer address") {
		t.Fatalf("err = %v, want a no-peer-address error", err)
	}
}

func TestPanicBecomesInternalError(t *testing.T) {
	tel := newTel(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer(tel, logging.FromContext(context.Background()))
	srv.RegisterService(&panickyDesc, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.GRPC(ctx, lis, srv.Server) }()
	defer func() { cancel(); <-done }()

	conn, err := rpc.Dial(lis.Addr().String(), tel)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Invoke(context.Background(), "/nexus.test.v1.Panicky/Check",
		&healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{}, grpc.WaitForReady(true))
	if err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("err = %v, want an internal error", err)
	}
}

// panickyDesc is a service whose only method panics, to prove the server
// turns the panic into an error and keeps serving.
var panickyDesc = grpc.ServiceDesc{
	ServiceName: "nexus.test.v1.Panicky",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Check",
		Handler: func(_ any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(healthpb.HealthCheckRequest)
			if err := dec(in); err != nil {
				return nil, err
			}
			info := &grpc.UnaryServerInfo{FullMethod: "/nexus.test.v1.Panicky/Check"}
			return interceptor(ctx, in, info, func(context.Context, any) (any, error) {
				var m map[string]int
				//lint:ignore SA5000 the handler must fail at run time to show the recovery.
				m["boom"]++
				return nil, nil
			})
		},
	}},
}
