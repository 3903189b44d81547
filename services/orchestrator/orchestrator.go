// Package orchestrator is the orchestrator service: it owns the agentic loop.
// A run is one server stream that lives as long as the loop: it streams model
// turns through, dispatches host tool calls to the courier, waits on the
// session's mailbox for their results, and stops when the model answers or a
// limit is reached.
package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/identity"
	"nexus.local/platform/rpc"
	"nexus.local/services/orchestrator/reaper"
	"nexus.local/services/orchestrator/state"
)

// ServiceName names this service in logs, traces and metrics.
const ServiceName = "orchestrator"

// Config configures the orchestrator.
type Config struct {
	// GRPCAddr is where the service listens when it runs alone.
	GRPCAddr string `env:"NEXUS_GRPC_ADDR, default=127.0.0.1:7101"`
	// ModelRouterAddr is the model-router's address (or comma-separated list).
	ModelRouterAddr string `env:"NEXUS_MODEL_ROUTER_ADDR, default=127.0.0.1:7102"`
	// CapabilityAddr is the capability service's address.
	CapabilityAddr string `env:"NEXUS_CAPABILITY_ADDR, default=127.0.0.1:7103"`
	// RedisURL selects the shared state store; empty keeps state in this process.
	RedisURL string `env:"NEXUS_REDIS_URL"`
	// ToolResultTimeout is how long a run waits for a host result. Minutes, not
	// seconds: a desktop application may sit behind a modal dialog.
	ToolResultTimeout time.Duration `env:"NEXUS_TOOL_RESULT_TIMEOUT, default=10m"`
	// MaxFixRetries caps automations that follow one that did not commit.
	MaxFixRetries int `env:"NEXUS_MAX_FIX_RETRIES, default=3"`
	// MaxIterations caps automations that follow one that committed.
	MaxIterations int `env:"NEXUS_MAX_ITERATIONS, default=5"`
	// HeavyMaxTokens is the output budget of a turn that writes a script.
	HeavyMaxTokens int `env:"NEXUS_HEAVY_MAX_TOKENS, default=32000"`
	// LightMaxTokens is the output budget of a turn that only decides.
	LightMaxTokens int `env:"NEXUS_LIGHT_MAX_TOKENS, default=4000"`
	// MaxToolResultChars caps the model's copy of a tool result.
	MaxToolResultChars int `env:"NEXUS_MAX_TOOL_RESULT_CHARS, default=20000"`
	// RunLease bounds how long a run whose replica died goes unnoticed: the
	// lease record lives two thirds of it and is renewed every third, and
	// every replica sweeps for expired leases every sixth, so the run is
	// failed within RunLease of the replica's death.
	RunLease time.Duration `env:"NEXUS_RUN_LEASE, default=15s"`
	// ReplicaID names this replica in run leases; empty means hostname and pid.
	ReplicaID string `env:"NEXUS_REPLICA_ID"`
	// CompactAt is the share of the model's context window the transcript may
	// fill before earlier turns are summarised.
	CompactAt float64 `env:"NEXUS_COMPACT_AT, default=0.8"`
	// MaxTurns bounds the model turns of one run, whatever the tools do.
	MaxTurns int `env:"NEXUS_MAX_TURNS, default=40"`
}

// LoadConfig reads Config from l and checks its limits.
func LoadConfig(ctx context.Context, l config.Lookuper) (Config, error) {
	return config.From[Config](ctx, l)
}

// Validate checks the loop's limits, naming the setting that is off.
func (c *Config) Validate() error {
	var errs []error
	positive := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", name, v))
		}
	}
	positive("NEXUS_HEAVY_MAX_TOKENS", c.HeavyMaxTokens)
	positive("NEXUS_LIGHT_MAX_TOKENS", c.LightMaxTokens)
	positive("NEXUS_MAX_TOOL_RESULT_CHARS", c.MaxToolResultChars)
	positive("NEXUS_MAX_TURNS", c.MaxTurns)
	if c.MaxFixRetries < 0 || c.MaxIterations < 0 {
		errs = append(errs, fmt.Errorf("NEXUS_MAX_FIX_RETRIES and NEXUS_MAX_ITERATIONS must not be negative, got %d and %d", c.MaxFixRetries, c.MaxIterations))
	}
	if c.ToolResultTimeout <= 0 || c.RunLease <= 0 {
		errs = append(errs, fmt.Errorf("NEXUS_TOOL_RESULT_TIMEOUT and NEXUS_RUN_LEASE must be positive, got %s and %s", c.ToolResultTimeout, c.RunLease))
	}
	if c.CompactAt <= 0 || c.CompactAt > 1 {
		errs = append(errs, fmt.Errorf("NEXUS_COMPACT_AT must be in (0, 1], got %g", c.CompactAt))
	}
	return errors.Join(errs...)
}

