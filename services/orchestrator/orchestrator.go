// Package orchestrator is the orchestrator service: it owns the agentic loop.
// A run is a durable job, not a connection: its session, transcript, progress
// and events live in the state store, and a replica works on it only while
// there is work to do. It streams model turns into the run's event log,
// dispatches host tool calls to the courier, and suspends (holding no
// goroutine) until the result arrives on any replica, which carries it on.
// Clients start runs and follow their event logs; closing a stream never
// ends a run.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/rpc"
	"nexus.local/services/orchestrator/call"
	"nexus.local/services/orchestrator/hostlink"
	"nexus.local/services/orchestrator/metrics"
	"nexus.local/services/orchestrator/runner"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/sweeper"
)

// ServiceName names this service in logs, traces and metrics.
const ServiceName = "orchestrator"

// minRunLease is the shortest NEXUS_RUN_LEASE accepted.
const minRunLease = time.Second

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
	// ReviewTimeout is how long a script may wait for a person to approve or
	// decline it before the run ends.
	ReviewTimeout time.Duration `env:"NEXUS_REVIEW_TIMEOUT, default=30m"`
	// HostScriptTimeout is how long an automation script may run in the host
	// before the runtime aborts it; a run asks for no more than
	// NEXUS_TOOL_RESULT_TIMEOUT, so it still hears the outcome.
	HostScriptTimeout time.Duration `env:"NEXUS_HOST_SCRIPT_TIMEOUT, default=5m"`
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
	// every replica sweeps for due runs every sixth, so another replica takes
	// the run over within RunLease of the replica's death.
	RunLease time.Duration `env:"NEXUS_RUN_LEASE, default=15s"`
	// DrainTimeout is how long a replica that was told to stop lets its model
	// turns finish before it hands the rest over to other replicas.
	DrainTimeout time.Duration `env:"NEXUS_DRAIN_TIMEOUT, default=20s"`
	// ReplicaID names this replica in run leases; empty means hostname and pid.
	ReplicaID string `env:"NEXUS_REPLICA_ID"`
	// CompactAt is the share of the model's context window the transcript may
	// fill before earlier turns are summarised.
	CompactAt float64 `env:"NEXUS_COMPACT_AT, default=0.8"`
	// MaxTurns bounds the model turns of one run, whatever the tools do.
	MaxTurns int `env:"NEXUS_MAX_TURNS, default=40"`
	// ReviewModelBytes bounds each 3D model a host exports with a script's
	// result for the person's review (the state it leaves, and a
	// preview's state before); 0 asks for none. Two of them and the view
	// must fit the gateway's NEXUS_MAX_TOOL_RESULT_BYTES.
	ReviewModelBytes int64 `env:"NEXUS_REVIEW_MODEL_BYTES, default=6291456"`
	// DevLinkToken, set by nexus dev, is the host token of its own FreeCAD
	// runtime, linked to the local user without pairing.
	DevLinkToken string `env:"NEXUS_DEV_LINK_TOKEN"`
	// History is the run history's database and the retention settings.
	History HistoryConfig
}

// maxReviewModelBytes is the most a host runtime exports as one review
// model (the host kit's cap, hosts/hostkit/gltf.py).
const maxReviewModelBytes = 64 << 20

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
	if c.ReviewModelBytes < 0 || c.ReviewModelBytes > maxReviewModelBytes {
		errs = append(errs, fmt.Errorf("NEXUS_REVIEW_MODEL_BYTES must be between 0 and %d (the host runtime's cap), got %d", maxReviewModelBytes, c.ReviewModelBytes))
	}
	if c.MaxFixRetries < 0 || c.MaxIterations < 0 {
		errs = append(errs, fmt.Errorf("NEXUS_MAX_FIX_RETRIES and NEXUS_MAX_ITERATIONS must not be negative, got %d and %d", c.MaxFixRetries, c.MaxIterations))
	}
	if c.HostScriptTimeout != 0 && (c.HostScriptTimeout < time.Second || c.HostScriptTimeout > time.Hour) {
		errs = append(errs, fmt.Errorf("NEXUS_HOST_SCRIPT_TIMEOUT must be between 1s and 1h (the host runtime's limit), got %s", c.HostScriptTimeout))
	}
	if c.ToolResultTimeout <= 0 {
		errs = append(errs, fmt.Errorf("NEXUS_TOOL_RESULT_TIMEOUT must be positive, got %s", c.ToolResultTimeout))
	}
	if c.ReviewTimeout <= 0 {
		errs = append(errs, fmt.Errorf("NEXUS_REVIEW_TIMEOUT must be positive, got %s", c.ReviewTimeout))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("NEXUS_DRAIN_TIMEOUT must not be negative, got %s", c.DrainTimeout))
	}
	// A lease is renewed every third of it and swept every sixth: below a
	// second the replicas would spend their time renewing.
	if c.RunLease < minRunLease {
		errs = append(errs, fmt.Errorf("NEXUS_RUN_LEASE must be at least %s, got %s", minRunLease, c.RunLease))
	}
	if !(c.CompactAt > 0 && c.CompactAt <= 1) {
		errs = append(errs, fmt.Errorf("NEXUS_COMPACT_AT must be in (0, 1], got %g", c.CompactAt))
	}
	errs = append(errs, c.History.validate())
	return errors.Join(errs...)
}

