// Package app holds what every Nexus process does the same way: run until a
// signal, build its logger and telemetry from the environment, and serve a gRPC
// service until its context ends.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"nexus.local/platform/config"
	"nexus.local/platform/identity"
	"nexus.local/platform/logging"
	"nexus.local/platform/rpc"
	"nexus.local/platform/serve"
	"nexus.local/platform/telemetry"
)

// Main runs realMain with a context that ends on SIGINT or SIGTERM, prints its
// error and exits non-zero when it fails. It is all a main function calls.
func Main(realMain func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := realMain(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "nexus:", err)
		os.Exit(1)
	}
}

// Env is what a service needs from its process: a logger, telemetry and the
// environment it was configured from.
type Env struct {
	Service string
	Log     *slog.Logger
	Tel     *telemetry.Telemetry
	Lookup  config.Lookuper
	// Identity is how callers are checked and how this process asserts who
	// it acts for; TLS the certificates of its hops.
	Identity identity.Config
	TLS      rpc.TLSConfig

	internal *internalServer
	grpc     grpcConfig
	// logFile is NEXUS_LOG_FILE opened, closed with the Env.
	logFile *os.File
}

// grpcConfig bounds how long a client keeps one connection to this process.
type grpcConfig struct {
	// MaxConnectionAge makes clients reconnect (and re-resolve their peers)
	// this often, so replicas added by a scale-up get traffic.
	MaxConnectionAge time.Duration `env:"NEXUS_GRPC_MAX_CONNECTION_AGE, default=5m"`
	// MaxConnectionAgeGrace lets streams open at that moment finish.
	MaxConnectionAgeGrace time.Duration `env:"NEXUS_GRPC_MAX_CONNECTION_AGE_GRACE, default=1h"`
}

type envConfig struct {
	Logging   logging.Config
	Telemetry telemetry.Config
	Identity  identity.Config
	TLS       rpc.TLSConfig
	// MetricsAddr is the internal listener for /metrics and /debug/pprof;
	// empty serves neither. Keep it off the public network.
	MetricsAddr string `env:"NEXUS_METRICS_ADDR"`
	GRPC        grpcConfig
}

// Validate checks the settings every process shares, naming each one.
func (c *envConfig) Validate() error {
	var errs []error
	if c.GRPC.MaxConnectionAge <= 0 || c.GRPC.MaxConnectionAgeGrace <= 0 {
		errs = append(errs, fmt.Errorf("NEXUS_GRPC_MAX_CONNECTION_AGE and NEXUS_GRPC_MAX_CONNECTION_AGE_GRACE must be positive, got %s and %s", c.GRPC.MaxConnectionAge, c.GRPC.MaxConnectionAgeGrace))
	}
	return errors.Join(append(errs, c.Logging.Validate(), c.Telemetry.Validate(), c.Identity.Validate(), c.TLS.Validate())...)
}

// NewEnv builds the logger and telemetry of the service named service.
func NewEnv(ctx context.Context, service string, l config.Lookuper) (*Env, error) {
	var cfg envConfig
	if err := config.Load(ctx, l, &cfg); err != nil {
		return nil, err
	}
	tel, err := telemetry.New(ctx, service, cfg.Telemetry)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	w := io.Writer(os.Stderr)
	var logFile *os.File
	if cfg.Logging.File != "" {
		if logFile, err = os.OpenFile(cfg.Logging.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
			_ = tel.Shutdown(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("open the log file NEXUS_LOG_FILE=%s: %w", cfg.Logging.File, err)
		}
		w = logFile
	}
	log := logging.New(w, cfg.Logging).With("service", service)
	env := &Env{Service: service, Log: log, Tel: tel, Lookup: l, Identity: cfg.Identity, TLS: cfg.TLS, grpc: cfg.GRPC, logFile: logFile}
	if cfg.MetricsAddr != "" {
		if env.internal, err = startInternal(logging.WithLogger(ctx, log), cfg.MetricsAddr, tel.InternalHandler()); err != nil {
			_ = tel.Shutdown(context.WithoutCancel(ctx))
			env.closeLog()
			return nil, err
		}
	}
	return env, nil
}

// MetricsAddr is where the internal listener serves, or "" when it is off.
func (e *Env) MetricsAddr() string {
	if e.internal == nil {
		return ""
	}
	return e.internal.addr
}

// Context returns ctx carrying the service's logger.
func (e *Env) Context(ctx context.Context) context.Context {
	return logging.WithLogger(ctx, e.Log)
}

// Close stops the internal listener, flushes telemetry and closes the log file.
func (e *Env) Close(ctx context.Context) error {
	if e.internal != nil {
		e.internal.stop()
	}
	err := e.Tel.Shutdown(context.WithoutCancel(ctx))
	e.closeLog()
	return err
}

func (e *Env) closeLog() {
	if e.logFile != nil {
		_ = e.logFile.Close()
	}
}

// ServeGRPC serves c on lis until ctx ends: over mutual TLS when
// certificates are configured, every call authenticated, reporting SERVING on
// grpc.health.v1 while c is ready.
func ServeGRPC(ctx context.Context, env *Env, lis net.Listener, c Component) error {
	_, users := c.(UserFacing)
	opts, err := env.ServerOptions(ctx, users)
	if err != nil {
		return err
	}
	opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{
		MaxConnectionAge: env.grpc.MaxConnectionAge, MaxConnectionAgeGrace: env.grpc.MaxConnectionAgeGrace,
	}))
	srv := rpc.NewServer(env.Tel, env.Log, opts...)
	c.Register(srv)
	ctx = env.Context(ctx)
	if r, ok := c.(Readier); ok {
		// A component that can say whether it is ready starts NOT_SERVING
		// and is marked SERVING once its first check passes.
		setServing(srv, false)
		go watchReady(ctx, env, srv, r, readyInterval)
	} else {
		srv.MarkServing()
	}
	return serve.GRPC(ctx, lis, srv.Server)
}

// Listen opens a TCP listener on addr and names the setting in its error.
func Listen(addr, setting string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s=%s: %w", setting, addr, err)
	}
	return lis, nil
}

// Component is a gRPC service a process serves.
type Component interface {
	Register(srv *rpc.Server)
	Close() error
}

// Builder builds a Component from its process environment.
type Builder func(ctx context.Context, env *Env) (Component, error)

// RunGRPC serves the component that build returns on addr until ctx ends.
// setting names the variable addr came from, for the error when it is taken.
func RunGRPC(ctx context.Context, l config.Lookuper, service, addr, setting string, build Builder) error {
	lis, err := Listen(addr, setting)
	if err != nil {
		return err
	}
	return ServeGRPCOn(ctx, l, service, lis, build)
}

// ServeGRPCOn serves the component that build returns on lis until ctx ends.
func ServeGRPCOn(ctx context.Context, l config.Lookuper, service string, lis net.Listener, build Builder) error {
	defer lis.Close()
	env, err := NewEnv(ctx, service, l)
	if err != nil {
		return err
	}
	defer env.Close(ctx)
	c, err := build(env.Context(ctx), env)
	if err != nil {
		return fmt.Errorf("%s: %w", service, err)
	}
	defer c.Close()
	return ServeGRPC(ctx, env, lis, c)
}