// Service implements agentv1.OrchestratorServiceServer.
type Service struct {
	agentv1.UnimplementedOrchestratorServiceServer
	env     *app.Env
	cfg     Config
	store   state.Store
	now     func() time.Time
	replica string
	metrics *metrics

	routerConn *grpc.ClientConn
	capConn    *grpc.ClientConn
	router     modelv1.ModelRouterServiceClient
	capability capabilityv1.CapabilityServiceClient

	stopReaper context.CancelFunc
	reaperDone chan struct{}
}

// New dials the model-router and the capability service once, opens the state
// store and returns the service.
func New(ctx context.Context, env *app.Env, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	replica := cfg.ReplicaID
	if replica == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "orchestrator"
		}
		replica = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	m, err := newMetrics(env.Tel.Meter(ServiceName), time.Now)
	if err != nil {
		return nil, fmt.Errorf("orchestrator metrics: %w", err)
	}
	s := &Service{env: env, cfg: cfg, now: time.Now, replica: replica, metrics: m}
	store, err := openStore(ctx, cfg, replica, s.now)
	if err != nil {
		return nil, fmt.Errorf("open state store: %w", err)
	}
	s.store = store
	if s.routerConn, err = rpc.Dial(cfg.ModelRouterAddr, env.Tel); err != nil {
		store.Close()
		return nil, fmt.Errorf("model-router at NEXUS_MODEL_ROUTER_ADDR: %w", err)
	}
	if s.capConn, err = rpc.Dial(cfg.CapabilityAddr, env.Tel); err != nil {
		s.routerConn.Close()
		store.Close()
		return nil, fmt.Errorf("capability at NEXUS_CAPABILITY_ADDR: %w", err)
	}
	s.router = modelv1.NewModelRouterServiceClient(s.routerConn)
	s.capability = capabilityv1.NewCapabilityServiceClient(s.capConn)

	// Every replica sweeps for runs whose replica died; Expired hands each
	// dead run to exactly one of them.
	reapCtx, stopReaper := context.WithCancel(context.WithoutCancel(ctx))
	s.stopReaper, s.reaperDone = stopReaper, make(chan struct{})
	go func() {
		defer close(s.reaperDone)
		_ = reaper.New(store, max(cfg.RunLease/6, time.Millisecond), s.now, env.Log).Run(reapCtx)
	}()
	return s, nil
}

// leaseTTL is how long one renewal keeps a run's lease; see Config.RunLease.
func (c Config) leaseTTL() time.Duration { return c.RunLease * 2 / 3 }

// Register adds the service to srv.
func (s *Service) Register(srv *rpc.Server) { agentv1.RegisterOrchestratorServiceServer(srv, s) }

// Close releases the peer connections and the state store.
func (s *Service) Close() error {
	s.stopReaper()
	<-s.reaperDone
	return errors.Join(s.routerConn.Close(), s.capConn.Close(), s.store.Close())
}

// Run serves the orchestrator alone until ctx ends.
func Run(ctx context.Context, l config.Lookuper) error {
	cfg, err := LoadConfig(ctx, l)
	if err != nil {
		return err
	}
	return app.RunGRPC(ctx, l, ServiceName, cfg.GRPCAddr, "NEXUS_GRPC_ADDR", Builder(cfg))
}

// Builder returns an app.Builder for the service, so a process can serve it
// alone or beside the others (nexus dev).
func Builder(cfg Config) app.Builder {
	return func(ctx context.Context, env *app.Env) (app.Component, error) { return New(ctx, env, cfg) }
}

// newID returns a random id with a readable prefix.
func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// newToken returns a one-time result token.
func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ownedSession returns the caller's session. Someone else's session is
// reported as missing, never as forbidden, so ids cannot be probed.
func (s *Service) ownedSession(ctx context.Context, sessionID string) (*agentv1.Session, error) {
	if sessionID == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	sess, err := s.store.Get(ctx, sessionID)
	if errors.Is(err, state.ErrNotFound) || (err == nil && sess.GetOwner() != identity.FromIncoming(ctx)) {
		return nil, status.Errorf(codes.NotFound, "session %s not found", sessionID)
	}
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "read session %s: %v", sessionID, err)
	}
	return sess, nil
}

