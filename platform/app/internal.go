package app

import (
	"context"
	"net/http"

	"nexus.local/platform/serve"
)

// internalServer is the listener for metrics and profiles (NEXUS_METRICS_ADDR).
type internalServer struct {
	addr string
	stop func()
}

// startInternal binds addr now, so a taken port fails the process at start,
// and serves h until stop.
func startInternal(ctx context.Context, addr string, h http.Handler) (*internalServer, error) {
	lis, err := Listen(addr, "NEXUS_METRICS_ADDR")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = serve.HTTP(ctx, lis, h)
	}()
	return &internalServer{addr: lis.Addr().String(), stop: func() { cancel(); <-done }}, nil
}