// Service implements agentv1.OrchestratorServiceServer.
type Service struct {
	agentv1.UnimplementedOrchestratorServiceServer
	env   *app.Env
	cfg   Config
	store state.Store
	// local serves the followers on this replica of the runs its workers
	// write, from memory.
	local *runner.LocalLogs
	// hosts keeps the linked hosts and their delivery logs, in the same
	// store as the rest.
	hosts state.Hosts
	// links is the host links open on this replica, which a call for one
	// of them is handed to as soon as it is in the host's delivery log.
	links *hostlink.Links
	// link serves the host link: pairing, links, the hosts' results.
	link *hostlink.Server
	// documents keeps what each session's host last saved, for download.
	documents state.Documents
	// models keeps the 3D models of each call's result, for review.
	models  state.Models
	history *history
	now     func() time.Time
	replica string

	routerConn *grpc.ClientConn
	capConn    *grpc.ClientConn
	router     modelv1.ModelRouterServiceClient
	capability capabilityv1.CapabilityServiceClient

	health  *health.Server
	peers   peerCache
	metrics *metrics.Metrics

	// workCtx is the context of every worker; it ends, with runner.ErrDraining as
	// its cause, once the drain timeout has passed.
	workCtx  context.Context
	stopWork context.CancelCauseFunc
	// drainCtx ends when the replica is told to stop: followers then move to
	// another replica and workers hand their runs over.
	drainCtx   context.Context
	beginDrain context.CancelFunc
	// drainOnce starts the drain once, whoever asks first (SIGTERM or
	// Close); drainDone is closed when its timer goroutine has ended, and
	// unwatch stops waiting for the process's context.
	drainOnce sync.Once
	drainDone chan struct{}
	unwatch   func() bool
	// mu guards the worker count; idle is closed whenever it drops to zero.
	mu      sync.Mutex
	closed  bool
	workers int
	idle    chan struct{}

	stopSweeper context.CancelFunc
	sweeperDone chan struct{}

	// outbox writes tool call outcomes to the audit log and the history.
	outbox *call.Outbox
	// run is what the replica lends every run it works on.
	run *runner.Deps
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
	m, err := metrics.New(env.Tel.Meter(ServiceName), time.Now)
	if err != nil {
		return nil, fmt.Errorf("orchestrator metrics: %w", err)
	}
	m.TraceTools(env.Tel.Tracer(ServiceName))
	s := &Service{env: env, cfg: cfg, now: time.Now, replica: replica, idle: make(chan struct{}), metrics: m, local: runner.NewLocalLogs(), links: &hostlink.Links{}}
	close(s.idle)
	s.peers.now = s.now
	if s.history, err = openHistory(ctx, env.Log, cfg, s.now); err != nil {
		return nil, err
	}
	// The store's round trips and statements are traced when the spans
	// leave the process (a sampled request's only).
	var storeTracer trace.Tracer
	if env.Tel.Exporting() {
		storeTracer = env.Tel.Tracer(ServiceName)
		s.history.db.TraceStatements()
	}
	store, err := openStore(ctx, cfg, s.history.db, replica, s.now, m.StateStoreFull, storeTracer)
	if err != nil {
		s.history.close()
		return nil, fmt.Errorf("open state store: %w", err)
	}
	s.store = store
	s.hosts = openHosts(store, s.now)
	s.documents = openDocuments(store)
	s.models = openModels(store)
	s.link = &hostlink.Server{Store: store, Hosts: s.hosts, Documents: s.documents, Links: s.links, Log: env.Log, Now: s.now, Submit: s.SubmitToolResult}
	if err := s.link.LinkDevHost(ctx, cfg.DevLinkToken); err != nil {
		store.Close()
		s.history.close()
		return nil, err
	}
	if s.routerConn, err = env.Dial(cfg.ModelRouterAddr, "NEXUS_MODEL_ROUTER_ADDR"); err != nil {
		store.Close()
		s.history.close()
		return nil, fmt.Errorf("model-router at NEXUS_MODEL_ROUTER_ADDR: %w", err)
	}
	if s.capConn, err = env.Dial(cfg.CapabilityAddr, "NEXUS_CAPABILITY_ADDR"); err != nil {
		s.routerConn.Close()
		store.Close()
		s.history.close()
		return nil, fmt.Errorf("capability at NEXUS_CAPABILITY_ADDR: %w", err)
	}
	s.router = modelv1.NewModelRouterServiceClient(s.routerConn)
	s.capability = capabilityv1.NewCapabilityServiceClient(s.capConn)

	base := context.WithoutCancel(ctx)
	s.workCtx, s.stopWork = context.WithCancelCause(base)
	s.drainCtx, s.beginDrain = context.WithCancel(base)
	s.link.Draining = s.drainCtx
	// The process's context ends on SIGTERM: the drain starts then, while
	// the gRPC server still lets followers know where to go.
	s.drainDone = make(chan struct{})
	s.unwatch = context.AfterFunc(ctx, s.drain)

	// Every replica sweeps for due runs; Claim hands each to one of them.
	s.outbox = call.StartOutbox(base, call.OutboxDeps{Store: store, Log: env.Log, Now: s.now, Capability: s.capability, History: s.history.db})
	s.run = &runner.Deps{
		Deps: call.Deps{Store: store, Hosts: s.hosts, Models: s.models, Links: s.links, Capability: s.capability, Metrics: m, Outbox: s.outbox,
			Cfg: cfg.limits(), Propagator: env.Tel.Propagator, Now: s.now},
		Router: s.router, Local: s.local, Log: env.Log, Tracer: env.Tel.Tracer(ServiceName),
		Guidance: s.guidance, ResolveModel: s.resolveModel, RecordRunEnd: s.recordRunEnd, ClearActiveRun: s.clearActiveRun,
		IsDraining: s.isDraining, Wake: s.wake,
	}
	sweepCtx, stopSweeper := context.WithCancel(base)
	s.stopSweeper, s.sweeperDone = stopSweeper, make(chan struct{})
	sw := sweeper.New(store, cfg.RunLease, max(cfg.RunLease/6, time.Millisecond), s.now, env.Log, s.claim)
	go func() {
		defer close(s.sweeperDone)
		_ = sw.Run(sweepCtx)
	}()
	return s, nil
}