// CreateSession checks the host and the model and stores a new session.
func (s *Service) CreateSession(ctx context.Context, req *agentv1.CreateSessionRequest) (*agentv1.Session, error) {
	host := strings.TrimSpace(req.GetHostApp())
	if host == "" {
		return nil, status.Error(codes.InvalidArgument, "host_app is required, e.g. \"freecad\"")
	}
	hosts, err := s.capability.ListHosts(ctx, &capabilityv1.ListHostsRequest{})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "list hosts from the capability service: %v", err)
	}
	var known []string
	found := false
	for _, h := range hosts.GetHosts() {
		known = append(known, h.GetHostApp())
		found = found || h.GetHostApp() == host
	}
	if !found {
		return nil, status.Errorf(codes.InvalidArgument, "unknown host_app %q; known hosts: %s", host, strings.Join(known, ", "))
	}
	model, err := s.resolveModel(ctx, req.GetModel())
	if err != nil {
		return nil, err
	}
	sess := &agentv1.Session{
		SessionId:  newID("s_"),
		HostApp:    host,
		Model:      model.GetId(),
		Owner:      identity.FromIncoming(ctx),
		CreateTime: timestamppb.New(s.now()),
	}
	if err := s.store.Create(ctx, sess); err != nil {
		return nil, status.Errorf(codes.Unavailable, "store session: %v", err)
	}
	return sess, nil
}

// resolveModel finds id in the router's catalog; empty id means the default.
func (s *Service) resolveModel(ctx context.Context, id string) (*modelv1.ModelInfo, error) {
	cat, err := s.router.ListModels(ctx, &modelv1.ListModelsRequest{})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "list models from the model-router: %v", err)
	}
	if id == "" {
		id = cat.GetDefaultModel()
	}
	var ids []string
	for _, m := range cat.GetModels() {
		if m.GetId() == id {
			return m, nil
		}
		ids = append(ids, m.GetId())
	}
	return nil, status.Errorf(codes.InvalidArgument, "unknown model %q; the catalog has: %s", id, strings.Join(ids, ", "))
}

// GetSession returns the caller's session.
func (s *Service) GetSession(ctx context.Context, req *agentv1.GetSessionRequest) (*agentv1.Session, error) {
	return s.ownedSession(ctx, req.GetSessionId())
}

// ListSessions returns the caller's sessions, newest first.
func (s *Service) ListSessions(ctx context.Context, _ *agentv1.ListSessionsRequest) (*agentv1.ListSessionsResponse, error) {
	list, err := s.store.List(ctx, identity.FromIncoming(ctx))
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "list sessions: %v", err)
	}
	return &agentv1.ListSessionsResponse{Sessions: list}, nil
}

// CancelRun signals the session's active run to stop, on whichever replica
// runs it.
func (s *Service) CancelRun(ctx context.Context, req *agentv1.CancelRunRequest) (*agentv1.CancelRunResponse, error) {
	sess, err := s.ownedSession(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	runID := sess.GetActiveRunId()
	if runID == "" {
		return &agentv1.CancelRunResponse{}, nil
	}
	if err := s.store.Cancel(ctx, runID); err != nil {
		return nil, status.Errorf(codes.Unavailable, "cancel run %s: %v", runID, err)
	}
	return &agentv1.CancelRunResponse{RunId: runID}, nil
}

// ListDispatches returns the audit log of the caller's session.
func (s *Service) ListDispatches(ctx context.Context, req *agentv1.ListDispatchesRequest) (*agentv1.ListDispatchesResponse, error) {
	if _, err := s.ownedSession(ctx, req.GetSessionId()); err != nil {
		return nil, err
	}
	resp, err := s.capability.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: req.GetSessionId()})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "list dispatches from the capability service: %v", err)
	}
	return &agentv1.ListDispatchesResponse{Dispatches: resp.GetDispatches()}, nil
}

// ListModels answers with the router's catalog.
func (s *Service) ListModels(ctx context.Context, _ *agentv1.ListModelsRequest) (*agentv1.ListModelsResponse, error) {
	resp, err := s.router.ListModels(ctx, &modelv1.ListModelsRequest{})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "list models from the model-router: %v", err)
	}
	return &agentv1.ListModelsResponse{Models: resp.GetModels(), DefaultModel: resp.GetDefaultModel()}, nil
}

// ListHosts answers with the registered host providers.
func (s *Service) ListHosts(ctx context.Context, _ *agentv1.ListHostsRequest) (*agentv1.ListHostsResponse, error) {
	resp, err := s.capability.ListHosts(ctx, &capabilityv1.ListHostsRequest{})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "list hosts from the capability service: %v", err)
	}
	return &agentv1.ListHostsResponse{Hosts: resp.GetHosts()}, nil
}
