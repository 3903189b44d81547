// Package serve runs gRPC and HTTP servers until their context ends, then shuts
// them down gracefully within a bounded time.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"nexus.local/platform/logging"
)

// ShutdownTimeout bounds a graceful shutdown; open streams are cut after it.
const ShutdownTimeout = 3 * time.Second

// GRPC serves s on lis until ctx ends, then stops it gracefully. Streams still
// open after ShutdownTimeout are closed.
func GRPC(ctx context.Context, lis net.Listener, s *grpc.Server) error {
	log := logging.FromContext(ctx)
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(lis) }()
	log.Info("grpc serving", "addr", lis.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve grpc: %w", err)
	case <-ctx.Done():
	}

	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(ShutdownTimeout):
		s.Stop()
		<-done
	}
	log.Info("grpc stopped", "addr", lis.Addr().String())
	return nil
}

// HTTP serves h on lis until ctx ends, then shuts it down. Long-lived responses
// (event streams) must watch their request context, which ends at shutdown.
func HTTP(ctx context.Context, lis net.Listener, h http.Handler) error {
	return HTTPServer(ctx, lis, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second})
}

// HTTPServer is HTTP with the caller's server settings (timeouts, header
// size); its BaseContext is set to ctx.
func HTTPServer(ctx context.Context, lis net.Listener, srv *http.Server) error {
	log := logging.FromContext(ctx)
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	log.Info("http serving", "addr", lis.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if err != nil {
		return fmt.Errorf("shutdown http: %w", err)
	}
	log.Info("http stopped", "addr", lis.Addr().String())
	return nil
}
