package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"nexus.local/platform/identity"
	"nexus.local/platform/rpc"
)

// readyInterval is how often a Readier is asked whether it can serve.
const readyInterval = 2 * time.Second

// peerMaxBackoff bounds the wait between attempts to reach a peer.
const peerMaxBackoff = 2 * time.Second

// readyTimeout bounds one readiness check.
const readyTimeout = 2 * time.Second

// UserFacing is a Component that users call directly (the orchestrator, from
// the gateway and from the CLI): it admits user credentials as well as
// service assertions. Other services are only called by services.
type UserFacing interface {
	AcceptsUsers()
}

// Readier is a Component that can tell whether it can serve right now, from
// the dependencies it needs (a store, its peers). Its health follows.
type Readier interface {
	Ready(ctx context.Context) error
}

// ServerOptions are the transport credentials and the authentication of this
// process's gRPC server. users admits user credentials (see UserFacing).
func (e *Env) ServerOptions(ctx context.Context, users bool) ([]grpc.ServerOption, error) {
	var opts []grpc.ServerOption
	if e.TLS.Enabled() {
		// nexus dev's orchestrator is also reached by the CLI, which holds
		// no client certificate; it authenticates by credential instead.
		creds, err := e.TLS.ServerOption(!(users && e.Identity.DevMode))
		if err != nil {
			return nil, err
		}
		opts = append(opts, creds)
	}
	var verifier *identity.Verifier
	if e.Identity.InternalKey != "" {
		v, err := identity.NewVerifier(e.Identity.InternalKey, time.Now)
		if err != nil {
			return nil, err
		}
		verifier = v
	} else if !e.Identity.DevMode {
		return nil, errors.New("NEXUS_INTERNAL_KEY is not set: services check the identity the gateway asserts with it (every service of a deployment shares one secret of at least 32 bytes)")
	}
	var creds *identity.Credentials
	devLoopback := false
	if users {
		c, err := identity.NewCredentials(ctx, e.Identity)
		if err != nil {
			return nil, err
		}
		creds = c
		devLoopback = e.Identity.DevMode && c.Empty()
	}
	auth := identity.NewServerAuth(verifier, creds, devLoopback, e.Log)
	return append(opts, auth.ServerOptions()...), nil
}

// DialOptions are what this process's connections to its peers carry: mutual
// TLS when configured, and an identity assertion on every call.
func (e *Env) DialOptions() ([]grpc.DialOption, error) {
	// A peer that is not up yet, or restarts, is retried within a couple of
	// seconds rather than after gRPC's default backoff of up to two minutes:
	// readiness probes connect early, and a peer that starts a little later
	// must not be shunned for minutes.
	opts := []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: peerMaxBackoff},
		MinConnectTimeout: 5 * time.Second,
	})}
	if e.TLS.Enabled() {
		creds, err := e.TLS.DialOption()
		if err != nil {
			return nil, err
		}
		opts = append(opts, creds)
	}
	if e.Identity.InternalKey != "" {
		s, err := identity.NewSigner(e.Identity.InternalKey, e.Service, time.Now)
		if err != nil {
			return nil, err
		}
		opts = append(opts, s.DialOptions()...)
	}
	return opts, nil
}

// Dial returns the one connection to a peer, with DialOptions. setting names
// the variable addrs came from.
func (e *Env) Dial(addrs, setting string) (*grpc.ClientConn, error) {
	opts, err := e.DialOptions()
	if err != nil {
		return nil, err
	}
	conn, err := rpc.Dial(addrs, e.Tel, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	return conn, nil
}

// watchReady keeps the health of srv in step with r until ctx ends, and logs
// each change with its reason.
func watchReady(ctx context.Context, env *Env, srv *rpc.Server, r Readier, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	serving, first := false, true
	for {
		cctx, cancel := context.WithTimeout(ctx, readyTimeout)
		err := r.Ready(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if ok := err == nil; ok != serving || first {
			serving, first = ok, false
			if ok {
				env.Log.Info("ready")
			} else {
				env.Log.Warn("not ready", "err", err)
			}
			setServing(srv, ok)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// setServing reports srv and every service on it as serving or not.
func setServing(srv *rpc.Server, ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	srv.Health.SetServingStatus("", st)
	for name := range srv.GetServiceInfo() {
		srv.Health.SetServingStatus(name, st)
	}
}
