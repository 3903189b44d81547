// Package apptest serves a component of the mesh in process, as its binary
// does, on a loopback gRPC listener, for tests of it and of its callers.
package apptest

import (
	"context"
	"net"
	"testing"

	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/rpc"
)

// Serve builds a component from l and serves it on a loopback listener
// until ctx ends or the test does; it returns the listener's address.
func Serve(ctx context.Context, t testing.TB, service string, l config.Lookuper, build app.Builder) string {
	t.Helper()
	e, err := app.NewEnv(ctx, service, l)
	if err != nil {
		t.Fatalf("%s env: %v", service, err)
	}
	c, err := build(e.Context(ctx), e)
	if err != nil {
		t.Fatalf("start %s: %v", service, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, users := c.(app.UserFacing)
	opts, err := e.ServerOptions(ctx, users)
	if err != nil {
		t.Fatalf("%s server: %v", service, err)
	}
	srv := rpc.NewServer(e.Tel, e.Log, opts...)
	c.Register(srv)
	srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for %s: %v", service, err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}
