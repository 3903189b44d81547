package app

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"nexus.local/platform/config"
	"nexus.local/platform/rpc"
)

// countingListener counts the connections a server accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// TestMaxConnectionAge shows a client of a Nexus gRPC server moving to a new
// connection once its connection reaches NEXUS_GRPC_MAX_CONNECTION_AGE,
// without a failed call: that is what lets round-robin clients find replicas
// added after they connected.
func TestMaxConnectionAge(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	env, err := NewEnv(ctx, "test", config.Map(map[string]string{
		"NEXUS_GRPC_MAX_CONNECTION_AGE": "200ms", "NEXUS_GRPC_MAX_CONNECTION_AGE_GRACE": "5s", "NEXUS_LOG_LEVEL": "error",
		"NEXUS_INTERNAL_KEY": "app-test-internal-key-0123456789abcdef",
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close(context.Background())
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := &countingListener{Listener: inner}
	done := make(chan error, 1)
	go func() { done <- ServeGRPC(ctx, env, lis, noService{}) }()
	defer func() {
		cancel()
		<-done
	}()

	conn, err := grpc.NewClient(inner.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for lis.accepted.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections after 30 s of calls, want a new one every 200 ms", lis.accepted.Load())
		}
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := client.Check(cctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
		ccancel()
		if err != nil {
			t.Fatalf("a call failed while connections aged out: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConnectionAgeSettings shows the error for an age that cannot work.
func TestConnectionAgeSettings(t *testing.T) {
	_, err := NewEnv(t.Context(), "test", config.Map(map[string]string{"NEXUS_GRPC_MAX_CONNECTION_AGE": "0s"}))
	if err == nil || !strings.Contains(err.Error(), "NEXUS_GRPC_MAX_CONNECTION_AGE") {
		t.Fatalf("err %v, want one naming NEXUS_GRPC_MAX_CONNECTION_AGE", err)
	}
}

// noService serves nothing but health.
type noService struct{}

func (noService) Register(*rpc.Server) {}
func (noService) Close() error         { return nil }
