package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
)

// failingCapability answers every ListHosts with one gRPC status, as a
// capability service that refuses or fails would.
type failingCapability struct {
	capabilityv1.UnimplementedCapabilityServiceServer
	err error
}

func (f failingCapability) ListHosts(context.Context, *capabilityv1.ListHostsRequest) (*capabilityv1.ListHostsResponse, error) {
	return nil, f.err
}

// TestPeerErrorsKeepTheirCode calls a real capability service over gRPC
// that fails with each code and checks what the orchestrator answers: a
// refusal or a permanent failure keeps its code, so it does not read as
// retryable; only a peer that could not be reached or failed without
// saying how is Unavailable; a refused mesh identity is Internal.
func TestPeerErrorsKeepTheirCode(t *testing.T) {
	tests := []struct {
		peer error
		want codes.Code
	}{
		{status.Error(codes.InvalidArgument, "page_token is not one this service wrote"), codes.InvalidArgument},
		{status.Error(codes.NotFound, "no such session"), codes.NotFound},
		{status.Error(codes.FailedPrecondition, "audit log not migrated"), codes.FailedPrecondition},
		{status.Error(codes.ResourceExhausted, "too many requests"), codes.ResourceExhausted},
		{status.Error(codes.Unimplemented, "unknown method"), codes.Unimplemented},
		{status.Error(codes.Internal, "bug"), codes.Internal},
		{status.Error(codes.DataLoss, "corrupt row"), codes.DataLoss},
		{status.Error(codes.Unauthenticated, "no client certificate"), codes.Internal},
		{status.Error(codes.PermissionDenied, "not a mesh peer"), codes.Internal},
		{status.Error(codes.Unavailable, "draining"), codes.Unavailable},
		{errors.New("plain error, no status"), codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(status.Code(tt.peer).String(), func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := grpc.NewServer()
			capabilityv1.RegisterCapabilityServiceServer(srv, failingCapability{err: tt.peer})
			go func() { _ = srv.Serve(l) }()
			t.Cleanup(srv.Stop)
			conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close() })
			_, callErr := capabilityv1.NewCapabilityServiceClient(conn).ListHosts(t.Context(), &capabilityv1.ListHostsRequest{})
			got := peerStatus(callErr, "list hosts from the capability service")
			st := status.Convert(got)
			if st.Code() != tt.want {
				t.Fatalf("peer said %v; answered %v, want %v", tt.peer, st.Code(), tt.want)
			}
			if !strings.HasPrefix(st.Message(), "list hosts from the capability service: ") {
				t.Errorf("message %q does not say which call failed", st.Message())
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, callErr := capabilityv1.NewCapabilityServiceClient(conn).ListHosts(t.Context(), &capabilityv1.ListHostsRequest{})
		if got := status.Code(peerStatus(callErr, "list hosts")); got != codes.Unavailable {
			t.Fatalf("unreachable peer answered %v, want Unavailable (%v)", got, callErr)
		}
	})
	t.Run("caller cancelled", func(t *testing.T) {
		if got := status.Code(peerStatus(fmt.Errorf("dial: %w", context.Canceled), "list hosts")); got != codes.Canceled {
			t.Fatalf("cancelled call answered %v, want Canceled", got)
		}
	})
}