// limits are the loop's limits of c.
func (c Config) limits() call.Limits {
	return call.Limits{
		ToolResultTimeout: c.ToolResultTimeout, ReviewTimeout: c.ReviewTimeout, HostScriptTimeout: c.HostScriptTimeout,
		MaxFixRetries: c.MaxFixRetries, MaxIterations: c.MaxIterations, HeavyMaxTokens: c.HeavyMaxTokens, LightMaxTokens: c.LightMaxTokens,
		MaxToolResultChars: c.MaxToolResultChars, RunLease: c.RunLease, CompactAt: c.CompactAt, MaxTurns: c.MaxTurns,
		ReviewModelBytes: c.ReviewModelBytes,
	}
}

// Register adds the service to srv.
func (s *Service) Register(srv *rpc.Server) {
	agentv1.RegisterOrchestratorServiceServer(srv, s)
	orchestratorv1.RegisterRunStreamServiceServer(srv, runStreams{s: s})
	agentv1.RegisterHostLinkServiceServer(srv, s.link)
	s.health = srv.Health
}

// Close drains the replica, then releases the peer connections and the
// state store.
func (s *Service) Close() error {
	s.unwatch()
	s.drain()
	s.mu.Lock()
	s.closed = true
	idle := s.idle
	s.mu.Unlock()
	<-idle
	<-s.drainDone
	s.stopSweeper()
	<-s.sweeperDone
	s.outbox.Close()
	return errors.Join(s.routerConn.Close(), s.capConn.Close(), s.store.Close(), s.history.close())
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
